//! roundtable's SQLite store locks, held so that no other code in the
//! process can drop them. (The system-call hooks are `unsafe` FFI, so they
//! live here, not in the safe core.)
//!
//! SQLite's unix VFS locks `store.db` and `store.db-shm` with POSIX
//! advisory locks (`fcntl(F_SETLK)`), and POSIX locks belong to the
//! *process*: closing any descriptor of a file drops every lock the
//! process holds on it. SQLite copes with that for its own descriptors (it
//! defers closing them while it holds locks), but it cannot for another
//! SQLite library in the same process — Python's `sqlite3`, a host's own
//! libsqlite3 — whose open, read and close of the store silently release
//! the engine's locks. Another process then sees nobody using the store:
//! it resets the WAL index, or believes it is the last user, checkpoints
//! and deletes the WAL under the engine, and writes the engine
//! acknowledges land in a deleted file.
//!
//! So on Linux every lock the bundled SQLite takes is an *open file
//! description* lock (`F_OFD_SETLK`, Linux 3.15): it belongs to one
//! descriptor's open file, not to the process, and only the last close of
//! that open file drops it. SQLite lets a program replace the system calls
//! of its unix VFS (`xSetSystemCall`); [`install`] replaces `fcntl` and
//! `close` of the bundled copy (a host's other SQLite is not touched):
//!
//! - the first lock on a file `dup`s the descriptor it came on into the
//!   file's *lock descriptor*, and every lock and test of a lock
//!   (`F_SETLK`, `F_SETLKW`, `F_GETLK`) on any of SQLite's descriptors of
//!   that file is made on it as the `F_OFD_*` command: one open file per
//!   file per process owns the locks, exactly as the process did under
//!   POSIX, so SQLite's own bookkeeping (which assumes process-owned
//!   locks) still holds;
//! - the lock descriptor is closed with the last of SQLite's descriptors
//!   that locked through it; SQLite closes a descriptor only once it holds
//!   no lock on the file (or, for `-shm`, when the process leaves it), so
//!   that close drops exactly what POSIX would have dropped.
//!
//! Other processes see no difference: open-file-description locks and
//! POSIX locks conflict with each other, so processes (this library, the
//! CLI, another program's SQLite) still share one store, readers beside a
//! writer. Another SQLite in *this* process is now one more peer: its locks
//! and the engine's exclude each other as two processes' would, and its
//! close drops only its own.
//!
//! Limits: elsewhere than Linux on x86-64 and AArch64 (and on a kernel or
//! file system that refuses `F_OFD_*`: `EINVAL`), SQLite's POSIX locks are
//! used as they are, and another SQLite library in the process must not
//! open the store. A `fork()` child (whose descriptors share the parent's
//! open files, and so its locks) locks as POSIX does: it must not use the
//! parent's engine (`inherited_engine`), and a new engine it opens has the
//! POSIX locks' limit.

/// Make every lock the bundled SQLite takes from now on an
/// open-file-description lock (see the crate's documentation). The store
/// calls it before it opens its first connection; later calls do nothing.
pub fn install() {
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(ofd::install);
    }
}

