//! `roundtable verify`: whether a branch's history is the one roundtable
//! governed — one `provenance.verify` call; exit status 1 when anything
//! was found, for CI.

use crate::cli_util::{esc, open, reader, spinner, to_json_sorted, Common};
use clap::Args;
use roundtable::session::{ProvenanceReport, VerifyProvenance};
use roundtable::ToolError;
use std::fmt::Write as _;

#[derive(Args)]
pub(crate) struct VerifyArgs {
    /// The branch (default: the workspace's landing branch).
    #[arg(long)]
    branch: Option<String>,
    /// Check only the commits after this revision.
    #[arg(long)]
    since: Option<String>,
    #[command(flatten)]
    common: Common,
}

impl VerifyArgs {
    pub(crate) fn common(&self) -> &Common {
        &self.common
    }
}

/// The report, printed as text (or JSON with `--json`), and whether it
/// found nothing.
pub(crate) fn run(args: VerifyArgs) -> Result<(String, bool), ToolError> {
    let engine = open(&args.common)?;
    let host = engine.session(reader()?);
    let mut draft = VerifyProvenance::new();
    if let Some(b) = &args.branch {
        draft = draft.branch(b);
    }
    if let Some(s) = &args.since {
        draft = draft.since(s);
    }
    let report = spinner("provenance.verify", || host.transactions().verify(draft))?;
    let valid = report.valid;
    if args.common.json {
        return Ok((to_json_sorted(&report)?, valid));
    }
    Ok((text(&report), valid))
}

/// The report for people: one line per finding, then a summary.
fn text(report: &ProvenanceReport) -> String {
    let mut out = String::new();
    for f in &report.findings {
        let commit = f.commit.as_deref().map_or("log", |c| &c[..c.len().min(12)]);
        let problem = serde_json::to_value(f.problem)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let _ = writeln!(out, "{commit} {problem}: {}", esc(&f.message));
    }
    let _ = writeln!(
        out,
        "{}: {} of {} commits governed{}; the audit log {}",
        esc(&report.branch),
        report.governed,
        report.checked,
        if report.truncated {
            " (more not checked)"
        } else {
            ""
        },
        if report.log_valid {
            "verifies"
        } else {
            "does not verify"
        }
    );
    out
}
