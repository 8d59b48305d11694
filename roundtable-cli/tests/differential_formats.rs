//! Differential cases for what real history sends and the random
//! generator of `differential.rs` never writes: multi-mail
//! `git format-patch --stdout` mboxes (with and without signatures),
//! `git log -p`, GNU `diff -ruN`/`-Naur` of directory trees (epoch
//! timestamps for created and deleted files, names with tabs and spaces,
//! timestamps after spaces), `svn diff` and `hg export` headers, swapped
//! and cyclic renames from `git diff -M -B`, and what git refuses
//! (`b//etc/x`, a hunk outside any section).
//!
//! Each case is applied by `git apply` and `roundtable patch apply` to the
//! same tree through [`differential_with`]; the two must agree, and the
//! case states what git does (applies, giving a known tree, or refuses).

use super::differential::{
    differential_with, lossy, run, transition, tree_diff, File, Scratch, Tree,
};
use std::fs;
use std::path::Path;
use std::process::Command;

fn file(data: &str) -> File {
    File {
        data: data.as_bytes().to_vec(),
        exec: false,
        link: false,
    }
}

fn tree(files: &[(&str, &str)]) -> Tree {
    files
        .iter()
        .map(|(p, d)| (p.as_bytes().to_vec(), file(d)))
        .collect()
}

