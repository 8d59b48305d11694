//! The persistent stat cache (`.roundtable/state-cache`).

use super::walk::FILE_FLAGS;
use super::{CacheStatus, Kind, Stat, Tree};
use crate::Digest;
use std::fs;
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

/// Where the stat cache lives, relative to the root.
///
/// Format version 1, integers little endian, `varint` = unsigned LEB128:
///
/// ```text
/// "RTSTATE\0"  u32:version=1  u32:flags=0  u64:count
/// count × ( varint:shared  varint:len  [len]suffix      path = previous path[..shared] + suffix
///           u64:size  i64:mtime_sec u32:mtime_nsec  i64:ctime_sec u32:ctime_nsec
///           u64:inode  u64:device  u32:st_mode  [32]sha256-of-content )
/// [32]: SHA-256 of every byte before it (corruption detection)
/// ```
///
/// Records are the regular files, sorted by path bytes, strictly
/// increasing. A file that fails any check (magic, version, flags,
/// checksum, lengths, order, count) is ignored as a whole and rewritten.
pub const CACHE_FILE: &str = ".roundtable/state-cache";

const DIR: &str = ".roundtable";
const NAME: &str = "state-cache";
const MAGIC: &[u8; 8] = b"RTSTATE\0";
const VERSION: u32 = 1;
const HEADER: usize = 8 + 4 + 4 + 8;
/// Bytes of a record after its path.
const FIXED: usize = 8 + 8 + 4 + 8 + 4 + 8 + 8 + 4 + 32;
const TRAILER: usize = 32;

/// A validated cache file in memory.
pub(super) struct Loaded {
    buf: Vec<u8>,
    count: usize,
    /// The cache file's mtime: entries changed at or after it are racy.
    pub(super) written: (i64, u32),
    pub(super) status: CacheStatus,
}

impl Loaded {
    /// No cache (not consulted).
    pub(super) fn not_used() -> Loaded {
        Loaded::empty(CacheStatus::NotUsed)
    }

    fn empty(status: CacheStatus) -> Loaded {
        Loaded {
            buf: Vec::new(),
            count: 0,
            written: (i64::MIN, 0),
            status,
        }
    }

    /// The number of records.
    pub(super) fn len(&self) -> usize {
        self.count
    }

    /// Whether a valid cache was read.
    pub(super) fn is_loaded(&self) -> bool {
        self.status == CacheStatus::Loaded
    }

    /// A cursor for lookups in increasing path order.
    pub(super) fn cursor(&self) -> Cursor<'_> {
        let end = self.buf.len().saturating_sub(TRAILER);
        let mut c = Cursor {
            rest: self.buf.get(HEADER..end).unwrap_or_default(),
            left: self.count,
            path: Vec::new(),
            current: None,
        };
        c.advance();
        c
    }
}

/// Sequential lookups in a validated cache.
pub(super) struct Cursor<'a> {
    /// The records after the current one.
    rest: &'a [u8],
    left: usize,
    /// The current record's path.
    path: Vec<u8>,
    current: Option<(Stat, Digest)>,
}

impl Cursor<'_> {
    /// Moves to the next record (the cache was validated: no bounds fail).
    fn advance(&mut self) {
        if self.left == 0 {
            self.current = None;
            return;
        }
        self.left -= 1;
        let (shared, n) = varint(self.rest).expect("validated");
        let (len, m) = varint(&self.rest[n..]).expect("validated");
        let at = n + m;
        self.path.truncate(shared);
        self.path.extend_from_slice(&self.rest[at..at + len]);
        self.current = Some(decode(&self.rest[at + len..at + len + FIXED]));
        self.rest = &self.rest[at + len + FIXED..];
    }

    /// The cached stat and digest of `path`; paths must be asked in
    /// increasing order.
    pub(super) fn find(&mut self, path: &[u8]) -> Option<(Stat, Digest)> {
        loop {
            let current = self.current?;
            match self.path.as_slice().cmp(path) {
                std::cmp::Ordering::Less => self.advance(),
                std::cmp::Ordering::Equal => {
                    self.advance();
                    return Some(current);
                }
                std::cmp::Ordering::Greater => return None,
            }
        }
    }
}

/// An unsigned LEB128 number and its length in bytes.
fn varint(b: &[u8]) -> Option<(usize, usize)> {
    let mut v: u64 = 0;
    for (i, &byte) in b.iter().enumerate().take(10) {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((usize::try_from(v).ok()?, i + 1));
        }
    }
    None
}

