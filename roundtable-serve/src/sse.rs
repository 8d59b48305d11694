//! The event stream (`GET …/events`): the store's audit events as
//! server-sent events, `id: <seq>`, `event: <kind>`, `data: <event JSON>`.
//!
//! One thread per stream, asleep in the engine's `events.wait` (woken by
//! commits, no polling) for at most the heartbeat interval; a wait that
//! times out writes a `: heartbeat` comment. Streams count against the
//! same per-actor cap as MCP's waits ([`roundtable_mcp::Waits`]). A client
//! that goes away is noticed at once (the response body is dropped): its
//! wait is cancelled and its thread and place freed.
//!
//! A stream starts after `Last-Event-ID` (a reconnecting `EventSource`),
//! else after `?after=SEQ`, else at the log's head (only what happens
//! next). Each event is sent once, in `seq` order, so a client resuming
//! from the last id it saw misses nothing and sees nothing twice.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Bytes, Frame};
use roundtable::{Actor, CallOptions, CancelToken, Engine, ErrorCode, ToolError};
use roundtable_mcp::Waits;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::error::error_body;

/// Events asked for per wait.
const BATCH: u32 = 100;

/// The longest one `events.wait` may wait (the tool's maximum).
const MAX_WAIT_MS: u64 = 60_000;

/// Frames queued for a slow client before the stream's thread waits for it.
const QUEUE: usize = 16;

/// A response body fed by the stream's thread.
#[derive(Debug)]
pub(crate) struct Stream {
    rx: mpsc::Receiver<Bytes>,
}

impl hyper::body::Body for Stream {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx
            .poll_recv(cx)
            .map(|chunk| chunk.map(|bytes| Ok(Frame::data(bytes))))
    }
}

/// Where a stream starts: `Last-Event-ID` wins over `?after=`; with
/// neither, `None` (the head).
pub(crate) fn start(
    last_event_id: Option<&str>,
    after: Option<u64>,
) -> Result<Option<u64>, ToolError> {
    match last_event_id.map(str::trim).filter(|s| !s.is_empty()) {
        Some(id) => id.parse::<u64>().map(Some).map_err(|_| {
            ToolError::invalid_argument("Last-Event-ID", format!("{id:?} is not an event seq"))
        }),
        None => Ok(after),
    }
}

/// Open a stream of `engine`'s events for `actor` after `after` (`None`:
/// the head), with a heartbeat every `heartbeat`.
///
/// Refused with `busy` when `actor` has the most waits pending already,
/// and with the engine's refusal when it may not read events.
pub(crate) async fn open(
    engine: Arc<Engine>,
    actor: Actor,
    after: Option<u64>,
    heartbeat: Duration,
    waits: &Arc<Waits>,
) -> Result<Stream, ToolError> {
    let pending = waits.enter(&actor.to_string())?;
    let since = match after {
        Some(seq) => seq,
        None => {
            let (e, a) = (Arc::clone(&engine), actor.clone());
            let head = crate::blocking(move || {
                e.call(
                    "events.wait",
                    json!({"since_seq": 0, "timeout_ms": 0, "limit": 1}),
                    &a,
                )
            })
            .await?;
            head["head_seq"].as_u64().unwrap_or(0)
        }
    };
    let (tx, rx) = mpsc::channel::<Bytes>(QUEUE);
    let cancel = CancelToken::new();
    let wait_ms = u64::try_from(heartbeat.as_millis())
        .unwrap_or(MAX_WAIT_MS)
        .clamp(1, MAX_WAIT_MS);
    let (feed, stop) = (tx.clone(), cancel.clone());
    let done = roundtable_mcp::spawn_wait(pending, move || {
        run(&engine, &actor, since, wait_ms, &feed, &stop);
    })
    .ok_or_else(|| {
        ToolError::new(
            "no thread for the event stream",
            roundtable::operations::details::BusyDetails::default(),
        )
    })?;
    // The client gone (the body dropped) cancels the wait at once.
    tokio::spawn(async move {
        tokio::select! {
            () = tx.closed() => cancel.cancel(),
            _ = done => {}
        }
    });
    Ok(Stream { rx })
}

/// The stream's loop: wait, write what came (or a heartbeat), until the
/// client is gone or the engine refuses.
fn run(
    engine: &Engine,
    actor: &Actor,
    mut since: u64,
    wait_ms: u64,
    tx: &mpsc::Sender<Bytes>,
    cancel: &CancelToken,
) {
    let options = CallOptions {
        deadline: None,
        cancel: Some(cancel.clone()),
    };
    // An open stream says so at once (a proxy may hold headers until data).
    if tx
        .blocking_send(Bytes::from_static(b": stream open\n\n"))
        .is_err()
    {
        return;
    }
    loop {
        let args = json!({"since_seq": since, "timeout_ms": wait_ms, "limit": BATCH});
        let got = match engine.call_with("events.wait", args, actor, &options) {
            Ok(got) => got,
            Err(e) if matches!(e.code(), ErrorCode::Cancelled) => return,
            Err(e) => {
                let frame = format!("event: error\ndata: {}\n\n", error_body(&e));
                let _ = tx.blocking_send(Bytes::from(frame));
                return;
            }
        };
        let events = got["events"].as_array().map_or(&[][..], Vec::as_slice);
        let mut out = String::new();
        if events.is_empty() {
            out.push_str(": heartbeat\n\n");
        }
        for event in events {
            out.push_str(&frame(event));
        }
        if let Some(next) = got["next_since_seq"].as_u64() {
            since = since.max(next);
        }
        if tx.blocking_send(Bytes::from(out)).is_err() {
            return;
        }
    }
}

/// One event as an SSE frame. The event's JSON is one line (`serde_json`
/// escapes every newline inside strings), so one `data:` line carries it.
fn frame(event: &Value) -> String {
    let seq = event["seq"].as_u64().unwrap_or(0);
    let kind: String = event["kind"]
        .as_str()
        .unwrap_or("event")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    format!("id: {seq}\nevent: {kind}\ndata: {event}\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_one_event_each_and_starts_prefer_last_event_id() {
        let f = frame(&json!({"seq": 7, "kind": "vote.cast", "data": {"note": "a\nb"}}));
        assert!(f.starts_with("id: 7\nevent: vote.cast\ndata: {"), "{f}");
        assert_eq!(f.matches('\n').count(), 4, "{f}");
        assert_eq!(start(Some("12"), Some(3)).expect("id"), Some(12));
        assert_eq!(start(None, Some(3)).expect("after"), Some(3));
        assert_eq!(start(Some(" "), None).expect("none"), None);
        let e = start(Some("x"), None).expect_err("bad id");
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
    }
}
