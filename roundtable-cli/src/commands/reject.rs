//! `roundtable reject`: a person rejects a proposal (`patch.reject`).

use crate::cli_util::{human, open, spinner, to_json_sorted, Common};
use crate::terminal;
use clap::Args;
use roundtable::session::Reject;
use roundtable::ToolError;

#[derive(Args)]
pub(crate) struct RejectArgs {
    /// The proposal id.
    proposal: String,
    /// Why (kept as the decision's reason).
    #[arg(long)]
    reason: String,
    /// Who rejects, as human:NAME (default: $ROUNDTABLE_HUMAN, else
    /// the OS user $USER).
    #[arg(long = "as", value_name = "human:NAME")]
    actor: Option<String>,
    #[command(flatten)]
    common: Common,
}

impl RejectArgs {
    pub(crate) fn common(&self) -> &Common {
        &self.common
    }
}

pub(crate) fn run(args: RejectArgs) -> Result<String, ToolError> {
    reject(
        &args.proposal,
        &args.reason,
        args.actor.as_deref(),
        &args.common,
    )
}

fn reject(
    proposal: &str,
    reason: &str,
    actor: Option<&str>,
    common: &Common,
) -> Result<String, ToolError> {
    let actor = human(actor)?;
    let engine = open(common)?;
    let person = engine.session(actor);
    let out = spinner("patch.reject", || {
        person.proposals().reject(Reject::new(proposal, reason))
    })?;
    if common.json {
        return to_json_sorted(&out);
    }
    Ok(terminal::escape(
        &format!("rejected {proposal} as {}: {reason}", person.actor()),
        &[],
    )
    .into_owned())
}
