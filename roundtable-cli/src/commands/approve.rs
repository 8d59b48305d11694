//! `roundtable approve`: a person approves the latest revision of a
//! proposal (`human.approve`).

use crate::cli_util::{human, open, spinner, to_json_sorted, Common};
use crate::terminal;
use clap::Args;
use roundtable::session::Approve;
use roundtable::ToolError;

#[derive(Args)]
pub(crate) struct ApproveArgs {
    /// The proposal id.
    proposal: String,
    /// The revision approved (must be the latest).
    #[arg(long)]
    revision: u32,
    /// A note kept with the approval.
    #[arg(long)]
    note: Option<String>,
    /// Who approves, as human:NAME (default: $ROUNDTABLE_HUMAN, else
    /// the OS user $USER).
    #[arg(long = "as", value_name = "human:NAME")]
    actor: Option<String>,
    #[command(flatten)]
    common: Common,
}

impl ApproveArgs {
    pub(crate) fn common(&self) -> &Common {
        &self.common
    }
}

pub(crate) fn run(args: ApproveArgs) -> Result<String, ToolError> {
    approve(
        &args.proposal,
        args.revision,
        args.note,
        args.actor.as_deref(),
        &args.common,
    )
}

fn approve(
    proposal: &str,
    revision: u32,
    note: Option<String>,
    actor: Option<&str>,
    common: &Common,
) -> Result<String, ToolError> {
    let actor = human(actor)?;
    let engine = open(common)?;
    let person = engine.session(actor);
    let mut request = Approve::new(proposal, revision);
    if let Some(n) = &note {
        request = request.note_md(n);
    }
    let out = spinner("human.approve", || person.evidence().approve(request)).map_err(|e| {
        let details = e.details_as::<roundtable::operations::details::ConflictDetails>();
        match details.as_ref().and_then(|d| d.latest_revision) {
            Some(latest) => ToolError::new(
                format!(
                    "revision {revision} of {proposal} is not the latest: the latest is revision {latest} \
                     (review it with `roundtable show {proposal}`, then approve --revision {latest})"
                ),
                details.unwrap_or_default(),
            ),
            _ => e,
        }
    })?;
    if common.json {
        return to_json_sorted(&out);
    }
    Ok(terminal::escape(
        &format!(
            "approved revision {revision} of {proposal} as {} (approval {})",
            person.actor(),
            out.approval.id
        ),
        &[],
    )
    .into_owned())
}
