//! Newline-delimited JSON-RPC over a byte stream (the stdio transport),
//! with the message size limit.
//!
//! Every line gets an answer or is a notification: a line over the limit
//! gets a JSON-RPC error naming the limit (its `id` when the start of the
//! line shows it, else `null`) and is skipped without being buffered; a
//! line that is not JSON, or not a JSON-RPC message, gets its error from
//! [`wire::decode`]; and the server keeps serving.

use std::sync::Arc;

use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleServer;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

use crate::wire::{self, Decoded, Refusal};

/// The name a refusal gives this transport's limit.
const TRANSPORT: &str = "stdio";

/// One JSON-RPC message per line in, one per line out.
pub(crate) struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line being read; kept across a cancelled `receive`.
    line: Vec<u8>,
    limit: usize,
    /// While skipping the rest of an oversized line: its first bytes.
    skipping: Option<Vec<u8>>,
    write: Arc<Mutex<W>>,
}

/// One step of reading a line.
enum Read {
    /// A whole line is in `line` (its newline stripped).
    Line,
    /// A line over the limit ended; here are its first bytes.
    Oversized(Vec<u8>),
    /// The stream ended or failed.
    End,
}

impl<R, W> LineTransport<R, W>
where
    R: tokio::io::AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// A transport over `read` and `write` taking lines of at most `limit`
    /// bytes.
    pub(crate) fn new(read: R, write: W, limit: usize) -> Self {
        LineTransport {
            read: BufReader::with_capacity(64 << 10, read),
            line: Vec::new(),
            limit,
            skipping: None,
            write: Arc::new(Mutex::new(write)),
        }
    }

    /// Read up to the next newline without holding more than `limit` bytes.
    /// Cancel-safe: what was read stays in `self`.
    async fn read_line(&mut self) -> Read {
        loop {
            let available = match self.read.fill_buf().await {
                Ok([]) | Err(_) => return Read::End,
                Ok(available) => available,
            };
            let newline = memchr(available);
            let take = newline.map_or(available.len(), |i| i + 1);
            let chunk = &available[..newline.unwrap_or(available.len())];
            if let Some(prefix) = &mut self.skipping {
                let room = wire::ID_PREFIX_BYTES.saturating_sub(prefix.len());
                prefix.extend_from_slice(&chunk[..chunk.len().min(room)]);
            } else if self.line.len().saturating_add(chunk.len()) > self.limit {
                let mut prefix = std::mem::take(&mut self.line);
                prefix.truncate(wire::ID_PREFIX_BYTES);
                let room = wire::ID_PREFIX_BYTES.saturating_sub(prefix.len());
                prefix.extend_from_slice(&chunk[..chunk.len().min(room)]);
                self.skipping = Some(prefix);
            } else {
                self.line.extend_from_slice(chunk);
            }
            AsyncBufRead::consume(std::pin::Pin::new(&mut self.read), take);
            if newline.is_some() {
                return match self.skipping.take() {
                    Some(prefix) => Read::Oversized(prefix),
                    None => Read::Line,
                };
            }
        }
    }

    /// Write `refusal` on a task of its own: `receive` may be cancelled
    /// (the SDK polls it beside its other work), a half-written line must
    /// not be.
    fn answer(&self, refusal: &Refusal) {
        let mut bytes = refusal.to_bytes();
        bytes.push(b'\n');
        let write = Arc::clone(&self.write);
        tokio::spawn(async move {
            // A closed output ends the session at the next read or send.
            let _ = write_all(&write, &bytes).await;
        });
    }
}

fn memchr(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

async fn write_all<W: AsyncWrite + Unpin>(write: &Mutex<W>, bytes: &[u8]) -> std::io::Result<()> {
    let mut write = write.lock().await;
    write.write_all(bytes).await?;
    write.flush().await
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: tokio::io::AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = Arc::clone(&self.write);
        async move {
            let mut bytes = serde_json::to_vec(&item)?;
            bytes.push(b'\n');
            write_all(&write, &bytes).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let refusal = match self.read_line().await {
                Read::End => return None,
                Read::Oversized(prefix) => wire::oversized(&prefix, self.limit, TRANSPORT),
                Read::Line => {
                    let mut line = std::mem::take(&mut self.line);
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    let decoded = if line.iter().all(u8::is_ascii_whitespace) {
                        Decoded::Ignored
                    } else {
                        wire::decode(&line)
                    };
                    // Keep the buffer for the next line, but not the
                    // memory of one huge line.
                    line.clear();
                    line.shrink_to(1 << 20);
                    self.line = line;
                    match decoded {
                        Decoded::Message(message) => return Some(*message),
                        Decoded::Ignored => continue,
                        Decoded::Refused(refusal) => refusal,
                    }
                }
            };
            self.answer(&refusal);
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.shutdown().await
    }
}
