//! What every command shares: how it opens its engine, reads its input,
//! writes its output (JSON, or escaped readable text) and names its actor.
//! No command's own logic lives here.

use crate::terminal;
use clap::Args;
use roundtable::operations::details::{InvalidArgumentDetails, IoDetails};
use roundtable::operations::records::Event;
use roundtable::operations::review::NextActor;
use roundtable::session::{Cursor, ListEvents};
use roundtable::{Actor, ActorKind, Engine, EngineOptions, Id, Session, ToolError};
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The store every command's engine opens (`--store`).
pub(crate) static STORE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();

/// How every command opens its engine: the defaults, on the store
/// `--store` (or `ROUNDTABLE_STORE`) names.
pub(crate) fn engine_options() -> EngineOptions {
    EngineOptions {
        store: STORE.get().cloned().flatten(),
        ..EngineOptions::default()
    }
}

/// A patch's bytes: mapped from a regular file, or read (stdin, pipes).
pub(crate) enum Input {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl std::ops::Deref for Input {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Input::Mapped(m) => m,
            Input::Read(v) => v,
        }
    }
}

pub(crate) fn read_input(file: &Path) -> Result<Input, ToolError> {
    let fail = |e: std::io::Error| {
        ToolError::new(
            format!("{}: {e}", file.display()),
            IoDetails {
                path: Some(file.display().to_string()),
                ..IoDetails::default()
            },
        )
    };
    if file.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf).map_err(fail)?;
        return Ok(Input::Read(buf));
    }
    let f = std::fs::File::open(file).map_err(fail)?;
    let meta = f.metadata().map_err(fail)?;
    if meta.is_file() && meta.len() >= 1 << 20 {
        // SAFETY: the map is read-only and private; the patch file is the
        // user's input for the duration of one command. If another process
        // truncates it meanwhile the command may be killed by SIGBUS, the
        // same hazard every mmap-reading tool (grep, git) accepts.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::MmapOptions::new().populate().map(&f) }.map_err(fail)?;
        return Ok(Input::Mapped(map));
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    std::io::Read::read_to_end(&mut &f, &mut buf).map_err(fail)?;
    Ok(Input::Read(buf))
}

/// Serialize a command's result: indented for a terminal, compact for a
/// program reading a pipe.
pub(crate) fn to_json(value: &impl Serialize) -> Result<String, ToolError> {
    let text = if std::io::stdout().is_terminal() {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    };
    // Safe on a terminal (no raw C1 or bidirectional controls), the same JSON.
    text.map(terminal::json)
        .map_err(|e| ToolError::new(e.to_string(), IoDetails::default()))
}

/// A typed value as JSON the way the tools write it: through a
/// [`serde_json::Value`], so every object's keys come out sorted (a
/// tool's typed result prints exactly as `roundtable call` prints it).
pub(crate) fn to_json_sorted(value: &impl Serialize) -> Result<String, ToolError> {
    let value = serde_json::to_value(value)
        .map_err(|e| ToolError::new(e.to_string(), IoDetails::default()))?;
    to_json(&value)
}

pub(crate) fn check_root(root: &Path) -> Result<(), ToolError> {
    if !root.is_dir() {
        return Err(ToolError::new(
            format!("{}: not a directory", root.display()),
            InvalidArgumentDetails {
                field: Some("root".to_owned()),
                ..InvalidArgumentDetails::default()
            },
        ));
    }
    Ok(())
}

/// `root` made absolute (symlinks resolved) when it exists, for reports.
pub(crate) fn absolute(root: &Path) -> PathBuf {
    std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())
}

pub(crate) fn print(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    // A closed stdout (e.g. `| head`) is not worth a panic.
    let _ = out
        .write_all(text.as_bytes())
        .and_then(|()| out.write_all(b"\n"));
}

