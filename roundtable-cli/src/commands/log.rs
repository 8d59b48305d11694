//! `roundtable log`: the commits roundtable landed on the workspace's
//! branch (git landing mode), newest first, each with the trailers naming
//! what governed it — one `landing.log` call.

use crate::cli_util::{esc, open, reader, spinner, to_json_sorted, Common};
use clap::Args;
use roundtable::model::LandingMode;
use roundtable::session::LandingLog;
use roundtable::{ErrorCode, ToolError};
use std::fmt::Write as _;

#[derive(Args)]
pub(crate) struct LogArgs {
    /// At most this many commits.
    #[arg(long, default_value_t = 20)]
    limit: u32,
    #[command(flatten)]
    common: Common,
}

impl LogArgs {
    pub(crate) fn common(&self) -> &Common {
        &self.common
    }
}

/// Whether `e` is `landing.log`'s refusal of a workspace in files mode.
fn files_mode(e: &ToolError) -> bool {
    e.code() == ErrorCode::PreconditionFailed
        && e.details()
            .get("landing")
            .and_then(|l| serde_json::from_value::<roundtable::model::Landing>(l.clone()).ok())
            .is_some_and(|l| l.mode == LandingMode::Files)
}

pub(crate) fn run(args: LogArgs) -> Result<String, ToolError> {
    let common = &args.common;
    let engine = open(common)?;
    let host = engine.session(reader()?);
    let log = match spinner("landing.log", || {
        host.transactions()
            .landed(LandingLog::new().limit(args.limit))
    }) {
        Ok(log) => log,
        // Files mode commits nothing: not an error for a person asking.
        Err(e) if files_mode(&e) => {
            return Ok(if common.json {
                "[]\n".to_owned()
            } else {
                "landing mode is files: roundtable commits nothing (workspace.configure sets git mode)\n".to_owned()
            })
        }
        Err(e) => return Err(e),
    };
    if common.json {
        return to_json_sorted(&log.commits);
    }
    let mut out = String::new();
    if log.commits.is_empty() {
        let _ = writeln!(
            out,
            "no commit on {} was landed by roundtable",
            esc(&log.branch)
        );
    }
    for c in &log.commits {
        let _ = writeln!(out, "{} {}", &c.id[..c.id.len().min(12)], esc(&c.summary));
        let _ = writeln!(out, "    author {}", esc(&c.author));
        for (k, v) in &c.trailers {
            let _ = writeln!(out, "    {}: {}", esc(k), esc(v));
        }
    }
    Ok(out)
}
