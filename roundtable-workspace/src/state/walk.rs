//! Listing the tree and hashing files, in parallel, without following links.
//!
//! Directories are listed by a small pool of threads sharing a work list;
//! each listing is sorted on its own (names, with a directory's name
//! followed by `/`), and a depth-first pass over the sorted listings yields
//! every entry in full-path byte order without a global sort.

use super::ignore::{read_gitignore, Level, Rules};
use super::{full_path, io_err, Digest, Entry, Failure, Kind, Stat, Tree};
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
use rustix::io::Errno;
use sha2::Digest as _;
use std::cmp::Ordering;
use std::fs;
use std::io::{self, Read as _};
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{self, AtomicBool, AtomicUsize};
use std::sync::{Arc, Condvar, Mutex};

/// Flags for every directory opened during the walk: never through a link.
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Flags for every file read: never through a link, never blocking on a
/// FIFO swapped in after the listing.
pub(super) const FILE_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NONBLOCK)
    .union(OFlags::CLOEXEC);

/// The read buffer per hashing thread.
const READ_BUF: usize = 256 * 1024;

/// Whether a directory entry is left out of the state.
fn excluded(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b".git") || name.eq_ignore_ascii_case(b".roundtable")
}

/// Opens the directory `rel` (`/`-separated, relative to the root) one
/// component at a time from the root's descriptor, following no link.
fn open_dir(root: BorrowedFd<'_>, rel: &[u8]) -> rustix::io::Result<OwnedFd> {
    let mut components = rel.split(|&b| b == b'/');
    let first = components.next().filter(|c| !c.is_empty()).unwrap_or(b".");
    let mut fd = rustix::fs::openat(root, first, DIR_FLAGS, Mode::empty())?;
    for c in components {
        fd = rustix::fs::openat(&fd, c, DIR_FLAGS, Mode::empty())?;
    }
    Ok(fd)
}

/// An error from an `*at` call on something the walk listed: a vanished or
/// replaced entry means "start over", anything else is fatal.
fn at_failure(root: &Path, rel: &[u8], e: Errno) -> Failure {
    let path = full_path(root, rel);
    match e {
        Errno::NOENT | Errno::NOTDIR | Errno::LOOP => Failure::Unstable(path),
        e => Failure::Fatal(io_err(&path, e.into())),
    }
}

/// One directory's entries, sorted.
struct Listing {
    /// The entries' names, concatenated.
    names: Vec<u8>,
    children: Vec<Child>,
}

struct Child {
    start: u32,
    len: u32,
    node: Node,
}

enum Node {
    /// A subdirectory: the id of its listing.
    Dir(usize),
    File(Kind, Stat),
    Link(Digest),
}

/// Path order among siblings: names compared bytewise, a directory's name
/// as if followed by `/` (what its entries' full paths continue with).
fn sibling_order(a: &[u8], a_dir: bool, b: &[u8], b_dir: bool) -> Ordering {
    let n = a.len().min(b.len());
    match a[..n].cmp(&b[..n]) {
        Ordering::Equal => {
            let next = |s: &[u8], dir: bool| s.get(n).copied().or(dir.then_some(b'/'));
            next(a, a_dir).cmp(&next(b, b_dir))
        }
        o => o,
    }
}

/// A directory waiting to be listed.
struct Job {
    id: usize,
    rel: Vec<u8>,
    /// The directory holding this one (the walk's root has none): opening
    /// from it costs one `openat`, not one per component of `rel`.
    parent: Option<Arc<OwnedFd>>,
    /// The `.gitignore` files of the directories above this one.
    ignore: Option<Arc<Level>>,
}

/// The shared work list of the parallel walk.
struct Queue {
    jobs: Vec<Job>,
    /// Directories taken but not finished.
    active: usize,
    failure: Option<Failure>,
}

