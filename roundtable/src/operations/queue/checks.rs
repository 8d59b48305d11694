//! The landing queue's checks, run for real: a speculative state
//! materialized in a temporary directory, and a policy's check commands
//! run in it with bounded time and output.

use crate::diff::TreeFile;
use crate::model::TestStatus;
use crate::policy::CheckCommand;
use crate::RepoPath;
use std::collections::BTreeMap;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The only variables of the engine's environment a check sees (besides
/// the policy's `env`): it runs the proposals' code, which must not read
/// the host's tokens and keys.
pub(crate) const INHERITED: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "TZ"];

/// The most output a check keeps: its last 64 KiB.
pub(crate) const OUTPUT_LIMIT: u64 = 64 * 1024;

/// What one check did on one state.
#[derive(Debug, Clone)]
pub(crate) struct CheckRun {
    /// The check's name.
    pub(crate) name: String,
    /// `passed` (exit 0), `failed` (another exit, a signal), `errored`
    /// (it could not start, or ran past its timeout).
    pub(crate) status: TestStatus,
    /// The end of its standard output and error, interleaved as written.
    pub(crate) output: String,
    /// How long it ran.
    pub(crate) duration_ms: u64,
    /// Whether it is recorded already on the state's own (last) proposal:
    /// an external check's answer, a `test.record` of its own (the queue
    /// records every other run, and this one on the other proposals of a
    /// batch landing on the state).
    pub(crate) recorded: bool,
}

/// What a speculative state is written over.
#[derive(Debug)]
pub(crate) enum Base {
    /// The files the working tree's state lists (relative paths), copied.
    Listed(Vec<Vec<u8>>),
    /// The tree of this branch's tip (a full ref name): a bare repository
    /// has no working tree to copy.
    #[cfg(feature = "git")]
    Branch(String),
}

/// A copy of `base` (the working tree at `root`, or its repository's
/// branch) with `overlay` written over it (`None`: the path is gone), in
/// a new temporary directory.
pub(crate) fn materialize(
    root: &Path,
    base: &Base,
    overlay: &BTreeMap<RepoPath, Option<TreeFile>>,
) -> std::io::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix("rt-queue-state-")
        .tempdir()?;
    match base {
        Base::Listed(files) => materialize_into(root, files, overlay, dir.path())?,
        #[cfg(feature = "git")]
        Base::Branch(branch) => {
            crate::landing::open(root)
                .and_then(|repo| crate::landing::checkout_into(&repo, branch, dir.path()))
                .map_err(std::io::Error::other)?;
            materialize_into(root, &[], overlay, dir.path())?;
        }
    }
    Ok(dir)
}

/// [`materialize`] into `dir` (an empty directory).
pub(crate) fn materialize_into(
    root: &Path,
    files: &[Vec<u8>],
    overlay: &BTreeMap<RepoPath, Option<TreeFile>>,
    dir: &Path,
) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt as _;
    // A listed file that is gone by the time it is copied was removed (or
    // renamed over) by a landing on this working tree since it was listed
    // — another host's, sharing it: the state is the tree as it is now.
    let gone = |r: std::io::Result<()>| match r {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    };
    for rel in files {
        let rel = Path::new(std::ffi::OsStr::from_bytes(rel));
        let to = dir.join(rel);
        let from = root.join(rel);
        gone((|| {
            let meta = std::fs::symlink_metadata(&from)?;
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)?;
            }
            if meta.file_type().is_symlink() {
                std::os::unix::fs::symlink(std::fs::read_link(&from)?, &to)
            } else {
                std::fs::copy(&from, &to).map(drop)
            }
        })())?;
    }
    for (path, content) in overlay {
        let to = dir.join(path.as_str());
        if std::fs::symlink_metadata(&to).is_ok() {
            std::fs::remove_file(&to)?;
        }
        let Some(file) = content else { continue };
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        if file.symlink {
            std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&file.data), &to)?;
        } else {
            std::fs::write(&to, &file.data)?;
            if file.executable {
                use std::os::unix::fs::PermissionsExt as _;
                std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o755))?;
            }
        }
    }
    Ok(())
}

/// Run check `name` in `dir`: its own process group, stdin closed, only
/// [`INHERITED`] and the policy's variables in its environment, its
/// output to a temporary file (so a chatty check never blocks on a full
/// pipe), killed with its group at the timeout.
pub(crate) fn run(name: &str, check: &CheckCommand, dir: &Path) -> CheckRun {
    let started = Instant::now();
    let finish = |status, output: String| CheckRun {
        name: name.to_owned(),
        status,
        output,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        recorded: false,
    };
    let mut output = match tempfile::tempfile() {
        Ok(f) => f,
        Err(e) => return finish(TestStatus::Errored, format!("no file for its output: {e}")),
    };
    let (out, err) = match (output.try_clone(), output.try_clone()) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            return finish(TestStatus::Errored, format!("no file for its output: {e}"))
        }
    };
    let Some((program, args)) = check.command.split_first() else {
        return finish(TestStatus::Errored, "it names no program".to_owned());
    };
    let mut child = match Command::new(program)
        .args(args)
        .current_dir(dir)
        .env_clear()
        .envs(
            INHERITED
                .iter()
                .filter_map(|k| Some((*k, std::env::var_os(k)?))),
        )
        .envs(&check.env)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            return finish(
                TestStatus::Errored,
                format!("could not start {program:?}: {e}"),
            )
        }
    };
    let timeout = Duration::from_secs(u64::from(check.timeout_s));
    let (status, note) = loop {
        match child.try_wait() {
            Ok(Some(exit)) if exit.success() => break (TestStatus::Passed, None),
            Ok(Some(exit)) => break (TestStatus::Failed, Some(format!("\n[{exit}]"))),
            Ok(None) if started.elapsed() >= timeout => {
                kill_group(child.id());
                let _ = child.wait();
                break (
                    TestStatus::Errored,
                    Some(format!(
                        "\n[killed after its timeout of {} s]",
                        check.timeout_s
                    )),
                );
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                kill_group(child.id());
                let _ = child.wait();
                break (
                    TestStatus::Errored,
                    Some(format!("\n[could not wait: {e}]")),
                );
            }
        }
    };
    // What the group's other processes still write is not waited for.
    kill_group(child.id());
    let mut text = tail(&mut output);
    text.push_str(note.as_deref().unwrap_or(""));
    finish(status, text)
}

