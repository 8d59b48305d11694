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
fn item10_blocks_apply_in_order_against_the_running_result() {
    // Block 2 edits what block 1 wrote; it is recorded at its line in the
    // running text (block 1 turned one line into three).
    let t = tree(&[("a", "a = 1\nb = 2\nc = 3\n")]);
    let sr = b"a\n<<<<<<< SEARCH\na = 1\n=======\n# one\n# two\na = 10\n>>>>>>> REPLACE\n<<<<<<< SEARCH\na = 10\nb = 2\n=======\na = 11\nb = 2\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nc = 3\n=======\nc = 4\n>>>>>>> REPLACE\n";
    let cs = changeset(AgentFormat::SearchReplace, sr, &t).expect("chained");
    assert_eq!(after(&cs, "a"), "# one\n# two\na = 11\nb = 2\nc = 4\n");
    let m = cs.matches(&rp("a"));
    assert_eq!(
        m.iter()
            .map(|m| (m.hunk, m.rung, m.line))
            .collect::<Vec<_>>(),
        vec![
            (1, MatchRung::Exact, 1),
            (2, MatchRung::Exact, 3),
            (3, MatchRung::Exact, 5)
        ]
    );
    // The issue's case: block 1 makes a second `x = 2`, so block 2 is
    // ambiguous in the running text (aider would take the first), refused
    // naming both places, nothing matched against the stale original.
    let t = tree(&[("a", "x = 1\ny = 0\nx = 2\n")]);
    let sr = b"a\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nx = 2\n=======\nx = 3\n>>>>>>> REPLACE\n";
    let e = changeset(AgentFormat::SearchReplace, sr, &t).expect_err("ambiguous");
    assert_eq!(e.code(), ErrorCode::PatchDoesNotApply);
    assert_eq!(e.details()["reason"], "ambiguous");
    assert_eq!(e.details()["hunk"], 2);
    assert_eq!(e.details()["candidates"][0]["line"], 1);
    assert_eq!(e.details()["candidates"][1]["line"], 3);
    // Once block 1 consumed a line, block 2 cannot find it again.
    let t = tree(&[("a", "a\nb\nc\n")]);
    let e = changeset(
        AgentFormat::SearchReplace,
        b"a\n<<<<<<< SEARCH\na\nb\n=======\nx\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nb\nc\n=======\ny\n>>>>>>> REPLACE\n",
        &t,
    )
    .expect_err("consumed");
    assert_eq!(e.details()["reason"], "not_found");
    assert_eq!(e.details()["hunk"], 2);
    // Codex: each hunk is found after the previous one, in the original
    // lines, and recorded at its original line; the same context before
    // the previous hunk does not make it ambiguous.
    let t = tree(&[("a", "f\nx\ng\nx\n")]);
    let cs = changeset(
        AgentFormat::Codex,
        b"*** Begin Patch\n*** Update File: a\n@@\n-g\n+g1\n+g2\n@@\n-x\n+y\n*** End Patch\n",
        &t,
    )
    .expect("forward");
    assert_eq!(after(&cs, "a"), "f\nx\ng1\ng2\ny\n");
    assert_eq!(cs.matches(&rp("a"))[1].line, 4);
    // A Codex hunk before the previous one is not found.
    let e = changeset(
        AgentFormat::Codex,
        b"*** Begin Patch\n*** Update File: a\n@@\n-g\n+h\n@@\n-f\n+e\n*** End Patch\n",
        &t,
    )
    .expect_err("backwards");
    assert_eq!(e.details()["reason"], "not_found");
}

