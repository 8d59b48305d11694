//! Replaying a repository's history through `roundtable patch apply` and
//! `git apply`.
//!
//! One repository is built with [`DEFAULT_COMMITS`] commits of random
//! edits (the generator of `differential.rs`: text edits, CRLF, missing
//! final newlines, renames, copies, deletions, mode changes, binaries, a
//! file becoming a directory and back, swaps), plus, every ten commits,
//! large files swapped and rotated so that `-B` writes swapped and cyclic
//! renames, and symbolic links created, retargeted, deleted, turned into
//! files and made of files ([`link_edits`]; their targets stay inside the
//! repository, so roundtable applies them and both tools must give the
//! same links). Every commit's diff against
//! its parent is then written in several variants and applied to the
//! parent's tree by both tools, which must agree ([`differential_with`]);
//! for the variants git can apply without options, both must reproduce the
//! commit's tree exactly.
//!
//! Variants: `git diff` (binary changes as `Binary files … differ`, which
//! neither applies), `git diff -M -C --binary --full-index`, `git diff -U0
//! --binary` (compared with `git apply --unidiff-zero`, which places its
//! hunks by their headers as roundtable does: plain `git apply` refuses
//! most and lands some at the end of the file), `git format-patch -1 --stdout` (one mail, signature and all)
//! and `git diff -M -B --binary` (rewrites broken and paired anew).
//!
//! Environment: `RT_HISTORY_COMMITS` (default [`DEFAULT_COMMITS`]) and
//! `RT_HISTORY_SEED` (decimal or `0x` hex).

use super::differential::{
    differential_with, env_number, gen_file, gen_path, gen_tree, lossy, mutate, run_ok, transition,
    tree_diff, File, Rng, Scratch, Tree,
};
use std::fmt::Write as _;
use std::fs;
use std::time::Instant;

/// Commits in the repository when `RT_HISTORY_COMMITS` is not set.
const DEFAULT_COMMITS: usize = 100;
/// The seed when `RT_HISTORY_SEED` is not set.
const DEFAULT_SEED: u64 = 0x4157_0e11_5eed_0014;

/// A way of writing one commit's change.
struct Variant {
    name: &'static str,
    /// `git` arguments; the parent and the commit are appended (for
    /// `format-patch`, only the commit).
    args: &'static [&'static str],
    /// Whether git applies it without options, so both tools must give
    /// the commit's tree.
    must_apply: bool,
    /// Whether it is a plain `git diff` that must render back exactly.
    exact: bool,
    /// Options `git apply` needs to read it as roundtable does.
    git_options: &'static [&'static str],
}

const VARIANTS: &[Variant] = &[
    Variant {
        name: "git diff",
        args: &["diff"],
        must_apply: false,
        exact: true,
        git_options: &[],
    },
    Variant {
        name: "git diff -M -C --binary --full-index",
        args: &["diff", "-M", "-C", "--binary", "--full-index"],
        must_apply: true,
        exact: true,
        git_options: &[],
    },
    Variant {
        name: "git diff -U0 --binary",
        args: &["diff", "-U0", "--binary"],
        must_apply: true,
        exact: true,
        git_options: &["--unidiff-zero"],
    },
    Variant {
        name: "git format-patch",
        args: &["format-patch", "-1", "--stdout", "--binary", "-M"],
        must_apply: true,
        exact: false,
        git_options: &[],
    },
    Variant {
        name: "git diff -M -B --binary",
        args: &["diff", "-M", "-B", "--binary"],
        must_apply: true,
        exact: true,
        git_options: &[],
    },
];

/// The files that [`rotate_big_files`] keeps.
const BIG: [&str; 3] = ["big/a.txt", "big/b.txt", "big/c.txt"];

