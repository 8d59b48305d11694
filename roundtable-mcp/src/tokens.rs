//! The bearer tokens a host mints for the HTTP transport, one actor each.
//!
//! The file has one token per line, `TOKEN KIND:ID` (`7f3c… agent:alice`);
//! blank lines and lines starting with `#` are ignored. A token is at least
//! [`MIN_TOKEN_LEN`] characters of `[A-Za-z0-9._~+/=-]` (what an
//! `Authorization: Bearer` value may hold). The file is read again whenever
//! it changes, so a host adds and revokes agents without a restart.
//!
//! The file fails closed: once it is deleted, replaced by something that is
//! not a readable file, or holds one bad line, **every** token is revoked
//! (every request is `401`) until the file is valid again, so a revocation
//! written together with a typo is never lost. Each such change is said once
//! on stderr, and so is the return to a valid file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use roundtable::{Actor, ErrorCode};

/// The shortest token accepted: guessing one must be out of reach.
pub const MIN_TOKEN_LEN: usize = 16;

/// Why a token file was refused.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The file could not be read.
    #[error("tokens file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A line is not `TOKEN KIND:ID`, or its token or actor is bad.
    #[error("tokens file {path} line {line}: {reason}")]
    Line {
        /// The file.
        path: PathBuf,
        /// The line number, from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
}

impl TokenError {
    /// The stable code: `invalid_argument`.
    pub fn code(&self) -> ErrorCode {
        ErrorCode::InvalidArgument
    }
}

/// The parsed token set, and the file it is kept in step with.
#[derive(Debug)]
pub struct Tokens {
    path: PathBuf,
    state: Mutex<Loaded>,
}

#[derive(Debug)]
struct Loaded {
    /// The file as last looked at (`None`: it did not exist).
    stamp: Option<Stamp>,
    /// The tokens in force: empty while the file is broken.
    actors: HashMap<String, Actor>,
    /// Why the file is refused, while it is.
    broken: Option<String>,
}

/// What changes when the file is written, replaced or removed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    is_file: bool,
    /// The inode and change time: a rename over the file, or a rewrite of
    /// the same length within the clock's granularity, still changes them.
    #[cfg(unix)]
    inode: (u64, i64, i64),
}

impl Tokens {
    /// Read the token file at `path`.
    ///
    /// # Errors
    /// [`TokenError`] when the file cannot be read or a line is bad.
    pub fn load(path: &Path) -> Result<Tokens, TokenError> {
        let stamp = stamp(path);
        let actors = read(path)?;
        Ok(Tokens {
            path: path.to_owned(),
            state: Mutex::new(Loaded {
                stamp,
                actors,
                broken: None,
            }),
        })
    }

    /// The actor `token` names, reading the file again first when it
    /// changed since the last look; `None` for every token while the file
    /// is missing, unreadable or invalid.
    pub fn actor(&self, token: &str) -> Option<Actor> {
        let mut state = self.lock();
        if let Some(said) = refresh(&self.path, &mut state) {
            eprintln!("roundtable mcp: {said}");
        }
        state.actors.get(token).cloned()
    }

    /// How many tokens are in force (none while the file is broken).
    pub fn len(&self) -> usize {
        self.lock().actors.len()
    }

    /// Whether no token is in force (every request is then `401`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Loaded> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Bring `state` in step with the file at `path` if it changed since the
/// last look: its tokens when it is valid, none when it is not. Returns
/// what to log when the file became broken (or broken differently) or
/// valid again; `None` when nothing is worth saying.
fn refresh(path: &Path, state: &mut Loaded) -> Option<String> {
    let now = stamp(path);
    if now == state.stamp {
        return None;
    }
    state.stamp = now;
    match read(path) {
        Ok(actors) => {
            state.actors = actors;
            state.broken.take().map(|_| {
                let n = state.actors.len();
                format!(
                    "tokens file {} is valid again: {n} token{} in force",
                    path.display(),
                    if n == 1 { "" } else { "s" }
                )
            })
        }
        Err(e) => {
            state.actors.clear();
            let why = e.to_string();
            if state.broken.as_deref() == Some(why.as_str()) {
                return None;
            }
            state.broken = Some(why.clone());
            Some(format!(
                "{why}; every token is revoked until the file is valid again"
            ))
        }
    }
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Stamp {
        modified: meta.modified().ok(),
        len: meta.len(),
        is_file: meta.is_file(),
        #[cfg(unix)]
        inode: {
            use std::os::unix::fs::MetadataExt;
            (meta.ino(), meta.ctime(), meta.ctime_nsec())
        },
    })
}

