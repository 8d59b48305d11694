//! Standard input and output as the server's byte streams.
//!
//! tokio's `stdin()`/`stdout()` do every read and write on a blocking
//! thread: two thread hand-offs per message, which cost more than the tool
//! call itself (`bench/mcp_bench.py`). When standard input and output are a
//! pipe or a Unix socket — how MCP clients launch a server — they are
//! polled by the runtime instead; anything else (a file, a terminal) keeps
//! tokio's portable streams.

use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};

type Reader = Pin<Box<dyn AsyncRead + Send>>;
type Writer = Pin<Box<dyn AsyncWrite + Send>>;

/// Standard input and output; must run inside the runtime.
pub(crate) fn transport() -> (Reader, Writer) {
    let reader = polled::reader().unwrap_or_else(|| Box::pin(tokio::io::stdin()));
    let writer = polled::writer().unwrap_or_else(|| Box::pin(tokio::io::stdout()));
    (reader, writer)
}

#[cfg(unix)]
mod polled {
    use std::fs::File;
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt;

    use tokio::net::unix::pipe;

    use super::{Reader, Writer};

    enum Kind {
        Fifo(File),
        Socket(tokio::net::UnixStream),
    }

    /// A duplicate of `fd`, classified; `None` for anything but a pipe or a
    /// Unix socket.
    fn classify(fd: std::os::fd::BorrowedFd<'_>) -> Option<Kind> {
        let file = File::from(fd.try_clone_to_owned().ok()?);
        let kind = file.metadata().ok()?.file_type();
        if kind.is_fifo() {
            return Some(Kind::Fifo(file));
        }
        if kind.is_socket() {
            let socket = std::os::unix::net::UnixStream::from(OwnedFd::from(file));
            // getsockname refuses a socket of another family.
            socket.local_addr().ok()?;
            socket.set_nonblocking(true).ok()?;
            return tokio::net::UnixStream::from_std(socket)
                .ok()
                .map(Kind::Socket);
        }
        None
    }

    pub(super) fn reader() -> Option<Reader> {
        match classify(std::io::stdin().as_fd())? {
            Kind::Fifo(file) => Some(Box::pin(pipe::Receiver::from_file(file).ok()?)),
            Kind::Socket(socket) => Some(Box::pin(socket)),
        }
    }

    pub(super) fn writer() -> Option<Writer> {
        match classify(std::io::stdout().as_fd())? {
            Kind::Fifo(file) => Some(Box::pin(pipe::Sender::from_file(file).ok()?)),
            Kind::Socket(socket) => Some(Box::pin(socket)),
        }
    }
}

#[cfg(not(unix))]
mod polled {
    use super::{Reader, Writer};

    pub(super) fn reader() -> Option<Reader> {
        None
    }

    pub(super) fn writer() -> Option<Writer> {
        None
    }
}