/// Kill the process group led by `pid` (a check and what it started).
fn kill_group(pid: u32) {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    if let Some(pid) = pid {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// The last [`OUTPUT_LIMIT`] bytes of `file`, as text (invalid UTF-8
/// replaced), saying how much came before.
fn tail(file: &mut std::fs::File) -> String {
    let len = file.seek(SeekFrom::End(0)).unwrap_or(0);
    let skip = len.saturating_sub(OUTPUT_LIMIT);
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(skip)).is_ok() {
        let _ = file.take(OUTPUT_LIMIT).read_to_end(&mut bytes);
    }
    let text = String::from_utf8_lossy(&bytes);
    if skip > 0 {
        format!("[{skip} bytes of output before this were dropped]\n{text}")
    } else {
        text.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(command: &[&str], timeout_s: u32) -> CheckCommand {
        let mut c: CheckCommand = serde_json::from_value(serde_json::json!({
            "command": command, "timeout_s": timeout_s, "env": {"RT_CHECK": "yes"}
        }))
        .expect("a check");
        c.timeout_s = timeout_s;
        c
    }

    #[test]
    fn exit_status_output_environment_and_timeout() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("f"), "content\n").expect("write");
        // The engine's own environment stays out (cargo sets this one for
        // the test process), while PATH and the policy's variables are in.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let ok = run(
            "cat",
            &check(
                &[
                    "sh",
                    "-c",
                    "cat f; echo $RT_CHECK$CARGO_MANIFEST_DIR >&2; test -n \"$PATH\"",
                ],
                10,
            ),
            dir.path(),
        );
        assert_eq!(ok.status, TestStatus::Passed, "{}", ok.output);
        assert_eq!(ok.output, "content\nyes\n");
        let bad = run(
            "exit",
            &check(&["sh", "-c", "echo no; exit 3"], 10),
            dir.path(),
        );
        assert_eq!(bad.status, TestStatus::Failed);
        assert!(
            bad.output.starts_with("no\n") && bad.output.contains('3'),
            "{}",
            bad.output
        );
        let slow = run(
            "slow",
            &check(&["sh", "-c", "sleep 30 & sleep 30"], 1),
            dir.path(),
        );
        assert_eq!(slow.status, TestStatus::Errored);
        assert!(slow.duration_ms < 10_000, "{}", slow.duration_ms);
        assert!(slow.output.contains("timeout"), "{}", slow.output);
        let missing = run("none", &check(&["/nonexistent/program"], 1), dir.path());
        assert_eq!(missing.status, TestStatus::Errored);
        let chatty = run(
            "chatty",
            &check(&["sh", "-c", "head -c 200000 /dev/zero | tr '\\0' x"], 10),
            dir.path(),
        );
        assert_eq!(chatty.status, TestStatus::Passed);
        assert!(chatty.output.len() < 70_000 && chatty.output.contains("dropped"));
    }

    #[test]
    fn a_materialized_state_is_the_tree_with_the_overlay_written_over_it() {
        let root = tempfile::tempdir().expect("root");
        std::fs::create_dir_all(root.path().join("d")).expect("mkdir");
        std::fs::write(root.path().join("d/a"), "a\n").expect("write");
        std::fs::write(root.path().join("b"), "b\n").expect("write");
        let mut overlay = BTreeMap::new();
        let path = |p: &str| RepoPath::from_bytes(p.as_bytes()).expect("path");
        overlay.insert(path("b"), None);
        overlay.insert(
            path("n/x.sh"),
            Some(TreeFile {
                data: b"#!/bin/sh\n".to_vec(),
                executable: true,
                symlink: false,
            }),
        );
        // `gone` was listed and removed before the copy (a landing on the
        // shared working tree): the state is the tree as it is.
        let files = Base::Listed(vec![b"d/a".to_vec(), b"b".to_vec(), b"gone/x".to_vec()]);
        let state = materialize(root.path(), &files, &overlay).expect("materialize");
        assert_eq!(std::fs::read(state.path().join("d/a")).expect("a"), b"a\n");
        assert!(!state.path().join("b").exists());
        assert!(!state.path().join("gone").exists());
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(state.path().join("n/x.sh"))
            .expect("x")
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111);
        assert_eq!(
            std::fs::read(root.path().join("b")).expect("b untouched"),
            b"b\n"
        );
    }
}
