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

fn codex_ok(t: &BTreeMap<Vec<u8>, TreeFile>, text: &str) -> Changeset {
    changeset(AgentFormat::Codex, text.as_bytes(), t).expect("applies")
}

fn codex_err(t: &BTreeMap<Vec<u8>, TreeFile>, text: &str) -> AgentEditError {
    changeset(AgentFormat::Codex, text.as_bytes(), t).expect_err("refused")
}

#[test]
fn item12_codex_leniencies_heredoc_wrapper_is_unwrapped() {
    let t = tree(&[("a", "x\n")]);
    let envelope = "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n*** End Patch";
    for opener in [
        "<<EOF",
        "<<'EOF'",
        "<<\"EOF\"",
        "apply_patch <<'EOF'",
        "apply_patch <<EOF",
        "  apply_patch  <<\"EOF\"  ",
    ] {
        let cs = codex_ok(&t, &format!("{opener}\n{envelope}\nEOF\n"));
        assert_eq!(after(&cs, "a"), "y\n", "{opener}");
    }
    // Anything else around the envelope is still refused, with its line.
    for (text, line) in [
        (format!("<<\"EOF'\n{envelope}\nEOF\n"), 1),
        (format!("cat <<'EOF'\n{envelope}\nEOF\n"), 1),
        (format!("apply_patch <<'PATCH'\n{envelope}\nPATCH\n"), 1),
        (format!("<<'EOF'\n{envelope}\n"), 1),
        (format!("<<'EOF'\n{envelope}\nEOF\ntrailing\n"), 1),
        (
            "<<EOF\n*** Begin Patch\n*** Update File: a\nEOF\n".to_owned(),
            3,
        ),
        ("<<EOF\nEOF\n".to_owned(), 2),
    ] {
        let e = codex_err(&t, &text);
        assert_eq!(e.code(), ErrorCode::InvalidPatch, "{text:?}");
        assert_eq!(e.details()["line"], line, "{text:?}: {e}");
    }
}

#[test]
fn item12_codex_leniencies_padded_markers_and_blank_lines() {
    let t = tree(&[("a", "1\n2\n3\n4\n5\n"), ("b", "b\n")]);
    let text = "  *** Begin Patch  \n\
                \t*** Update File: a \n\
                \n\
                @@\n 1\n-2\n+two\n\
                \n\
                \n\
                @@\n 4\n-5\n+five\n*** End of File\n\
                \n\
                   *** Delete File: b\n\
                \n\
                *** End Patch\t\n";
    let cs = codex_ok(&t, text);
    assert_eq!(after(&cs, "a"), "1\ntwo\n3\n4\nfive\n");
    assert!(cs
        .files()
        .iter()
        .any(|f| f.path.as_str() == "b" && f.after.is_none()));
    // The blank lines after hunk 1 are its empty context lines, which the
    // file does not have: dropped when placing it, at the exact rung.
    assert_eq!(cs.matches(&rp("a"))[0].rung, MatchRung::Exact);
    assert_eq!(cs.matches(&rp("a"))[1].line, 4);
}

#[test]
fn item12_codex_leniencies_trailing_blank_context_line() {
    // The file has the blank line: it is matched and kept.
    let t = tree(&[("a", "x\ny\n\nx\ny\nz\n")]);
    let cs = codex_ok(
        &t,
        "*** Begin Patch\n*** Update File: a\n@@\n x\n-y\n+Y\n\n*** End Patch\n",
    );
    assert_eq!(after(&cs, "a"), "x\nY\n\nx\ny\nz\n");
    // It does not: the lines are placed without it, and nothing is lost.
    let t = tree(&[("a", "x\ny\nz\n")]);
    let cs = codex_ok(
        &t,
        "*** Begin Patch\n*** Update File: a\n@@\n-y\n+Y\n\n*** End Patch\n",
    );
    assert_eq!(after(&cs, "a"), "x\nY\nz\n");
    // Without it the lines are ambiguous: refused at that rung, not guessed.
    let t = tree(&[("a", "y\n1\ny\n2\n")]);
    let e = codex_err(
        &t,
        "*** Begin Patch\n*** Update File: a\n@@\n-y\n+Y\n\n*** End Patch\n",
    );
    assert_eq!(e.code(), ErrorCode::PatchDoesNotApply);
    assert_eq!(e.details()["reason"], "ambiguous");
    // Nowhere with or without it: the refusal is about the lines as written.
    let e = codex_err(
        &t,
        "*** Begin Patch\n*** Update File: a\n@@\n-q\n+Q\n\n*** End Patch\n",
    );
    assert_eq!(e.details()["reason"], "not_found");
    assert_eq!(e.details()["hunk"], 1);
    // A blank line that is removed ("-") is never optional.
    let t = tree(&[("a", "x\ny\n")]);
    let e = codex_err(
        &t,
        "*** Begin Patch\n*** Update File: a\n@@\n-y\n-\n+Y\n*** End Patch\n",
    );
    assert_eq!(e.details()["reason"], "not_found");
}

