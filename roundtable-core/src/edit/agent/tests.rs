//! Unit tests of the ladder and the two grammars over in-memory trees.

use super::*;
use std::collections::BTreeMap;

fn tree(files: &[(&str, &str)]) -> BTreeMap<Vec<u8>, TreeFile> {
    files
        .iter()
        .map(|(p, c)| {
            (
                p.as_bytes().to_vec(),
                TreeFile::regular(c.as_bytes().to_vec()),
            )
        })
        .collect()
}

fn after(cs: &Changeset, path: &str) -> String {
    let f = cs
        .files()
        .iter()
        .find(|f| f.path.as_str() == path)
        .expect("the path is changed");
    String::from_utf8(f.after.as_ref().expect("a result").data.clone()).expect("utf-8")
}

fn rp(p: &str) -> RepoPath {
    RepoPath::from_bytes(p.as_bytes()).expect("a path")
}

#[test]
fn each_rung_is_taken_only_when_the_stricter_ones_find_nothing() {
    let t = tree(&[("a", "x = 1\n  y = 2   \nz\n")]);
    let cs = changeset(
        AgentFormat::Codex,
        b"*** Begin Patch\n*** Update File: a\n@@\n-x = 1\n+x = 3\n*** End Patch\n",
        &t,
    )
    .expect("exact");
    assert_eq!(cs.matches(&rp("a"))[0].rung, MatchRung::Exact);
    let cs = changeset(
        AgentFormat::Codex,
        b"*** Begin Patch\n*** Update File: a\n@@\n-  y = 2\n+  y = 4\n*** End Patch\n",
        &t,
    )
    .expect("trailing");
    assert_eq!(cs.matches(&rp("a"))[0].rung, MatchRung::TrailingWhitespace);
    assert_eq!(after(&cs, "a"), "x = 1\n  y = 4\nz\n");
    let cs = changeset(
        AgentFormat::Codex,
        b"*** Begin Patch\n*** Update File: a\n@@\n-y  =  2\n+y = 5\n*** End Patch\n",
        &t,
    )
    .expect("whitespace");
    assert_eq!(cs.matches(&rp("a"))[0].rung, MatchRung::Whitespace);
    assert_eq!(cs.matches(&rp("a"))[0].line, 2);
}

#[test]
fn an_ambiguous_match_names_every_candidate_line() {
    let t = tree(&[("a", "a\nb\na\n")]);
    let e = changeset(
        AgentFormat::SearchReplace,
        b"a\n<<<<<<< SEARCH\na\n=======\nc\n>>>>>>> REPLACE\n",
        &t,
    )
    .expect_err("ambiguous");
    assert_eq!(e.code(), ErrorCode::PatchDoesNotApply);
    assert_eq!(e.details()["reason"], "ambiguous");
    assert_eq!(e.details()["hunk"], 1);
    assert_eq!(e.details()["candidates"][0]["line"], 1);
    assert_eq!(e.details()["candidates"][1]["line"], 3);
}

#[test]
fn crlf_and_missing_final_newline_are_kept() {
    let t = tree(&[("a", "one\r\ntwo\r\nthree")]);
    let cs = changeset(
        AgentFormat::Codex,
        b"*** Begin Patch\n*** Update File: a\n@@\n two\n-three\n+3\n+4\n*** End of File\n*** End Patch\n",
        &t,
    )
    .expect("applies");
    assert_eq!(after(&cs, "a"), "one\r\ntwo\r\n3\r\n4");
}

#[test]
fn overlapping_hunks_are_refused() {
    let t = tree(&[("a", "a\nb\nc\n")]);
    let e = changeset(
        AgentFormat::SearchReplace,
        b"a\n<<<<<<< SEARCH\na\nb\n=======\nx\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nb\nc\n=======\ny\n>>>>>>> REPLACE\n",
        &t,
    )
    .expect_err("overlap");
    assert_eq!(e.details()["reason"], "overlap");
}

#[test]
fn a_repetitive_file_costs_lines_not_lines_times_hunk() {
    // 200k identical lines and a hunk of 20k of them: a line-by-line
    // search would make billions of comparisons.
    let file = "x\n".repeat(200_000);
    let t = tree(&[("big", &file)]);
    let mut search = "x\n".repeat(20_000);
    let started = std::time::Instant::now();
    let block = format!("big\n<<<<<<< SEARCH\n{search}=======\ny\n>>>>>>> REPLACE\n");
    let e = changeset(AgentFormat::SearchReplace, block.as_bytes(), &t).expect_err("ambiguous");
    assert_eq!(e.details()["reason"], "ambiguous");
    assert_eq!(e.details()["count"], 180_001);
    search.push_str("z\n");
    let block = format!("big\n<<<<<<< SEARCH\n{search}=======\ny\n>>>>>>> REPLACE\n");
    let e = changeset(AgentFormat::SearchReplace, block.as_bytes(), &t).expect_err("missing");
    assert_eq!(e.details()["reason"], "not_found");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}