/// What git does with a case.
enum Want<'a> {
    /// Applies, leaving exactly this tree.
    Applies(&'a Tree),
    /// Refuses; roundtable refuses with this code.
    Refused(&'a str),
}

/// Apply `patch` to `target` with both tools at strip level `strip`.
fn case(
    scratch: &Scratch,
    name: &str,
    target: &Tree,
    patch: &[u8],
    strip: usize,
    want: Want<'_>,
) -> Result<(), String> {
    let work = scratch.trial_dir();
    let patch_file = work.path().join("patch.diff");
    fs::write(&patch_file, patch).map_err(|e| e.to_string())?;
    let fail = |e: String| format!("{name}: {e}\npatch:\n{}", lossy(patch));
    let applied = differential_with(scratch, work.path(), &patch_file, target, strip, false, &[])
        .map_err(fail)?;
    match (want, &applied.refusal) {
        (Want::Applies(tree), None) if applied.after == *tree => Ok(()),
        (Want::Applies(tree), None) => Err(fail(format!(
            "both applied, not giving the expected tree\n{}",
            tree_diff("applied", &applied.after, "expected", tree)
        ))),
        (Want::Applies(_), Some(code)) => Err(fail(format!("both refused ({code})"))),
        (Want::Refused(want), Some(code)) if code == want => Ok(()),
        (Want::Refused(want), Some(code)) => Err(fail(format!("refused with {code}, not {want}"))),
        (Want::Refused(_), None) => Err(fail("both applied; git was expected to refuse".into())),
    }
}

/// A repository in `dir` whose commits are `trees`, in order; returns the
/// commit ids.
fn history(scratch: &Scratch, dir: &Path, trees: &[Tree]) -> Result<Vec<String>, String> {
    let git = |args: &[&str]| -> Result<Vec<u8>, String> {
        super::differential::run_ok(scratch.git(dir).args(args))
    };
    fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    git(&["init", "-q"])?;
    let mut ids = Vec::new();
    let mut previous = Tree::new();
    for (i, t) in trees.iter().enumerate() {
        transition(dir, &previous, t)?;
        git(&["add", "-A"])?;
        git(&[
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            &format!("commit {i}\n\nbody line\n--\nnot a signature\n"),
        ])?;
        ids.push(lossy(&git(&["rev-parse", "HEAD"])?).trim().to_string());
        previous = t.clone();
    }
    Ok(ids)
}

fn lines(tag: &str, n: usize) -> String {
    (1..=n).map(|i| format!("{tag} line {i}\n")).collect()
}

fn mails_and_logs(scratch: &Scratch) -> Result<(), String> {
    let t0 = tree(&[
        ("one", &lines("one", 8)),
        ("two", &lines("two", 8)),
        ("dir/three", &lines("three", 8)),
        ("six", &lines("six", 3)),
    ]);
    let mut t1 = t0.clone();
    t1.insert(
        b"one".to_vec(),
        file(&lines("one", 8).replace("one line 2\n", "ONE 2\n")),
    );
    t1.insert(b"four".to_vec(), file("four\n-- \nnot a signature\n"));
    let mut t2 = t1.clone();
    t2.insert(
        b"one".to_vec(),
        file(
            &lines("one", 8)
                .replace("one line 2\n", "ONE 2\n")
                .replace("one line 7\n", "ONE 7\n"),
        ),
    );
    let two = t2.remove(b"two".as_slice()).ok_or("two")?;
    t2.insert(b"five".to_vec(), two);
    if let Some(f) = t2.get_mut(b"dir/three".as_slice()) {
        f.exec = true;
    }
    // (Not `four`: a file one mail creates and a later one deletes is
    // left in place by git, which writes every non-deleted result after
    // all removals; roundtable does the same, but that is no test of
    // signatures.)
    let mut t3 = t2.clone();
    t3.remove(b"six".as_slice());
    t3.insert(b"four".to_vec(), file("four\n-- \nstill not a signature\n"));
    t3.insert(
        b"blob.bin".to_vec(),
        File {
            data: (0..=255u8).cycle().take(700).collect(),
            exec: false,
            link: false,
        },
    );
    let work = scratch.trial_dir();
    let repo = work.path().join("repo");
    let ids = history(scratch, &repo, &[t0.clone(), t1, t2, t3.clone()])?;
    let range = format!("{}..{}", ids[0], ids[3]);
    let out = |args: &[&str]| super::differential::run_ok(scratch.git(&repo).args(args));
    let variants: Vec<(&str, Vec<u8>)> = vec![
        (
            "format-patch --stdout (three mails, signatures)",
            out(&["format-patch", "--stdout", "-M", &range])?,
        ),
        (
            "format-patch --stdout --no-signature",
            out(&["format-patch", "--stdout", "-M", "--no-signature", &range])?,
        ),
        (
            "format-patch --stdout --signature (multi-line)",
            out(&[
                "format-patch",
                "--stdout",
                "-M",
                "--signature=line one\n-- \nline three",
                &range,
            ])?,
        ),
        (
            "format-patch --stdout --cover-letter",
            out(&["format-patch", "--stdout", "-M", "--cover-letter", &range])?,
        ),
        (
            "git log -p --reverse",
            out(&["log", "-p", "--reverse", "-M", "--binary", &range])?,
        ),
    ];
    for (name, patch) in &variants {
        if patch.windows(11).filter(|w| w == b"diff --git ").count() < 5 {
            return Err(format!("harness: {name} has too few sections"));
        }
        case(scratch, name, &t0, patch, 1, Want::Applies(&t3))?;
    }
    // A hunk after a signature with no file header: git refuses.
    let mut stray = variants[0].1.clone();
    stray.extend_from_slice(b"@@ -1 +1 @@\n-one line 1\n+x\n");
    case(
        scratch,
        "stray hunk after the last mail",
        &t0,
        &stray,
        1,
        Want::Refused("invalid_patch"),
    )
}

fn gnu_diff(scratch: &Scratch) -> Result<(), String> {
    let a = tree(&[
        ("one", &lines("one", 6)),
        ("gone", "gone\n"),
        ("sub/deep/keep", &lines("keep", 3)),
        ("post\timage.txt", "tab\n"),
        ("with space.txt", "space\n"),
    ]);
    let mut b = a.clone();
    b.insert(
        b"one".to_vec(),
        file(&lines("one", 6).replace("one line 3\n", "three\n")),
    );
    b.remove(b"gone".as_slice());
    b.insert(b"sub/new".to_vec(), file("new\nfile\n"));
    b.insert(b"post\timage.txt".to_vec(), file("tab\nmore\n"));
    b.insert(b"with space.txt".to_vec(), file("space\nmore\n"));
    b.insert(
        b"sub/deep/keep".to_vec(),
        file(&lines("keep", 3).replace("keep line 1\n", "")),
    );
    let work = scratch.trial_dir();
    super::differential::write_tree(&work.path().join("a"), &a)?;
    super::differential::write_tree(&work.path().join("b"), &b)?;
    // `diff -ru` (no -N) and a binary file: git applies what it can and
    // skips the rest; roundtable refuses the patch whole.
    let mut binary_a = a.clone();
    binary_a.insert(
        b"blob.bin".to_vec(),
        File {
            data: b"\0a".to_vec(),
            exec: false,
            link: false,
        },
    );
    let mut binary_b = b.clone();
    binary_b.insert(
        b"blob.bin".to_vec(),
        File {
            data: b"\0b".to_vec(),
            exec: false,
            link: false,
        },
    );
    super::differential::write_tree(&work.path().join("c"), &binary_a)?;
    super::differential::write_tree(&work.path().join("d"), &binary_b)?;
    let out = run(Command::new("diff")
        .args(["-ru", "c", "d"])
        .current_dir(work.path())
        .env("LC_ALL", "C"))?;
    let text = lossy(&out.stdout);
    if !text.contains("Only in") || !text.contains("Binary files") {
        return Err(format!("harness: diff -ru wrote\n{text}"));
    }
    case(
        scratch,
        "diff -ru with Only in and Binary files lines",
        &binary_a,
        text.as_bytes(),
        1,
        Want::Refused("unsupported_patch"),
    )?;
    for (flags, tz) in [
        ("-ruN", "UTC"),
        ("-Naur", "America/New_York"),
        ("-ruN", "Asia/Kolkata"),
    ] {
        let out = run(Command::new("diff")
            .args([flags, "a", "b"])
            .current_dir(work.path())
            .env("TZ", tz)
            .env("LC_ALL", "C"))?;
        if out.status.code() != Some(1) {
            return Err(format!(
                "harness: diff {flags} failed: {}",
                lossy(&out.stderr)
            ));
        }
        let patch = lossy(&out.stdout);
        let name = format!("diff {flags} (TZ={tz})");
        case(scratch, &name, &a, patch.as_bytes(), 1, Want::Applies(&b))?;
        // Older diffs write a name with a tab unquoted; git takes all
        // before the timestamp as the name.
        let unquoted = patch
            .replace("\"a/post\\timage.txt\"", "a/post\timage.txt")
            .replace("\"b/post\\timage.txt\"", "b/post\timage.txt");
        case(
            scratch,
            &format!("{name}, tab name unquoted"),
            &a,
            unquoted.as_bytes(),
            1,
            Want::Applies(&b),
        )?;
        // Whitespace damage: timestamps after spaces instead of a tab.
        let spaced: String = unquoted
            .lines()
            .map(|l| {
                if l.starts_with("--- ") || l.starts_with("+++ ") {
                    match l.rfind('\t') {
                        Some(i) => format!("{}  {}\n", &l[..i], &l[i + 1..]),
                        None => format!("{l}\n"),
                    }
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        // Without a tab, git does not look for the epoch timestamp: the
        // deleted file is emptied, not removed (the new one is still
        // created, from a hunk that only adds).
        let mut emptied = b.clone();
        emptied.insert(b"gone".to_vec(), file(""));
        case(
            scratch,
            &format!("{name}, timestamps after spaces"),
            &a,
            spaced.as_bytes(),
            1,
            Want::Applies(&emptied),
        )?;
    }
    Ok(())
}

fn svn_and_hg(scratch: &Scratch) -> Result<(), String> {
    let a = tree(&[("one", "a\nb\n"), ("dir/two", "c\n")]);
    let b = tree(&[("one", "a\nB\n"), ("dir/two", "c\nd\n")]);
    let svn = "Index: one
===================================================================
--- one\t(revision 1)
+++ one\t(working copy)
@@ -1,2 +1,2 @@
 a
-b
+B
Index: dir/two
===================================================================
--- dir/two\t(revision 1)
+++ dir/two\t(working copy)
@@ -1 +1,2 @@
 c
+d
";
    case(
        scratch,
        "svn diff",
        &a,
        svn.as_bytes(),
        0,
        Want::Applies(&b),
    )?;
    let hg = "# HG changeset patch
# User x <x@y>
# Date 0 0
#      Thu Jan 01 00:00:00 1970 +0000
# Node ID 1111111111111111111111111111111111111111
# Parent  0000000000000000000000000000000000000000
change two files

diff -r 000000000000 -r 111111111111 one
--- a/one\tThu Jan 01 00:00:00 1970 +0000
+++ b/one\tThu Jan 01 00:00:00 1970 +0000
@@ -1,2 +1,2 @@
 a
-b
+B
diff -r 000000000000 -r 111111111111 dir/two
--- a/dir/two\tThu Jan 01 00:00:00 1970 +0000
+++ b/dir/two\tThu Jan 01 00:00:00 1970 +0000
@@ -1 +1,2 @@
 c
+d
";
    case(
        scratch,
        "hg export",
        &a,
        hg.as_bytes(),
        1,
        Want::Applies(&b),
    )
}

fn swaps_and_cycles(scratch: &Scratch) -> Result<(), String> {
    // Contents that share no line, so that -B breaks every pair (and
    // over the 400 bytes below which git does not break a file).
    let content = |tag: &str| -> String {
        (1..=40)
            .map(|i| format!("{}{i}\n", tag.repeat(4)))
            .collect()
    };
    let t0 = tree(&[
        ("a", &content("alpha")),
        ("b", &content("beta")),
        ("c", &content("gamma")),
        ("d", &content("delta")),
        ("e", &content("epsilon")),
    ]);
    // a and b swapped; c -> d -> e -> c.
    let t1 = tree(&[
        ("a", &content("beta")),
        ("b", &content("alpha")),
        ("c", &content("epsilon")),
        ("d", &content("gamma")),
        (
            "e",
            &content("delta").replace("deltadeltadeltadelta5\n", "changed\n"),
        ),
    ]);
    let work = scratch.trial_dir();
    let repo = work.path().join("repo");
    let ids = history(scratch, &repo, &[t0.clone(), t1.clone()])?;
    for flags in [
        &["-M", "-B"][..],
        &["-M", "-C", "-B", "--binary", "--full-index"],
    ] {
        let patch = super::differential::run_ok(
            scratch
                .git(&repo)
                .arg("diff")
                .args(flags)
                .args([&ids[0], &ids[1]]),
        )?;
        if lossy(&patch).matches("rename from").count() < 5 {
            return Err(format!(
                "harness: git diff {flags:?} did not write five renames\n{}",
                lossy(&patch)
            ));
        }
        case(
            scratch,
            &format!("git diff {flags:?}: a swap and a 3-cycle"),
            &t0,
            &patch,
            1,
            Want::Applies(&t1),
        )?;
    }
    Ok(())
}

fn refusals_and_modes(scratch: &Scratch) -> Result<(), String> {
    let a = tree(&[("x", "a\n"), ("etc/x", "a\n")]);
    for patch in [
        "--- /dev/null\n+++ b//etc/y\n@@ -0,0 +1 @@\n+x\n",
        "--- a//etc/x\n+++ b//etc/x\n@@ -1 +1 @@\n-a\n+b\n",
        "diff --git a//etc/x b//etc/x\n--- a//etc/x\n+++ b//etc/x\n@@ -1 +1 @@\n-a\n+b\n",
    ] {
        case(
            scratch,
            "an absolute path after stripping",
            &a,
            patch.as_bytes(),
            1,
            Want::Refused("path_escape"),
        )?;
    }
    // `new mode 100654`: git keeps only the owner's bit, so not executable.
    let mut exec = tree(&[("f", "x\n")]);
    if let Some(f) = exec.get_mut(b"f".as_slice()) {
        f.exec = true;
    }
    let plain = tree(&[("f", "x\n")]);
    case(
        scratch,
        "new mode 100654",
        &exec,
        b"diff --git a/f b/f\nold mode 100755\nnew mode 100654\n",
        1,
        Want::Applies(&plain),
    )?;
    case(
        scratch,
        "new mode 100744",
        &plain,
        b"diff --git a/f b/f\nold mode 100644\nnew mode 100744\n",
        1,
        Want::Applies(&exec),
    )
}

/// A file whose mode on disk is 0654 (group and other may execute, the
/// owner may not) is not executable to git, so patching it leaves a
/// non-executable file; roundtable used to read it as executable
/// (`mode & 0o111`) and write 0755.
fn group_exec_on_disk(scratch: &Scratch) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let work = scratch.trial_dir();
    let patch_file = work.path().join("patch.diff");
    fs::write(&patch_file, "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n").map_err(|e| e.to_string())?;
    let mut modes = Vec::new();
    for (side, apply) in [("git", true), ("roundtable", false)] {
        let dir = work.path().join(side);
        fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let f = dir.join("f");
        fs::write(&f, "a\n").map_err(|e| e.to_string())?;
        fs::set_permissions(&f, fs::Permissions::from_mode(0o654)).map_err(|e| e.to_string())?;
        let out = if apply {
            run(scratch.git(&dir).arg("apply").arg(&patch_file))?
        } else {
            run(super::differential::roundtable()
                .args(["patch", "apply", "--root"])
                .arg(&dir)
                .arg(&patch_file))?
        };
        if !out.status.success() {
            return Err(format!("{side} refused: {}", lossy(&out.stdout)));
        }
        let meta = fs::metadata(&f).map_err(|e| e.to_string())?;
        modes.push((side, meta.permissions().mode() & 0o100 != 0));
    }
    if modes[0].1 != modes[1].1 {
        return Err(format!(
            "owner exec bit after patching a 0654 file: {modes:?}"
        ));
    }
    Ok(())
}

fn link(target: &str) -> File {
    File::link(target.as_bytes().to_vec())
}

/// Links as git writes them (creation, retarget through `..`, deletion,
/// both type changes, a link replaced by a directory) apply exactly as
/// `git apply` applies them, links compared by target; a target that
/// leaves the root is where roundtable deliberately refuses
/// (`path_escape`) and git creates the link.
fn symbolic_links(scratch: &Scratch) -> Result<(), String> {
    let mut a = tree(&[
        ("RelNotes.txt", "notes\n"),
        ("docs/x.txt", "x\n"),
        ("f", "file\n"),
    ]);
    a.insert(b"l".to_vec(), link("RelNotes.txt"));
    a.insert(b"gone".to_vec(), link("docs/x.txt"));
    a.insert(b"k".to_vec(), link("f"));
    a.insert(b"d".to_vec(), link("docs"));
    let mut b = a.clone();
    b.insert(b"RelNotes".to_vec(), link("RelNotes.txt"));
    b.insert(b"docs/up".to_vec(), link("../docs/./x.txt"));
    b.insert(b"l".to_vec(), link("docs/x.txt"));
    b.remove(b"gone".as_slice());
    b.insert(b"f".to_vec(), link("RelNotes.txt"));
    b.insert(b"k".to_vec(), file("now a file\n"));
    b.remove(b"d".as_slice());
    b.insert(b"d/inner.txt".to_vec(), file("inner\n"));
    let work = scratch.trial_dir();
    let ids = history(scratch, &work.path().join("repo"), &[a.clone(), b.clone()])?;
    for args in [
        &["diff"][..],
        &["diff", "-M", "-C", "--binary", "--full-index"],
        &["diff", "-M", "-B", "--binary"],
    ] {
        let mut cmd = scratch.git(&work.path().join("repo"));
        cmd.args(args).arg(&ids[0]).arg(&ids[1]);
        let patch = super::differential::run_ok(&mut cmd)?;
        case(
            scratch,
            &format!("links, git {}", args.join(" ")),
            &a,
            &patch,
            1,
            Want::Applies(&b),
        )?;
    }
    for (path, target) in [
        ("out", "../outside"),
        ("abs", "/etc/passwd"),
        ("docs/g", "../.git/config"),
    ] {
        let patch = format!(
            "diff --git a/{path} b/{path}\nnew file mode 120000\nindex 0000000..1234567\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
        );
        case(
            scratch,
            &format!("escaping link {path} -> {target}"),
            &a,
            patch.as_bytes(),
            1,
            Want::Refused("path_escape"),
        )?;
    }
    Ok(())
}

#[test]
fn differential_real_world_formats_agree_with_git_apply() {
    let scratch = Scratch::new();
    let mut failures = Vec::new();
    for (name, run) in [
        (
            "mails and logs",
            mails_and_logs as fn(&Scratch) -> Result<(), String>,
        ),
        ("GNU diff", gnu_diff),
        ("svn and hg", svn_and_hg),
        ("swaps and cycles", swaps_and_cycles),
        ("refusals and modes", refusals_and_modes),
        ("group exec on disk", group_exec_on_disk),
        ("symbolic links", symbolic_links),
    ] {
        if let Err(e) = run(&scratch) {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