/// Every ten commits, three large files with contents that share no line
/// are (re)written, then the next commit swaps two of them and the one
/// after rotates all three: `git diff -M -B` writes those as swapped and
/// cyclic renames (git does not break files under 400 bytes, and the
/// random edits make small files only).
fn rotate_big_files(commit: usize, tree: &mut Tree, log: &mut Vec<String>) {
    let in_the_way = tree.keys().any(|k| {
        k.as_slice() == b"big"
            || BIG
                .iter()
                .any(|b| k.starts_with(format!("{b}/").as_bytes()))
    });
    if in_the_way || commit == 0 {
        return;
    }
    let big = |tag: String| File {
        data: (1..=40)
            .map(|i| format!("{}{i}\n", tag.repeat(4)))
            .collect::<String>()
            .into_bytes(),
        exec: false,
        link: false,
    };
    let key = |i: usize| BIG[i].as_bytes().to_vec();
    match commit % 10 {
        3 => {
            for (i, tag) in ["alpha", "beta", "gamma"].into_iter().enumerate() {
                tree.insert(key(i), big(format!("{tag}{commit}")));
            }
            log.push("write the three big files".into());
        }
        4 if BIG.iter().all(|b| tree.contains_key(b.as_bytes())) => {
            let a = tree.remove(&key(0)).expect("present");
            let b = tree.remove(&key(1)).expect("present");
            tree.insert(key(0), b);
            tree.insert(key(1), a);
            log.push("swap big/a.txt and big/b.txt".into());
        }
        5 if BIG.iter().all(|b| tree.contains_key(b.as_bytes())) => {
            let a = tree.remove(&key(0)).expect("present");
            let b = tree.remove(&key(1)).expect("present");
            let c = tree.remove(&key(2)).expect("present");
            tree.insert(key(1), a);
            tree.insert(key(2), b);
            tree.insert(key(0), c);
            log.push("rotate big/a.txt -> b -> c -> a".into());
        }
        _ => {}
    }
}

/// A link's target: a path of `tree` (a file, a directory holding one, or
/// a name nothing has: a dangling link is still a link), written relative
/// to the link's directory, now and then through `./` or a `..` that
/// climbs out and back in. It never leaves the repository.
fn link_target(rng: &mut Rng, tree: &Tree, link: &[u8]) -> Vec<u8> {
    let keys: Vec<&Vec<u8>> = tree.keys().filter(|k| k.as_slice() != link).collect();
    let mut to: Vec<u8> = match rng.below(4) {
        0 | 1 if !keys.is_empty() => rng.pick(&keys).to_vec(),
        2 if !keys.is_empty() => {
            let k = rng.pick(&keys);
            match k.iter().rposition(|&b| b == b'/') {
                Some(i) => k[..i].to_vec(),
                None => b".".to_vec(),
            }
        }
        _ => b"missing/target.txt".to_vec(),
    };
    let depth = link.iter().filter(|&&b| b == b'/').count();
    let mut out = b"../".repeat(depth);
    if depth > 0 && rng.chance(30) {
        // Out of the link's directory and back into it.
        let dir_name = link
            .split(|&b| b == b'/')
            .nth(depth - 1)
            .expect("a directory");
        out = b"../".to_vec();
        out.extend_from_slice(dir_name);
        out.push(b'/');
        out.extend_from_slice(&b"../".repeat(depth));
    } else if rng.chance(20) {
        out.splice(0..0, b"./".iter().copied());
    }
    out.append(&mut to);
    out
}