/// Run `f` under a spinner on stderr (only when stderr is a terminal):
/// for anything that can take more than a second.
pub(crate) fn spinner<T>(what: &str, f: impl FnOnce() -> T) -> T {
    if !std::io::stderr().is_terminal() {
        return f();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_message(what.to_owned());
    bar.enable_steady_tick(Duration::from_millis(100));
    let out = f();
    bar.finish_and_clear();
    out
}

// ---------------------------------------------------------------------------
// The commands a person uses (`show`, `approve`, `reject`, `status`, `log`,
// `recover`, `events`): readable text by default, JSON with `--json`; every
// one goes through the typed session API ([`Engine::session`]), which runs
// the tools, so it sees and refuses exactly what an agent would.
//
// Whatever the store holds was chosen by someone else (an agent's diff,
// file names, reasons, ids): the readable output escapes every control
// character in it and quotes odd file names ([`terminal`]), so what a
// person sees is what they approve.

/// Options every human command takes.
#[derive(Args)]
pub(crate) struct Common {
    /// The repository root.
    #[arg(long, default_value = ".")]
    pub(crate) root: PathBuf,
    /// Print JSON instead of readable text.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn invalid(field: &str, reason: impl Into<String>) -> ToolError {
    ToolError::invalid_argument(field, reason.into())
}

pub(crate) fn id(s: &str, field: &str) -> Result<Id, ToolError> {
    Id::new(s).map_err(|e| invalid(field, e.to_string()))
}

/// The person acting: `--as`, else `$ROUNDTABLE_HUMAN` (`NAME` or
/// `human:NAME`), else `$USER`.
pub(crate) fn human(actor: Option<&str>) -> Result<Actor, ToolError> {
    let spelled = match actor {
        Some(a) => a.to_owned(),
        None => {
            let env = std::env::var("ROUNDTABLE_HUMAN")
                .ok()
                .filter(|v| !v.is_empty())
                .or_else(|| std::env::var("USER").ok().filter(|v| !v.is_empty()))
                .or_else(|| std::env::var("LOGNAME").ok().filter(|v| !v.is_empty()))
                .ok_or_else(|| {
                    invalid(
                        "--as",
                        "no human given: pass --as human:NAME or set $ROUNDTABLE_HUMAN",
                    )
                })?;
            if env.contains(':') {
                env
            } else {
                format!("human:{env}")
            }
        }
    };
    let actor = Actor::parse(&spelled).map_err(|e| invalid("--as", e.to_string()))?;
    if actor.kind != ActorKind::Human {
        return Err(invalid(
            "--as",
            format!("{spelled}: these commands act as a person (human:NAME)"),
        ));
    }
    Ok(actor)
}

/// The reader for read-only commands (reads write no event).
pub(crate) fn reader() -> Result<Actor, ToolError> {
    Ok(Actor::orchestrator(id("roundtable-cli", "--as")?))
}

pub(crate) fn open(common: &Common) -> Result<Engine, ToolError> {
    let root = absolute(&common.root);
    spinner("opening the store", || {
        Engine::open(&root, engine_options())
    })
}

/// A string from the store as a person may see it: every unsafe
/// character escaped.
pub(crate) fn esc(text: &str) -> Cow<'_, str> {
    terminal::escape(text, &[])
}

/// Strings from the store, each escaped, joined with `sep`.
pub(crate) fn esc_join(items: &[String], sep: &str) -> String {
    items.iter().map(|s| esc(s)).collect::<Vec<_>>().join(sep)
}

/// The stable spelling of an enum value (`critical`, `rollback`): what
/// its JSON says.
pub(crate) fn spelling(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        _ => "?".to_owned(),
    }
}

/// Every record of a listing: `page` fetches the page after a cursor (the
/// first page for none) and returns its records and `next_cursor`.
pub(crate) fn all_pages<T>(
    mut page: impl FnMut(Option<Cursor>) -> Result<(Vec<T>, Option<Cursor>), ToolError>,
) -> Result<Vec<T>, ToolError> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let (records, next) = page(cursor)?;
        out.extend(records);
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(out),
        }
    }
}

/// Every event after `since` (all pages).
pub(crate) fn events_after(
    reader: &Session<'_>,
    since: u64,
    proposal: Option<&str>,
) -> Result<Vec<Event>, ToolError> {
    let mut out = Vec::new();
    let mut since = since;
    loop {
        let mut list = ListEvents::since(since).limit(1000);
        if let Some(p) = proposal {
            list = list.proposal_id(p);
        }
        let page = spinner("events.list", || reader.events().list(list))?;
        out.extend(page.events);
        match page.next_since_seq.and_then(|n| u64::try_from(n).ok()) {
            Some(n) => since = n,
            None => return Ok(out),
        }
    }
}

/// Colours, on only when stdout is a terminal (and `$NO_COLOR` is unset).
pub(crate) struct Paint(bool);

impl Paint {
    pub(crate) fn stdout() -> Paint {
        Paint(std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none())
    }
    pub(crate) fn wrap(&self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
    pub(crate) fn diff_line(&self, line: &str) -> String {
        if line.starts_with("+++ ") || line.starts_with("--- ") || line.starts_with("diff --git ") {
            self.wrap("1", line)
        } else if line.starts_with('+') {
            self.wrap("32", line)
        } else if line.starts_with('-') {
            self.wrap("31", line)
        } else if line.starts_with("@@") {
            self.wrap("36", line)
        } else {
            line.to_owned()
        }
    }
}

/// Who acts next and why, every string escaped.
pub(crate) fn next_line(n: &NextActor) -> String {
    let mut who = esc(n.actor.as_str()).into_owned();
    if !n.roles.is_empty() {
        let _ = write!(who, " [{}]", esc_join(&n.roles, ", "));
    }
    if !n.candidates.is_empty() {
        let _ = write!(who, " ({})", esc_join(&n.candidates, ", "));
    }
    format!("{who}: {}", esc(&n.why))
}