/// Lists every entry under `root` that `rules` do not ignore (`above`: the
/// `.gitignore` files of the directories above the walk's root), `threads`
/// directories at a time, and returns them in path order.
pub(super) fn walk(
    root: &Path,
    root_fd: BorrowedFd<'_>,
    threads: usize,
    rules: &Rules<'_>,
    above: Option<Arc<Level>>,
) -> Result<Tree, Failure> {
    let queue = Mutex::new(Queue {
        jobs: vec![Job {
            id: 0,
            rel: Vec::new(),
            parent: None,
            ignore: above,
        }],
        active: 0,
        failure: None,
    });
    let next_id = AtomicUsize::new(1);
    let ready = Condvar::new();
    let worker = || -> Vec<(usize, Listing)> {
        let mut out = Vec::new();
        let mut found = Vec::new();
        loop {
            let job = {
                let mut q = queue.lock().expect("walk queue poisoned");
                loop {
                    if q.failure.is_some() {
                        return out;
                    }
                    if let Some(job) = q.jobs.pop() {
                        q.active += 1;
                        break job;
                    }
                    if q.active == 0 {
                        return out;
                    }
                    q = ready.wait(q).expect("walk queue poisoned");
                }
            };
            let result = scan_dir(root, root_fd, rules, &job, &next_id, &mut found);
            let mut q = queue.lock().expect("walk queue poisoned");
            q.active -= 1;
            q.jobs.append(&mut found);
            match result {
                Ok(listing) => out.push((job.id, listing)),
                Err(f) => {
                    q.failure.get_or_insert(f);
                }
            }
            ready.notify_all();
        }
    };
    let parts = if threads <= 1 {
        vec![worker()]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads).map(|_| s.spawn(worker)).collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("walk thread panicked"))
                .collect()
        })
    };
    if let Some(f) = queue.into_inner().expect("walk queue poisoned").failure {
        return Err(f);
    }
    let mut listings: Vec<Option<Listing>> = Vec::new();
    listings.resize_with(next_id.load(atomic::Ordering::Relaxed), || None);
    let (mut files, mut bytes) = (0, 0);
    for (id, listing) in parts.into_iter().flatten() {
        files += listing.children.len();
        bytes += listing.names.len();
        listings[id] = Some(listing);
    }
    Ok(flatten(&listings, files, bytes))
}

/// The entries of the sorted listings, depth first: full-path order.
fn flatten(listings: &[Option<Listing>], files: usize, name_bytes: usize) -> Tree {
    let mut tree = Tree {
        // Each path repeats its directory's path; a rough guess is plenty.
        paths: Vec::with_capacity(name_bytes * 3),
        entries: Vec::with_capacity(files),
    };
    let listing = |id: usize| {
        listings[id]
            .as_ref()
            .expect("every directory found was listed")
    };
    // (listing id, next child, length of the directory's path in `prefix`)
    let mut stack = vec![(0usize, 0usize, 0usize)];
    let mut prefix: Vec<u8> = Vec::new();
    while let Some(top) = stack.last_mut() {
        let (id, next, dir_len) = *top;
        let l = listing(id);
        let Some(child) = l.children.get(next) else {
            stack.pop();
            continue;
        };
        top.1 += 1;
        let name = &l.names[child.start as usize..(child.start + child.len) as usize];
        prefix.truncate(dir_len);
        if dir_len > 0 {
            prefix.push(b'/');
        }
        prefix.extend_from_slice(name);
        let (kind, stat, digest) = match child.node {
            Node::Dir(sub) => {
                stack.push((sub, 0, prefix.len()));
                continue;
            }
            Node::File(kind, stat) => (kind, stat, Digest::from_bytes([0; 32])),
            Node::Link(digest) => (Kind::Symlink, Stat::default(), digest),
        };
        tree.entries.push(Entry {
            start: tree.paths.len(),
            len: prefix.len(),
            kind,
            stat,
            digest,
        });
        tree.paths.extend_from_slice(&prefix);
    }
    tree
}