/// One or two link edits a commit (beside the random file edits):
/// create, retarget, delete, file to link, link to file. Logged.
fn link_edits(rng: &mut Rng, tree: &mut Tree, log: &mut Vec<String>) {
    let show = |p: &[u8]| format!("{:?}", String::from_utf8_lossy(p));
    for _ in 0..rng.range(1, 2) {
        let links: Vec<Vec<u8>> = tree
            .iter()
            .filter(|(_, f)| f.link)
            .map(|(k, _)| k.clone())
            .collect();
        let files: Vec<Vec<u8>> = tree
            .iter()
            .filter(|(k, f)| !f.link && !k.starts_with(b"big/"))
            .map(|(k, _)| k.clone())
            .collect();
        match rng.weighted(&[4, 3, 2, 2, 2]) {
            1 if !links.is_empty() => {
                let path = rng.pick(&links).clone();
                let target = link_target(rng, tree, &path);
                log.push(format!(
                    "retarget link {} -> {}",
                    show(&path),
                    show(&target)
                ));
                tree.insert(path, File::link(target));
            }
            2 if !links.is_empty() => {
                let path = rng.pick(&links).clone();
                log.push(format!("delete link {}", show(&path)));
                tree.remove(&path);
            }
            3 if !files.is_empty() => {
                let path = rng.pick(&files).clone();
                let target = link_target(rng, tree, &path);
                log.push(format!("file to link {} -> {}", show(&path), show(&target)));
                tree.insert(path, File::link(target));
            }
            4 if !links.is_empty() => {
                let path = rng.pick(&links).clone();
                log.push(format!("link to file {}", show(&path)));
                let file = gen_file(rng);
                tree.insert(path, file);
            }
            _ => {
                let path = gen_path(rng, tree);
                let target = link_target(rng, tree, &path);
                log.push(format!("create link {} -> {}", show(&path), show(&target)));
                tree.insert(path, File::link(target));
            }
        }
    } // A link the file edits renamed or copied into another directory may
      // point out of the repository from there: point it in again.
    let moved: Vec<Vec<u8>> = tree
        .iter()
        .filter(|(k, f)| f.link && escapes(k, &f.data))
        .map(|(k, _)| k.clone())
        .collect();
    for path in moved {
        let target = link_target(rng, tree, &path);
        log.push(format!(
            "re-aim moved link {} -> {}",
            show(&path),
            show(&target)
        ));
        tree.insert(path, File::link(target));
    }
}

/// Whether `target`, read from the directory of the link at `link`,
/// leaves the repository (absolute, or `..` above the top).
fn escapes(link: &[u8], target: &[u8]) -> bool {
    if target.starts_with(b"/") {
        return true;
    }
    let mut depth = link.iter().filter(|&&b| b == b'/').count();
    for c in target.split(|&b| b == b'/') {
        match c {
            b"" | b"." => {}
            b".." if depth == 0 => return true,
            b".." => depth -= 1,
            _ => depth += 1,
        }
    }
    false
}

/// Whether a path is a link on one side and a file on the other.
fn type_changed(parent: &Tree, commit: &Tree) -> bool {
    parent
        .iter()
        .any(|(k, f)| commit.get(k).is_some_and(|g| g.link != f.link))
}

/// Every link of every commit, once: how many the history exercised.
fn count_links(trees: &[Tree]) -> usize {
    trees
        .iter()
        .map(|t| t.values().filter(|f| f.link).count())
        .sum()
}

