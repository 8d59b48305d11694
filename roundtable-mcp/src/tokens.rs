//! The bearer tokens a host mints for the HTTP transport, one actor each.
//!
//! The file has one token per line, `TOKEN KIND:ID` (`7f3c… agent:alice`);
//! blank lines and lines starting with `#` are ignored. A token is at least
//! [`MIN_TOKEN_LEN`] characters of `[A-Za-z0-9._~+/=-]` (what an
//! `Authorization: Bearer` value may hold). The file is read again whenever
//! it changes, so a host adds and revokes agents without a restart; a file
//! that stops parsing keeps the last good set and says why on stderr.

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
    stamp: Option<(SystemTime, u64)>,
    actors: HashMap<String, Actor>,
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
            state: Mutex::new(Loaded { stamp, actors }),
        })
    }

    /// The actor `token` names, reading the file again first when it
    /// changed since the last look.
    pub fn actor(&self, token: &str) -> Option<Actor> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = stamp(&self.path);
        if now != state.stamp {
            match read(&self.path) {
                Ok(actors) => {
                    state.actors = actors;
                    state.stamp = now;
                }
                // A half-written or broken file keeps the last good set.
                Err(e) => eprintln!("roundtable mcp: {e}; keeping the previous tokens"),
            }
        }
        state.actors.get(token).cloned()
    }

    /// How many tokens are loaded.
    pub fn len(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .actors
            .len()
    }

    /// Whether no token is loaded (every request is then `401`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
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

    #[test]
    fn the_file_is_read_again_when_it_changes_and_a_broken_edit_keeps_the_last_set() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tokens");
        std::fs::write(&path, format!("{T1} agent:alice\n")).expect("write");
        let tokens = Tokens::load(&path).expect("load");
        assert_eq!(
            tokens.actor(T1).map(|a| a.to_string()).as_deref(),
            Some("agent:alice")
        );
        assert!(tokens.actor(T2).is_none());
        // Add one, revoke the other (the length changes, so the stamp does).
        std::fs::write(&path, format!("{T2} agent:bob-the-second\n")).expect("write");
        assert!(tokens.actor(T1).is_none());
        assert_eq!(
            tokens.actor(T2).map(|a| a.to_string()).as_deref(),
            Some("agent:bob-the-second")
        );
        std::fs::write(&path, "garbage\n").expect("write");
        assert!(
            tokens.actor(T2).is_some(),
            "a broken file keeps the last set"
        );
        let e = Tokens::load(&path).expect_err("refused");
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        assert!(e.to_string().contains("line 1"), "{e}");
    }
}