/// Lists one directory; subdirectories become jobs in `found`.
fn scan_dir(
    root: &Path,
    root_fd: BorrowedFd<'_>,
    rules: &Rules<'_>,
    job: &Job,
    next_id: &AtomicUsize,
    found: &mut Vec<Job>,
) -> Result<Listing, Failure> {
    let rel = job.rel.as_slice();
    let fd = match &job.parent {
        Some(parent) => {
            let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
            rustix::fs::openat(&**parent, name, DIR_FLAGS, Mode::empty())
        }
        None => open_dir(root_fd, rel),
    }
    .map_err(|e| at_failure(root, rel, e))?;
    // This directory's own `.gitignore` applies to its entries and below.
    let ignore = match read_gitignore(fd.as_fd(), &full_path(root, rel)).map_err(Failure::Fatal)? {
        Some(bytes) => rules.push(job.ignore.as_ref(), rel, &bytes),
        None => job.ignore.clone(),
    };
    let inert = rules.inert(ignore.as_ref());
    // A handle of its own for the subdirectories' jobs (the listing's is
    // consumed by reading), made when the first one is found.
    let mut handle: Option<Arc<OwnedFd>> = None;
    let mut dir = Dir::new(fd).map_err(|e| at_failure(root, rel, e))?;
    let mut names = Vec::new();
    let mut children = Vec::new();
    let mut path = Vec::new();
    let child_path = |path: &mut Vec<u8>, name: &[u8]| {
        path.clear();
        if !rel.is_empty() {
            path.extend_from_slice(rel);
            path.push(b'/');
        }
        path.extend_from_slice(name);
    };
    while let Some(item) = dir.read() {
        let item = item.map_err(|e| Failure::Fatal(io_err(&full_path(root, rel), e.into())))?;
        let cname = item.file_name();
        let name = cname.to_bytes();
        if name == b"." || name == b".." || excluded(name) {
            continue;
        }
        let dirfd = dir.fd().map_err(|e| at_failure(root, rel, e))?;
        let mut file_type = item.file_type();
        let mut stat = None;
        if file_type == FileType::RegularFile || file_type == FileType::Unknown {
            let st = rustix::fs::statat(dirfd, cname, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| {
                child_path(&mut path, name);
                at_failure(root, &path, e)
            })?;
            let now = FileType::from_raw_mode(st.st_mode);
            if file_type == FileType::RegularFile && now != file_type {
                child_path(&mut path, name);
                return Err(Failure::Unstable(full_path(root, &path)));
            }
            file_type = now;
            stat = Some(Stat::of(&st));
        }
        if !inert {
            child_path(&mut path, name);
            if rules.ignored(ignore.as_ref(), &path, file_type == FileType::Directory) {
                continue;
            }
        }
        let node = match (file_type, stat) {
            (FileType::Directory, _) => {
                let id = next_id.fetch_add(1, atomic::Ordering::Relaxed);
                child_path(&mut path, name);
                let parent = match &handle {
                    Some(h) => Arc::clone(h),
                    None => {
                        let h = Arc::new(
                            rustix::io::fcntl_dupfd_cloexec(dirfd, 0)
                                .map_err(|e| at_failure(root, rel, e))?,
                        );
                        handle = Some(Arc::clone(&h));
                        h
                    }
                };
                found.push(Job {
                    id,
                    rel: path.clone(),
                    parent: Some(parent),
                    ignore: ignore.clone(),
                });
                Node::Dir(id)
            }
            (FileType::RegularFile, Some(stat)) => {
                // Executable as git decides it: the owner's bit alone.
                let kind = if stat.mode & 0o100 != 0 {
                    Kind::Exec
                } else {
                    Kind::File
                };
                Node::File(kind, stat)
            }
            (FileType::Symlink, _) => match rustix::fs::readlinkat(dirfd, cname, Vec::new()) {
                Ok(target) => Node::Link(Digest::of(target.as_bytes())),
                Err(e) => {
                    child_path(&mut path, name);
                    // EINVAL: replaced by something that is not a link.
                    return Err(match e {
                        Errno::INVAL => Failure::Unstable(full_path(root, &path)),
                        e => at_failure(root, &path, e),
                    });
                }
            },
            // FIFOs, sockets and devices are not part of the state.
            _ => continue,
        };
        let start = u32::try_from(names.len()).expect("a directory's names fit in 4 GiB");
        let len = u32::try_from(name.len()).expect("a name is short");
        names.extend_from_slice(name);
        children.push(Child { start, len, node });
    }
    let name_of = |c: &Child| &names[c.start as usize..(c.start + c.len) as usize];
    children.sort_unstable_by(|a, b| {
        let a_dir = matches!(a.node, Node::Dir(_));
        let b_dir = matches!(b.node, Node::Dir(_));
        sibling_order(name_of(a), a_dir, name_of(b), b_dir)
    });
    Ok(Listing { names, children })
}