/// Whether [`install`] put the open-file-description locks in place in
/// this process (`false` before it, elsewhere than Linux on x86-64 and
/// AArch64, or when SQLite refused the replacement).
pub fn installed() -> bool {
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    {
        ofd::OWNER.load(std::sync::atomic::Ordering::Acquire) != 0
    }
    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    {
        false
    }
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod ofd {
    use libc::{c_int, c_void};
    use std::collections::HashMap;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Mutex;

    /// The process that installed the hooks (0: not installed). In a
    /// `fork()` child the hooks step aside: the child's descriptors share
    /// the parent's open files, and so would its locks.
    pub(super) static OWNER: AtomicU32 = AtomicU32::new(0);

    /// A file, as `fstat` names it.
    type FileKey = (u64, u64);

    /// Which lock descriptor each of SQLite's descriptors locks through.
    struct Table {
        /// SQLite's descriptors that locked → their file.
        fds: HashMap<RawFd, FileKey>,
        /// Each file's lock descriptor, and how many of SQLite's
        /// descriptors lock through it.
        files: HashMap<FileKey, (OwnedFd, usize)>,
    }

    static TABLE: Mutex<Option<Table>> = Mutex::new(None);

    fn table() -> std::sync::MutexGuard<'static, Option<Table>> {
        TABLE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn errno() -> c_int {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
    }

    fn set_errno(e: c_int) {
        // SAFETY: errno is this thread's.
        unsafe { *libc::__errno_location() = e };
    }

    /// Whether this is still the process that installed the hooks.
    fn owner() -> bool {
        OWNER.load(Ordering::Acquire) == std::process::id()
    }

    /// The lock descriptor of `fd`'s file (made on its first lock), with
    /// `fd` counted as one of its users.
    fn lock_fd(fd: RawFd) -> Result<RawFd, c_int> {
        let mut guard = table();
        let table = guard.get_or_insert_with(|| Table {
            fds: HashMap::new(),
            files: HashMap::new(),
        });
        if let Some(key) = table.fds.get(&fd) {
            if let Some((lock, _)) = table.files.get(key) {
                return Ok(lock.as_raw_fd());
            }
        }
        // SAFETY: an all-zero `stat` is a valid value to overwrite.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is SQLite's open descriptor; `st` is writable.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return Err(errno());
        }
        let key = (st.st_dev, st.st_ino);
        let lock = match table.files.get_mut(&key) {
            Some((lock, users)) => {
                *users += 1;
                lock.as_raw_fd()
            }
            None => {
                // SAFETY: duplicating SQLite's open descriptor, above the
                // standard streams, closed on exec.
                let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
                if dup < 0 {
                    return Err(errno());
                }
                // SAFETY: `dup` was just made and is owned by nothing else.
                let owned = unsafe { OwnedFd::from_raw_fd(dup) };
                table.files.insert(key, (owned, 1));
                dup
            }
        };
        table.fds.insert(fd, key);
        Ok(lock)
    }

    /// SQLite's `fcntl`: locks and lock tests as open-file-description
    /// locks on the file's lock descriptor; everything else as it is.
    ///
    /// SQLite calls it through a variadic `int (*)(int, int, ...)`; on
    /// the targets this module is built for, a variadic call passes its
    /// integer and pointer arguments exactly as a non-variadic one does.
    unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: *mut c_void) -> c_int {
        let ofd = match cmd {
            libc::F_SETLK => libc::F_OFD_SETLK,
            libc::F_SETLKW => libc::F_OFD_SETLKW,
            libc::F_GETLK => libc::F_OFD_GETLK,
            // SAFETY: the call SQLite made, passed on.
            _ => return unsafe { libc::fcntl(fd, cmd, arg) },
        };
        if arg.is_null() || !owner() {
            // SAFETY: as above.
            return unsafe { libc::fcntl(fd, cmd, arg) };
        }
        let theirs = arg.cast::<libc::flock>();
        // SAFETY: for the lock commands SQLite passes a `struct flock`.
        let mut lock = unsafe { theirs.read() };
        // An open-file-description lock takes no pid (SQLite leaves it
        // unset).
        lock.l_pid = 0;
        let via = match lock_fd(fd) {
            Ok(via) => via,
            Err(e) => {
                set_errno(e);
                return -1;
            }
        };
        // SAFETY: `via` stays open while `fd` is (it is one of its users),
        // and SQLite does not close `fd` while it locks through it.
        let got = unsafe { libc::fcntl(via, ofd, &mut lock as *mut libc::flock) };
        if got == -1 && errno() == libc::EINVAL {
            // A kernel or file system without open-file-description locks:
            // SQLite's own call.
            // SAFETY: as above.
            return unsafe { libc::fcntl(fd, cmd, arg) };
        }
        if got == 0 && cmd == libc::F_GETLK {
            // SAFETY: SQLite's `struct flock`, writable.
            unsafe { theirs.write(lock) };
        }
        got
    }

    /// SQLite's `close`: a descriptor that locked stops using its file's
    /// lock descriptor, and the last one closes it.
    unsafe extern "C" fn close(fd: c_int) -> c_int {
        if owner() {
            let released = {
                let mut guard = table();
                guard.as_mut().and_then(|table| {
                    let key = table.fds.remove(&fd)?;
                    let (_, users) = table.files.get_mut(&key)?;
                    *users -= 1;
                    if *users == 0 {
                        table.files.remove(&key).map(|(lock, _)| lock)
                    } else {
                        None
                    }
                })
            };
            drop(released);
        }
        // SAFETY: the call SQLite made, passed on.
        unsafe { libc::close(fd) }
    }

    /// Replace the bundled SQLite's `close` and `fcntl` (see the crate's
    /// documentation).
    pub(super) fn install() {
        use rusqlite::ffi;
        OWNER.store(std::process::id(), Ordering::Release);
        // SAFETY: `sqlite3_vfs_find` initializes SQLite and returns the
        // default VFS (or NULL); no connection of this library is open yet
        // (the store calls this before its first), and a replaced system
        // call is a plain function pointer read by every later call.
        let installed = unsafe {
            let vfs = ffi::sqlite3_vfs_find(std::ptr::null());
            match vfs.as_ref().and_then(|v| v.xSetSystemCall) {
                Some(set) => {
                    let close_fn: unsafe extern "C" fn(c_int) -> c_int = close;
                    let fcntl_fn: unsafe extern "C" fn(c_int, c_int, *mut c_void) -> c_int = fcntl;
                    // SAFETY (transmutes): SQLite stores each call as an
                    // untyped function pointer and calls it with the
                    // system call's own signature.
                    let close_ptr: ffi::sqlite3_syscall_ptr = Some(std::mem::transmute::<
                        unsafe extern "C" fn(c_int) -> c_int,
                        unsafe extern "C" fn(),
                    >(close_fn));
                    let fcntl_ptr: ffi::sqlite3_syscall_ptr = Some(std::mem::transmute::<
                        unsafe extern "C" fn(c_int, c_int, *mut c_void) -> c_int,
                        unsafe extern "C" fn(),
                    >(fcntl_fn));
                    set(vfs, c"close".as_ptr(), close_ptr) == ffi::SQLITE_OK
                        && set(vfs, c"fcntl".as_ptr(), fcntl_ptr) == ffi::SQLITE_OK
                }
                None => false,
            }
        };
        if !installed {
            OWNER.store(0, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    /// A lock SQLite holds is seen by a POSIX lock test of this very
    /// process (an open-file-description lock conflicts with it), and
    /// survives another descriptor of the file being closed.
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    #[test]
    fn a_held_lock_survives_another_descriptor_closing() {
        super::install();
        assert!(super::installed());
        let dir = std::env::temp_dir().join(format!("rt-locks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("t.db");
        let _ = std::fs::remove_file(&path);
        let conn = rusqlite::Connection::open(&path).expect("open");
        conn.execute_batch("CREATE TABLE t(x); BEGIN IMMEDIATE; INSERT INTO t VALUES (1);")
            .expect("write, holding the reserved lock");
        let posix_test = || {
            let f = std::fs::File::options()
                .read(true)
                .write(true)
                .open(&path)
                .expect("open");
            // SAFETY: a zeroed flock is valid; F_GETLK fills it.
            let mut l: libc::flock = unsafe { std::mem::zeroed() };
            l.l_type = libc::F_WRLCK as _;
            l.l_whence = libc::SEEK_SET as _;
            l.l_start = 0;
            l.l_len = 0;
            // SAFETY: a valid descriptor and flock.
            let got = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETLK, &mut l) };
            assert_eq!(got, 0);
            // Closing `f` here is what another SQLite's close does.
            l.l_type != libc::F_UNLCK as _
        };
        assert!(posix_test(), "the reserved lock is seen");
        assert!(posix_test(), "and still held after another close");
        conn.execute_batch("COMMIT").expect("commit");
        assert!(!posix_test(), "released by the commit");
        drop(conn);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