fn read(path: &Path) -> Result<HashMap<String, Actor>, TokenError> {
    let text = std::fs::read_to_string(path).map_err(|source| TokenError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse(&text).map_err(|(line, reason)| TokenError::Line {
        path: path.to_owned(),
        line,
        reason,
    })
}

/// Parse the file's text: token → actor, or the bad line and why.
fn parse(text: &str) -> Result<HashMap<String, Actor>, (usize, String)> {
    let mut actors = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let n = n + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let (Some(token), Some(actor), None) = (fields.next(), fields.next(), fields.next()) else {
            return Err((n, "expected TOKEN KIND:ID".into()));
        };
        if token.len() < MIN_TOKEN_LEN {
            return Err((
                n,
                format!("a token needs at least {MIN_TOKEN_LEN} characters"),
            ));
        }
        if !token.bytes().all(is_token_byte) {
            return Err((n, "a token holds only A-Z a-z 0-9 . _ ~ + / = -".into()));
        }
        let actor = Actor::parse(actor).map_err(|e| (n, e.to_string()))?;
        if actors.insert(token.to_owned(), actor).is_some() {
            return Err((n, "this token is listed twice".into()));
        }
    }
    Ok(actors)
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"._~+/=-".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T1: &str = "tok-0123456789abcdef";
    const T2: &str = "tok-fedcba9876543210";

    #[test]
    fn lines_name_one_actor_per_token_and_comments_are_skipped() {
        let text = format!("# minted by the host\n\n{T1} agent:alice\n  {T2}   human:hana  \n");
        let m = parse(&text).expect("parses");
        assert_eq!(m.len(), 2);
        assert_eq!(m[T1].to_string(), "agent:alice");
        assert_eq!(m[T2].to_string(), "human:hana");
    }

    #[test]
    fn a_bad_line_is_refused_naming_its_number() {
        for (text, line, says) in [
            (format!("{T1}\n"), 1, "expected TOKEN KIND:ID"),
            (format!("{T1} agent:a extra\n"), 1, "expected TOKEN KIND:ID"),
            ("short agent:a\n".to_owned(), 1, "at least 16"),
            (format!("# x\n{T1}\u{e9} agent:a\n"), 2, "only A-Z"),
            (format!("{T1} robot:a\n"), 1, "robot"),
            (format!("{T1} agent:a\n{T1} agent:b\n"), 2, "twice"),
        ] {
            let (n, reason) = parse(&text).expect_err("refused");
            assert_eq!(n, line, "{text:?}");
            assert!(reason.contains(says), "{text:?}: {reason}");
        }
    }

    fn who(tokens: &Tokens, token: &str) -> Option<String> {
        tokens.actor(token).map(|a| a.to_string())
    }

    fn loaded(text: &str) -> (tempfile::TempDir, PathBuf, Tokens) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tokens");
        std::fs::write(&path, text).expect("write");
        let tokens = Tokens::load(&path).expect("load");
        (dir, path, tokens)
    }

    #[test]
    fn the_file_is_read_again_when_it_changes() {
        let (_dir, path, tokens) = loaded(&format!("{T1} agent:alice\n"));
        assert_eq!(who(&tokens, T1).as_deref(), Some("agent:alice"));
        assert!(tokens.actor(T2).is_none());
        // Add one, revoke the other.
        std::fs::write(&path, format!("{T2} agent:bob-the-second\n")).expect("write");
        assert!(tokens.actor(T1).is_none());
        assert_eq!(who(&tokens, T2).as_deref(), Some("agent:bob-the-second"));
        std::fs::write(&path, "garbage\n").expect("write");
        let e = Tokens::load(&path).expect_err("refused");
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        assert!(e.to_string().contains("line 1"), "{e}");
    }

    #[test]
    fn item5_a_deleted_tokens_file_revokes_every_token() {
        let (_dir, path, tokens) = loaded(&format!("{T1} agent:alice\n"));
        assert!(tokens.actor(T1).is_some());
        std::fs::remove_file(&path).expect("remove");
        assert!(tokens.actor(T1).is_none(), "a deleted file keeps no token");
        assert!(tokens.is_empty());
        // Valid again: the tokens it lists work again.
        std::fs::write(&path, format!("{T1} agent:alice\n")).expect("write");
        assert_eq!(who(&tokens, T1).as_deref(), Some("agent:alice"));
    }

    #[test]
    fn item5_a_directory_in_place_of_the_tokens_file_revokes_every_token() {
        let (_dir, path, tokens) = loaded(&format!("{T1} agent:alice\n"));
        assert!(tokens.actor(T1).is_some());
        std::fs::remove_file(&path).expect("remove");
        std::fs::create_dir(&path).expect("mkdir");
        assert!(tokens.actor(T1).is_none(), "a directory keeps no token");
        std::fs::remove_dir(&path).expect("rmdir");
        std::fs::write(&path, format!("{T2} agent:bob\n")).expect("write");
        assert!(tokens.actor(T1).is_none());
        assert_eq!(who(&tokens, T2).as_deref(), Some("agent:bob"));
    }

    #[test]
    fn item5_one_bad_line_revokes_every_token_and_a_revocation_with_a_typo_is_not_lost() {
        let (_dir, path, tokens) = loaded(&format!("{T1} agent:alice\n{T2} agent:bob\n"));
        assert!(tokens.actor(T1).is_some() && tokens.actor(T2).is_some());
        // The host revokes alice and, in the same write, mistypes a line.
        std::fs::write(&path, format!("{T2} agent:bob\n{T1}x agnet:carol\n")).expect("write");
        assert!(tokens.actor(T1).is_none(), "the revocation holds");
        assert!(
            tokens.actor(T2).is_none(),
            "an invalid file revokes every token"
        );
        // Fixed: exactly what the file lists works.
        std::fs::write(&path, format!("{T2} agent:bob\n")).expect("write");
        assert!(tokens.actor(T1).is_none());
        assert_eq!(who(&tokens, T2).as_deref(), Some("agent:bob"));
    }

    #[test]
    fn item5_a_broken_file_is_logged_once_per_change() {
        let (_dir, path, tokens) = loaded(&format!("{T1} agent:alice\n"));
        let mut state = tokens.state.lock().expect("lock");
        assert_eq!(refresh(&tokens.path, &mut state), None, "unchanged");
        std::fs::write(&path, "garbage\n").expect("write");
        let said = refresh(&tokens.path, &mut state).expect("logged");
        assert!(
            said.contains("line 1") && said.contains("every token is revoked"),
            "{said}"
        );
        assert_eq!(refresh(&tokens.path, &mut state), None, "logged once");
        std::fs::remove_file(&path).expect("remove");
        let said = refresh(&tokens.path, &mut state).expect("logged");
        assert!(said.contains("every token is revoked"), "{said}");
        assert_eq!(refresh(&tokens.path, &mut state), None, "logged once");
        std::fs::write(&path, format!("{T1} agent:alice\n")).expect("write");
        let said = refresh(&tokens.path, &mut state).expect("logged");
        assert!(
            said.contains("valid again") && said.contains("1 token"),
            "{said}"
        );
        assert_eq!(refresh(&tokens.path, &mut state), None, "logged once");
        assert!(state.actors.contains_key(T1));
    }
}