#[test]
fn item9_whitespace_rung_writes_at_the_agents_indentation() {
    // aider's test_replace_part_with_missing_leading_whitespace.
    let t = tree(&[("a", "    line1\n    line2\n    line3\n")]);
    let sr = b"a\n<<<<<<< SEARCH\nline1\nline2\n=======\nnew_line1\nnew_line2\n>>>>>>> REPLACE\n";
    let cs = changeset(AgentFormat::SearchReplace, sr, &t).expect("re-indented");
    assert_eq!(after(&cs, "a"), "    new_line1\n    new_line2\n    line3\n");
    assert_eq!(cs.matches(&rp("a"))[0].rung, MatchRung::Whitespace);
    // Only some of it missing, and more in the replacement: the offset
    // is added to each line; blank lines stay blank.
    let sr = b"a\n<<<<<<< SEARCH\n line1\n line2\n=======\n new_line1\n\n     new_line2\n>>>>>>> REPLACE\n";
    let cs = changeset(AgentFormat::SearchReplace, sr, &t).expect("re-indented");
    assert_eq!(
        after(&cs, "a"),
        "    new_line1\n\n        new_line2\n    line3\n"
    );
    // Varied indentation, uniformly offset.
    let t = tree(&[("a", "    line1\n    line2\n        line3\n    line4\n")]);
    let sr = b"a\n<<<<<<< SEARCH\nline2\n    line3\n=======\nnew_line2\n    new_line3\n>>>>>>> REPLACE\n";
    let cs = changeset(AgentFormat::SearchReplace, sr, &t).expect("re-indented");
    assert_eq!(
        after(&cs, "a"),
        "    line1\n    new_line2\n        new_line3\n    line4\n"
    );
    // Uneven offsets: refused, nothing guessed.
    let t = tree(&[("a", "  p\n      q\n")]);
    let e = changeset(
        AgentFormat::SearchReplace,
        b"a\n<<<<<<< SEARCH\np\nq\n=======\nr\n>>>>>>> REPLACE\n",
        &t,
    )
    .expect_err("uneven");
    assert_eq!(e.code(), ErrorCode::PatchDoesNotApply);
    assert_eq!(e.details()["reason"], "indentation");
    assert_eq!(e.details()["candidates"][0]["line"], 2);
    // Codex: context lines keep the file's bytes, added lines take the
    // offset.
    let t = tree(&[("a", "def f():\n    x = 1\n    return x\n")]);
    let cs = changeset(
        AgentFormat::Codex,
        b"*** Begin Patch\n*** Update File: a\n@@\n-x = 1\n+x = 2\n+y = 3\n return x\n*** End Patch\n",
        &t,
    )
    .expect("re-indented");
    assert_eq!(
        after(&cs, "a"),
        "def f():\n    x = 2\n    y = 3\n    return x\n"
    );
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

#[test]
fn item11_prose_is_refused_and_path_decorations_are_stripped() {
    let t = tree(&[("new.py", "x\n")]);
    // Prose before an empty-SEARCH block used to become a file's name.
    for prose in [
        "Here's the change:",
        "Do this:",
        "Hope you like it!",
        "This edits the file",
    ] {
        let text =
            format!("{prose}\n```python\n<<<<<<< SEARCH\n=======\ncreated\n>>>>>>> REPLACE\n```\n");
        let e = changeset(AgentFormat::SearchReplace, text.as_bytes(), &t)
            .expect_err("prose is not a path");
        assert_eq!(e.code(), ErrorCode::InvalidPatch, "{prose}");
        assert_eq!(e.details()["line"], 1, "{prose}");
        assert_eq!(e.details()["found"], prose, "{prose}");
        assert!(e.message().contains("prose"), "{}", e.message());
    }
    // Prose between blocks is refused too, naming its line.
    let text = "new.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\nHope you like it!\n";
    let e = changeset(AgentFormat::SearchReplace, text.as_bytes(), &t).expect_err("prose");
    assert_eq!(e.details()["line"], 7);
    // The decorations aider strips name the file, not a new one.
    for decorated in [
        "`new.py`",
        "# new.py",
        "new.py:",
        "**new.py**",
        "### `new.py`:",
        "new\\_py.py",
    ] {
        let name = if decorated.contains("\\_") {
            "new_py.py"
        } else {
            "new.py"
        };
        let t = tree(&[(name, "x\n")]);
        let text = format!("{decorated}\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n");
        let cs = changeset(AgentFormat::SearchReplace, text.as_bytes(), &t)
            .unwrap_or_else(|e| panic!("{decorated}: {e}"));
        assert_eq!(cs.files().len(), 1, "{decorated}");
        assert_eq!(after(&cs, name), "y\n", "{decorated}");
    }
    // A `...` line between blocks of one file is a separator, as in aider.
    let text = "new.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n...\n<<<<<<< SEARCH\ny\n=======\nz\n>>>>>>> REPLACE\n";
    let cs = changeset(AgentFormat::SearchReplace, text.as_bytes(), &t).expect("separator");
    assert_eq!(after(&cs, "new.py"), "z\n");
}

/// `lines` distinct lines, and one SEARCH/REPLACE block per `every` lines
/// changing a line (two in three blocks change the line count).
fn many_blocks(lines: usize, every: usize) -> (String, String) {
    let file: String = (0..lines).map(|i| format!("line {i}\n")).collect();
    let mut text = String::from("big\n");
    for i in (0..lines).step_by(every) {
        let replace = match i % 3 {
            0 => format!("line {i} edited\n"),
            1 => format!("line {i} edited\nline {i} added\n"),
            _ => String::new(),
        };
        text.push_str(&format!(
            "<<<<<<< SEARCH\nline {i}\n=======\n{replace}>>>>>>> REPLACE\n"
        ));
    }
    (file, text)
}

#[test]
fn item13_placement_work_is_near_linear_and_bounded() {
    // 5,000 blocks on a 50,000-line file: the work counted (lines indexed,
    // walked and compared) stays within a small multiple of the lines plus
    // the blocks, where a scan per block would count 250 million.
    let (file, text) = many_blocks(50_000, 10);
    let ops = parse::search_replace(&text).expect("parses");
    let FileOp::Update { path, hunks, .. } = &ops[0] else {
        panic!("an update");
    };
    assert_eq!(hunks.len(), 5_000);
    let mut work = Work::new(PLACEMENT_WORK_LIMIT);
    let (data, found) = apply_hunks(
        path,
        file.as_bytes(),
        hunks,
        AgentFormat::SearchReplace,
        &mut work,
    )
    .expect("applies");
    assert!(
        work.spent <= 4 * (50_000 + 5_000),
        "spent {} units",
        work.spent
    );
    // Truthful places in the running text: block k (0-based) is at the
    // original line 10k, shifted by what the blocks before it added and
    // removed (+1, 0, −1 per three blocks).
    for (k, m) in found.iter().enumerate() {
        let i = 10 * k;
        let shift: isize = (0..k).map(|j| [0, 1, -1][(10 * j) % 3]).sum();
        assert_eq!(m.line as isize, i as isize + 1 + shift, "block {}", k + 1);
    }
    assert!(String::from_utf8(data)
        .expect("utf-8")
        .starts_with("line 0 edited\nline 1\n"));
    // Hunks that start with a line found everywhere (a blank line, every
    // other line of the file) are placed by their rarest line instead.
    let sparse: String = (0..25_000).map(|i| format!("\nline {i}\n")).collect();
    let ops = parse::codex(&format!(
        "*** Begin Patch\n*** Update File: big\n{}*** End Patch\n",
        (0..25_000)
            .step_by(5)
            .map(|i| format!("@@\n \n-line {i}\n+line {i} edited\n"))
            .collect::<String>()
    ))
    .expect("parses");
    let FileOp::Update { hunks: blank, .. } = &ops[0] else {
        panic!("an update");
    };
    let mut work = Work::new(PLACEMENT_WORK_LIMIT);
    apply_hunks(
        path,
        sparse.as_bytes(),
        blank,
        AgentFormat::Codex,
        &mut work,
    )
    .expect("applies");
    assert!(
        work.spent <= 4 * (50_000 + 2 * 5_000),
        "spent {} units",
        work.spent
    );
    // Past the budget the change is refused with a stable reason.
    let mut work = Work::new(10_000);
    let e = apply_hunks(
        path,
        file.as_bytes(),
        hunks,
        AgentFormat::SearchReplace,
        &mut work,
    )
    .expect_err("over the limit");
    assert_eq!(e.code(), ErrorCode::PatchDoesNotApply);
    assert_eq!(e.details()["reason"], "work_limit");
    // The same through the public entry point.
    let t = tree(&[("big", &file)]);
    let cs = changeset(AgentFormat::SearchReplace, text.as_bytes(), &t).expect("applies");
    assert_eq!(cs.matches(&rp("big")).len(), 5_000);
}

#[test]
fn item10_codex_seeks_after_a_pure_insertion() {
    // Hunk 1 inserts after the anchor `b`; hunk 2's `x` is sought after
    // that place, so the `x` before it is not a candidate.
    let t = tree(&[("a", "x\nb\nx\n")]);
    let cs = changeset(
        AgentFormat::Codex,
        b"*** Begin Patch\n*** Update File: a\n@@ b\n+new\n@@\n-x\n+y\n*** End Patch\n",
        &t,
    )
    .expect("applies");
    assert_eq!(after(&cs, "a"), "x\nb\nnew\ny\n");
    assert_eq!(
        cs.matches(&rp("a"))
            .iter()
            .map(|m| m.line)
            .collect::<Vec<_>>(),
        vec![3, 3]
    );
}
