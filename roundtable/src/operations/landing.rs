//! `landing.log`: the commits roundtable landed on the workspace's branch
//! (git landing mode), read back from the repository with the trailers
//! naming what governed each.

use super::args::Limit;
use super::details::{IoDetails, PreconditionFailedDetails};
use super::{Cx, Tool, ToolError};
use crate::actor::ActorKind;
use crate::landing::LandedCommit;
use crate::store;
use crate::ErrorCode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How many commits `landing.log` returns when no `limit` is given.
pub const DEFAULT_LIMIT: u32 = 20;

/// Arguments of `landing.log`.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "LandingLogArgs")]
pub struct LandingLog {
    /// At most this many commits, 1 to 1000 (default 20).
    pub limit: Option<Limit<1000>>,
}

/// Result of `landing.log`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LandedCommits {
    /// The branch read (`refs/heads/main`): the workspace's landing branch.
    pub branch: String,
    /// The commits on it that roundtable landed (those carrying a
    /// `Roundtable-Proposal` trailer), first parents only, newest first.
    pub commits: Vec<LandedCommit>,
}

impl super::Request for LandingLog {
    const TOOL: &'static str = "landing.log";
    const DESCRIPTION: &'static str = "The commits roundtable landed on the workspace's branch (git landing mode), newest first (first parents), each with its id, summary, author and the trailers naming what governed it (Roundtable-Proposal, Approved-by, …). In files mode nothing is committed: precondition_failed, its details naming the landing setting.";
    const MUTATES: bool = false;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Orchestrator, ActorKind::Human];
    type Output = LandedCommits;

    store_tool!();
}

impl Tool for LandingLog {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: LandingLog, (): ()) -> Result<LandedCommits, ToolError> {
        let landing = store::settings::landing(cx.tx)?;
        let Some(branch) = landing.branch_ref() else {
            return Err(ToolError::new(
                "landing mode is files: roundtable commits nothing (workspace.configure sets git mode)",
                PreconditionFailedDetails {
                    landing: Some(landing),
                    ..PreconditionFailedDetails::default()
                },
            ));
        };
        let limit = args.limit.map_or(DEFAULT_LIMIT, |l| l.0);
        let commits = crate::landing::landed_commits(cx.engine.root(), &branch, limit as usize)
            .map_err(|e| match e.code() {
                ErrorCode::Io => ToolError::new(
                    e.to_string(),
                    IoDetails {
                        reference: Some(branch.clone()),
                        ..IoDetails::default()
                    },
                ),
                _ => ToolError::from(e),
            })?;
        Ok(LandedCommits { branch, commits })
    }
}
