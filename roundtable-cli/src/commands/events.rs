//! `roundtable events`: the audit log, one line per event (with --json,
//! one JSON object per line), optionally followed.

use crate::cli_util::{esc, events_after, open, print, reader, Common};
use crate::terminal;
use clap::Args;
use roundtable::operations::records::Event;
use roundtable::session::WaitEvents;
use roundtable::ToolError;
use std::fmt::Write as _;

#[derive(Args)]
pub(crate) struct EventsArgs {
    /// Only events after this sequence number.
    #[arg(long, default_value_t = 0)]
    since: u64,
    /// Keep polling and printing new events until interrupted.
    #[arg(long)]
    follow: bool,
    #[command(flatten)]
    common: Common,
}

impl EventsArgs {
    pub(crate) fn common(&self) -> &Common {
        &self.common
    }
}

pub(crate) fn run(args: EventsArgs) -> Result<String, ToolError> {
    events(args.since, args.follow, &args.common)
}

/// One event as one line: its fields escaped, its data as (safe) JSON.
fn event_line(e: &Event) -> String {
    let mut line = format!(
        "{:>5} {} {} {} {}",
        e.seq,
        e.at,
        esc(&e.actor.to_string()),
        esc(e.kind.as_str()),
        esc(&e.subject)
    );
    if let Some(p) = &e.proposal_id {
        if *p != e.subject {
            let _ = write!(line, " proposal={}", esc(p));
        }
    }
    if e.data.as_object().is_some_and(|d| !d.is_empty()) {
        let _ = write!(line, " {}", terminal::json(e.data.to_string()));
    }
    line
}

/// One event as one line of JSON: the object `events.list` returns for it.
fn event_json(e: &Event) -> Result<String, ToolError> {
    let value = serde_json::to_value(e).map_err(|err| {
        ToolError::new(
            err.to_string(),
            roundtable::operations::details::IoDetails::default(),
        )
    })?;
    Ok(terminal::json(value.to_string()))
}

fn events(since: u64, follow: bool, common: &Common) -> Result<String, ToolError> {
    let engine = open(common)?;
    let reader = engine.session(reader()?);
    let render = |e: &Event| {
        if common.json {
            event_json(e)
        } else {
            Ok(event_line(e))
        }
    };
    let mut last = since;
    let first = events_after(&reader, last, None)?;
    if !follow {
        let lines = first.iter().map(render).collect::<Result<Vec<_>, _>>()?;
        return Ok(lines.join("\n"));
    }
    let mut batch = first;
    loop {
        for e in &batch {
            print(&render(e)?);
            last = last.max(u64::try_from(e.seq).unwrap_or(last));
        }
        // A long poll: it returns as soon as an event is committed, by any
        // process, and costs nothing while none is.
        batch = reader
            .events()
            .wait(WaitEvents::since(last).limit(1000).timeout_ms(60_000))?
            .events;
    }
}