/// Hashes the regular files `todo` (indices into `tree.entries`, in path
/// order) on `threads` threads; returns (index, digest, bytes read).
pub(super) fn hash_all(
    root: &Path,
    root_fd: BorrowedFd<'_>,
    tree: &Tree,
    todo: &[usize],
    threads: usize,
) -> Result<Vec<(usize, Digest, u64)>, Failure> {
    const CHUNK: usize = 64;
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let worker = || -> Result<Vec<(usize, Digest, u64)>, Failure> {
        let mut buf = vec![0u8; READ_BUF];
        // The directory of the previous file: consecutive files share it.
        let mut dir: Option<(&[u8], OwnedFd)> = None;
        let mut out = Vec::new();
        let fail = |f: Failure| {
            failed.store(true, atomic::Ordering::Relaxed);
            f
        };
        loop {
            if failed.load(atomic::Ordering::Relaxed) {
                return Ok(out);
            }
            let start = next.fetch_add(CHUNK, atomic::Ordering::Relaxed);
            if start >= todo.len() {
                return Ok(out);
            }
            for &i in &todo[start..(start + CHUNK).min(todo.len())] {
                let e = &tree.entries[i];
                let path = tree.path(e);
                let (parent, name) = match path.iter().rposition(|&b| b == b'/') {
                    Some(at) => (&path[..at], &path[at + 1..]),
                    None => (&path[..0], path),
                };
                let fd = match &dir {
                    Some((p, fd)) if *p == parent => fd,
                    _ => {
                        let fd = open_dir(root_fd, parent)
                            .map_err(|err| fail(at_failure(root, parent, err)))?;
                        &dir.insert((parent, fd)).1
                    }
                };
                match hash_file(fd.as_fd(), name, &e.stat, &mut buf) {
                    Ok((d, n)) => out.push((i, d, n)),
                    Err(err) => {
                        return Err(fail(match err {
                            HashError::Unstable => Failure::Unstable(full_path(root, path)),
                            HashError::At(err) => at_failure(root, path, err),
                            HashError::Io(err) => {
                                Failure::Fatal(io_err(&full_path(root, path), err))
                            }
                        }))
                    }
                }
            }
        }
    };
    if threads <= 1 || todo.len() <= CHUNK {
        return worker();
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|_| s.spawn(worker)).collect();
        let mut all = Vec::with_capacity(todo.len());
        let mut failure = None;
        for h in handles {
            match h.join().expect("hash thread panicked") {
                Ok(mut part) => all.append(&mut part),
                Err(f) => {
                    failure.get_or_insert(f);
                }
            }
        }
        match failure {
            Some(f) => Err(f),
            None => Ok(all),
        }
    })
}

enum HashError {
    /// Not the file that was listed any more.
    Unstable,
    At(Errno),
    Io(io::Error),
}

/// Reads and hashes the regular file `name` in `dir`, checking it is still
/// the file that was listed (same device and inode, still regular).
fn hash_file(
    dir: BorrowedFd<'_>,
    name: &[u8],
    listed: &Stat,
    buf: &mut [u8],
) -> Result<(Digest, u64), HashError> {
    let fd = rustix::fs::openat(dir, name, FILE_FLAGS, Mode::empty()).map_err(HashError::At)?;
    let st = rustix::fs::fstat(&fd).map_err(HashError::At)?;
    let now = Stat::of(&st);
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile
        || now.ino != listed.ino
        || now.dev != listed.dev
    {
        return Err(HashError::Unstable);
    }
    let mut file = fs::File::from(fd);
    let mut hasher = sha2::Sha256::new();
    let mut total = 0u64;
    loop {
        match file.read(buf) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buf[..n]);
                total += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(HashError::Io(e)),
        }
    }
    Ok((Digest::from_bytes(hasher.finalize().into()), total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sibling_order_is_full_path_order() {
        // (name, is_dir): compare as the full paths of their contents would.
        let cases: &[(&[u8], bool, &[u8], bool)] = &[
            (b"a.txt", false, b"a", true), // "a.txt" < "a/…"
            (b"a", true, b"a0", false),    // "a/…" < "a0"
            (b"a", false, b"a.txt", false),
            (b"A", false, b"a", false),
            (b"b", true, b"c", true),
        ];
        for (a, ad, b, bd) in cases {
            assert_eq!(sibling_order(a, *ad, b, *bd), Ordering::Less);
            assert_eq!(sibling_order(b, *bd, a, *ad), Ordering::Greater);
            let full = |n: &[u8], d: bool| {
                let mut p = n.to_vec();
                if d {
                    p.extend_from_slice(b"/x");
                }
                p
            };
            assert!(full(a, *ad) < full(b, *bd));
        }
    }
}