fn put_varint(out: &mut Vec<u8>, mut v: usize) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    i64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// A record's fixed part.
fn decode(r: &[u8]) -> (Stat, Digest) {
    let stat = Stat {
        size: u64_at(r, 0),
        mtime: (i64_at(r, 8), u32_at(r, 16)),
        ctime: (i64_at(r, 20), u32_at(r, 28)),
        ino: u64_at(r, 32),
        dev: u64_at(r, 40),
        mode: u32_at(r, 48),
    };
    let digest = Digest::from_bytes(r[52..84].try_into().expect("32 bytes"));
    (stat, digest)
}

/// Reads and validates the cache under `root`; never fails (an unusable
/// cache is reported in the status and ignored).
pub(super) fn load(root: &Path) -> Loaded {
    let dir = root.join(DIR);
    match fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Loaded::empty(CacheStatus::Ignored(format!("{DIR} is not a directory"))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Loaded::empty(CacheStatus::Absent),
        Err(e) => return Loaded::empty(CacheStatus::Ignored(format!("{DIR}: {e}"))),
    }
    let path = dir.join(NAME);
    let read = || -> io::Result<(Vec<u8>, fs::Metadata)> {
        // O_NOFOLLOW: a link in its place is refused; fstat: a regular file.
        let fd = rustix::fs::open(&path, FILE_FLAGS, rustix::fs::Mode::empty())?;
        let mut f = fs::File::from(fd);
        let meta = f.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::other("not a regular file"));
        }
        let mut buf = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0) + 1);
        f.read_to_end(&mut buf)?;
        Ok((buf, meta))
    };
    let (buf, meta) = match read() {
        Ok(x) => x,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Loaded::empty(CacheStatus::Absent),
        Err(e) => return Loaded::empty(CacheStatus::Ignored(e.to_string())),
    };
    match validate(&buf) {
        Ok(count) => Loaded {
            buf,
            count,
            written: (meta.mtime(), u32::try_from(meta.mtime_nsec()).unwrap_or(0)),
            status: CacheStatus::Loaded,
        },
        Err(reason) => Loaded::empty(CacheStatus::Ignored(reason)),
    }
}

/// Checks the whole file; returns the record count.
fn validate(buf: &[u8]) -> Result<usize, String> {
    if buf.len() < HEADER + TRAILER || &buf[..8] != MAGIC {
        return Err("not a state cache (bad magic or too short)".into());
    }
    let version = u32_at(buf, 8);
    if version != VERSION {
        return Err(format!("unknown cache version {version}"));
    }
    if u32_at(buf, 12) != 0 {
        return Err("unknown cache flags".into());
    }
    let (body, sum) = buf.split_at(buf.len() - TRAILER);
    if Digest::of(body).as_bytes() != sum {
        return Err("checksum mismatch (corrupt or truncated)".into());
    }
    let count = u64_at(buf, 16);
    let truncated = || "truncated record".to_string();
    let mut rest = &body[HEADER..];
    let mut path: Vec<u8> = Vec::new();
    let mut n = 0u64;
    while !rest.is_empty() {
        let (shared, a) = varint(rest).ok_or_else(truncated)?;
        let (len, b) = varint(&rest[a..]).ok_or_else(truncated)?;
        let at = a + b;
        if shared > path.len() || rest.len() - at < len || rest.len() - at - len < FIXED {
            return Err(truncated());
        }
        let suffix = &rest[at..at + len];
        // path[..shared] + suffix must sort strictly after path.
        if n > 0 && suffix <= &path[shared..] {
            return Err("records out of order".into());
        }
        if len == 0 {
            return Err("an empty path".into());
        }
        path.truncate(shared);
        path.extend_from_slice(suffix);
        rest = &rest[at + len + FIXED..];
        n += 1;
    }
    if n != count {
        return Err("record count mismatch".into());
    }
    usize::try_from(count).map_err(|_| "too many records".to_string())
}