#[test]
fn item12_codex_leniencies_pure_addition_appends_at_end() {
    for (before, want) in [
        ("a\nb\n", "a\nb\nc\nd\n"),
        ("a\r\nb\r\n", "a\r\nb\r\nc\r\nd\r\n"),
        ("a\nb", "a\nb\nc\nd"),
        ("", "c\nd\n"),
    ] {
        let t = tree(&[("f", before)]);
        let cs = codex_ok(
            &t,
            "*** Begin Patch\n*** Update File: f\n@@\n+c\n+d\n*** End Patch\n",
        );
        assert_eq!(after(&cs, "f"), want, "{before:?}");
        let m = cs.matches(&rp("f"))[0];
        assert_eq!(
            (m.rung, m.line as usize),
            (MatchRung::Exact, split_lines(before.as_bytes()).len() + 1)
        );
    }
    // After an anchor it still goes right after the anchor.
    let t = tree(&[("f", "fn a() {\n}\nfn b() {\n}\n")]);
    let cs = codex_ok(
        &t,
        "*** Begin Patch\n*** Update File: f\n@@ fn a() {\n+    x();\n*** End Patch\n",
    );
    assert_eq!(after(&cs, "f"), "fn a() {\n    x();\n}\nfn b() {\n}\n");
}

#[test]
fn item12_unicode_punctuation_rung_is_recorded() {
    // Typographic dash, quotes and a no-break space in the file; the hunk
    // is plain ASCII.
    let file = "say(\u{201C}it\u{2019}s\u{201D})\nx \u{2013} y\u{00A0}z\nend\n";
    let t = tree(&[("a", file)]);
    let cs = codex_ok(
        &t,
        "*** Begin Patch\n*** Update File: a\n@@\n say(\"it's\")\n-x - y z\n+x = y\n*** End Patch\n",
    );
    // The context line keeps the file's own bytes.
    assert_eq!(
        after(&cs, "a"),
        "say(\u{201C}it\u{2019}s\u{201D})\nx = y\nend\n"
    );
    assert_eq!(cs.matches(&rp("a"))[0].rung, MatchRung::UnicodePunctuation);
    assert_eq!(
        MatchRung::UnicodePunctuation.as_str(),
        "unicode_punctuation"
    );
    assert_eq!(
        serde_json::to_value(MatchRung::UnicodePunctuation).expect("json"),
        "unicode_punctuation"
    );
    // A stricter rung wins when it finds the line.
    let t = tree(&[("a", "x - y\nx \u{2013} y\n")]);
    let cs = codex_ok(
        &t,
        "*** Begin Patch\n*** Update File: a\n@@\n-x - y\n+q\n*** End Patch\n",
    );
    assert_eq!(after(&cs, "a"), "q\nx \u{2013} y\n");
    assert_eq!(cs.matches(&rp("a"))[0].rung, MatchRung::Exact);
    // Two places at the rung: ambiguous, refused.
    let t = tree(&[("a", "x \u{2013} y\nx \u{2014} y\n")]);
    let e = codex_err(
        &t,
        "*** Begin Patch\n*** Update File: a\n@@\n-x - y\n+q\n*** End Patch\n",
    );
    assert_eq!(e.details()["reason"], "ambiguous");
    assert_eq!(e.details()["rung"], "unicode_punctuation");
    // Other characters are not folded.
    let t = tree(&[("a", "x \u{2026} y\n")]);
    let e = codex_err(
        &t,
        "*** Begin Patch\n*** Update File: a\n@@\n-x ... y\n+q\n*** End Patch\n",
    );
    assert_eq!(e.details()["reason"], "not_found");
}

#[test]
fn item12_add_file_over_an_existing_file_stays_refused() {
    let t = tree(&[("a", "old\n")]);
    let e = codex_err(
        &t,
        "*** Begin Patch\n*** Add File: a\n+new\n*** End Patch\n",
    );
    assert_eq!(e.code(), ErrorCode::PreconditionFailed);
    assert_eq!(e.details()["path"], "a");
    assert_eq!(e.details()["expected"], "absent");
}