#[test]
fn differential_history_replays_every_commit_like_git_apply() {
    let commits = env_number("RT_HISTORY_COMMITS").map_or(DEFAULT_COMMITS, |n| n as usize);
    let seed = env_number("RT_HISTORY_SEED").unwrap_or(DEFAULT_SEED);
    let started = Instant::now();
    let scratch = Scratch::new();
    let work = scratch.trial_dir();
    let repo = work.path().join("repo");
    fs::create_dir_all(&repo).expect("create the repository directory");
    let git = |args: &[&str]| -> Vec<u8> {
        run_ok(scratch.git(&repo).args(args)).unwrap_or_else(|e| panic!("harness: {e}"))
    };
    git(&["init", "-q"]);

    // Build the history.
    let mut rng = Rng::new(seed);
    // Links come from a stream of their own, so the file edits are those
    // the seed always gave.
    let mut link_rng = Rng::new(seed ^ 0x1111_5111_4c11_4b00);
    let mut trees: Vec<Tree> = vec![Tree::new()];
    let mut logs: Vec<Vec<String>> = vec![Vec::new()];
    for i in 0..=commits {
        let previous = trees.last().expect("at least the empty tree");
        let mut log = Vec::new();
        let mut next = if i == 0 {
            gen_tree(&mut rng)
        } else {
            mutate(&mut rng, previous, &mut log)
        };
        rotate_big_files(i, &mut next, &mut log);
        if i > 0 {
            link_edits(&mut link_rng, &mut next, &mut log);
        }
        transition(&repo, previous, &next).unwrap_or_else(|e| panic!("harness: {e}"));
        git(&["add", "-A"]);
        git(&[
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            &format!("commit {i}"),
        ]);
        trees.push(next);
        logs.push(log);
    }
    let ids: Vec<String> = lossy(&git(&["rev-list", "--reverse", "HEAD"]))
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(ids.len(), commits + 1, "harness: one id per commit");
    // trees[k + 1] is the tree of ids[k].
    let built = started.elapsed();
    assert!(
        count_links(&trees) >= commits,
        "harness: the history holds links"
    );
    for kind in [
        "create link",
        "retarget link",
        "delete link",
        "file to link",
        "link to file",
    ] {
        assert!(
            commits < 20 || logs.iter().flatten().any(|l| l.starts_with(kind)),
            "harness: no commit did `{kind}`"
        );
    }

    let mut failures = Vec::new();
    let mut applied = vec![0usize; VARIANTS.len()];
    let mut refused = vec![0usize; VARIANTS.len()];
    for k in 1..ids.len() {
        let (parent, commit) = (&trees[k], &trees[k + 1]);
        for (v, variant) in VARIANTS.iter().enumerate() {
            let mut args: Vec<&str> = variant.args.to_vec();
            if variant.args[0] != "format-patch" {
                args.push(&ids[k - 1]);
            }
            args.push(&ids[k]);
            let patch = git(&args);
            if patch.is_empty() {
                continue;
            }
            let trial = scratch.trial_dir();
            let patch_file = trial.path().join("patch.diff");
            fs::write(&patch_file, &patch).expect("write the patch");
            let outcome = differential_with(
                &scratch,
                trial.path(),
                &patch_file,
                parent,
                1,
                variant.exact,
                variant.git_options,
            )
            .and_then(|a| match (&a.refusal, variant.must_apply) {
                (None, true) if a.after != *commit => Err(format!(
                    "both applied, but not giving the commit's tree\n{}",
                    tree_diff("applied", &a.after, "commit", commit)
                )),
                // `git diff -B` breaks a type change (file to link or back)
                // and may pair its new half with a rename, dropping the
                // removal of the old half: git cannot apply that diff
                // itself, and roundtable refuses it too.
                (Some(_), true)
                    if variant.args.contains(&"-B")
                        && !a.git.status.success()
                        && type_changed(parent, commit) =>
                {
                    Ok(false)
                }
                (Some(code), true) => Err(format!("both refused ({code})")),
                (r, _) => Ok(r.is_none()),
            });
            match outcome {
                Ok(true) => applied[v] += 1,
                Ok(false) => refused[v] += 1,
                Err(e) => {
                    let mut report =
                        format!("commit {k} ({}), {}: {e}\nedits:\n", ids[k], variant.name);
                    for line in &logs[k + 1] {
                        let _ = writeln!(report, "  {line}");
                    }
                    let _ = write!(
                        report,
                        "patch:\n{}",
                        super::differential::preview_patch(&patch)
                    );
                    failures.push(report);
                }
            }
        }
    }
    eprintln!(
        "history: {commits} commits (seed {seed:#x}) built in {built:.1?}, replayed in {:.1?}; applied/refused per variant: {}",
        started.elapsed() - built,
        VARIANTS
            .iter()
            .zip(applied.iter().zip(&refused))
            .map(|(v, (a, r))| format!("{} {a}/{r}", v.name))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert!(
        failures.is_empty(),
        "{} replays disagreed (RT_HISTORY_SEED={seed:#x} RT_HISTORY_COMMITS={commits}); first:\n{}",
        failures.len(),
        failures[0]
    );
}