/// The cache bytes for `tree` (regular files only).
fn serialize(tree: &Tree) -> Vec<u8> {
    let files = || tree.entries.iter().filter(|e| e.kind != Kind::Symlink);
    let mut out = Vec::with_capacity(HEADER + tree.entries.len() * (FIXED + 24) + TRAILER);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&(files().count() as u64).to_le_bytes());
    let mut prev: &[u8] = &[];
    for e in files() {
        let path = tree.path(e);
        let shared = prev.iter().zip(path).take_while(|(a, b)| a == b).count();
        put_varint(&mut out, shared);
        put_varint(&mut out, path.len() - shared);
        out.extend_from_slice(&path[shared..]);
        prev = path;
        let s = &e.stat;
        out.extend_from_slice(&s.size.to_le_bytes());
        out.extend_from_slice(&s.mtime.0.to_le_bytes());
        out.extend_from_slice(&s.mtime.1.to_le_bytes());
        out.extend_from_slice(&s.ctime.0.to_le_bytes());
        out.extend_from_slice(&s.ctime.1.to_le_bytes());
        out.extend_from_slice(&s.ino.to_le_bytes());
        out.extend_from_slice(&s.dev.to_le_bytes());
        out.extend_from_slice(&s.mode.to_le_bytes());
        out.extend_from_slice(e.digest.as_bytes());
    }
    let sum = Digest::of(&out);
    out.extend_from_slice(sum.as_bytes());
    out
}

/// Writes the cache for `tree` atomically (temporary file in
/// `.roundtable/`, then rename), creating `.roundtable/` if needed.
pub(super) fn store(root: &Path, tree: &Tree) -> Result<(), String> {
    let dir = root.join(DIR);
    let show = |e: &dyn std::fmt::Display| format!("{}: {e}", dir.display());
    crate::store::create_store_dir(&dir).map_err(|e| show(&e))?;
    // Never write through a symlinked `.roundtable`.
    match fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(show(&"not a directory")),
        Err(e) => return Err(show(&e)),
    }
    let bytes = serialize(tree);
    let mut temp = tempfile::Builder::new()
        .prefix(".state-cache.")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| show(&e))?;
    temp.write_all(&bytes).map_err(|e| show(&e))?;
    temp.persist(dir.join(NAME)).map_err(|e| show(&e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::tree_of;

    fn tree(paths: &[&str]) -> Tree {
        let items: Vec<(&[u8], Kind)> = paths.iter().map(|p| (p.as_bytes(), Kind::File)).collect();
        let mut t = tree_of(&items);
        for (n, e) in t.entries.iter_mut().enumerate() {
            e.stat = Stat {
                size: n as u64,
                mtime: (1, 2),
                ctime: (3, 4),
                ino: 5 + n as u64,
                dev: 6,
                mode: 0o100644,
            };
            e.digest = Digest::of(&[n as u8]);
        }
        t
    }

    fn loaded(bytes: Vec<u8>) -> Loaded {
        let count = validate(&bytes).expect("valid");
        Loaded {
            buf: bytes,
            count,
            written: (0, 0),
            status: CacheStatus::Loaded,
        }
    }

    #[test]
    fn round_trip_and_lookup() {
        let t = tree(&["a", "a.txt", "a/b", "a/bc/d", "a/bd", "c"]);
        let cache = loaded(serialize(&t));
        assert_eq!(cache.len(), 6);
        let mut c = cache.cursor();
        let want = |i: usize| Some((t.entries[i].stat, t.entries[i].digest));
        assert_eq!(c.find(b"a"), want(0));
        assert_eq!(c.find(b"a-"), None);
        assert_eq!(c.find(b"a/b"), want(2));
        assert_eq!(c.find(b"a/bd"), want(4), "skips a/bc/d");
        assert_eq!(c.find(b"b"), None);
        assert_eq!(c.find(b"c"), want(5));
        assert_eq!(c.find(b"d"), None);
        assert_eq!(loaded(serialize(&tree(&[]))).len(), 0);
    }

    #[test]
    fn refuses_damage() {
        let bytes = serialize(&tree(&["a", "b/c"]));
        for i in 0..bytes.len() {
            for bit in [0x01, 0x40, 0x80] {
                let mut bad = bytes.clone();
                bad[i] ^= bit;
                assert!(validate(&bad).is_err(), "flipped byte {i}");
            }
        }
        for n in 0..bytes.len() {
            assert!(validate(&bytes[..n]).is_err(), "truncated to {n}");
        }
        // Out-of-order or duplicate records with a valid checksum are
        // refused too.
        for paths in [&["b", "a"][..], &["a", "a"], &["a/b", "a"]] {
            let bytes = serialize(&tree(paths));
            assert_eq!(
                validate(&bytes),
                Err("records out of order".into()),
                "{paths:?}"
            );
        }
    }
}
