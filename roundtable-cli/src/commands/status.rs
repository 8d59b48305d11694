//! `roundtable status`: open proposals and what each waits for, live
//! claims with their expiry, recent transactions.

use crate::cli_util::{
    all_pages, esc, next_line, open, reader, spelling, spinner, to_json_sorted, Common,
};
use crate::terminal;
use roundtable::apply::Transaction;
use roundtable::operations::claims::Claim;
use roundtable::operations::records::Proposal;
use roundtable::operations::review::NextActor;
use roundtable::session::{
    ClaimStatus, GetProposalStatus, ListClaims, ListProposals, ListTransactions, ProposalStatus,
};
use roundtable::{Engine, ToolError};
use serde::Serialize;
use std::fmt::Write as _;

/// How many recent transactions `status` shows.
const RECENT: usize = 10;

/// An open proposal and what it waits for, as `status` reports it.
#[derive(Serialize)]
struct OpenProposal {
    proposal: Proposal,
    can_land: bool,
    stale: bool,
    next: Vec<NextActor>,
}

/// The data `status` prints, readable or as JSON.
#[derive(Serialize)]
struct StatusView {
    open_proposals: Vec<OpenProposal>,
    claims: Vec<Claim>,
    /// The latest transactions, newest first.
    recent_transactions: Vec<Transaction>,
}

fn status_view(engine: &Engine) -> Result<StatusView, ToolError> {
    let reader = engine.session(reader()?);
    let mut proposals = Vec::new();
    for state in [ProposalStatus::Pending, ProposalStatus::InReview] {
        proposals.extend(all_pages(|cursor| {
            let mut list = ListProposals::all().status(state).limit(200);
            if let Some(c) = cursor {
                list = list.cursor(c);
            }
            let page = spinner("proposal.list", || reader.proposals().list(list))?;
            Ok((page.proposals, page.next_cursor))
        })?);
    }
    proposals.sort_by(|a, b| {
        a.created_at
            .cmp(&b.created_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    let mut open_proposals = Vec::new();
    for proposal in proposals {
        let st = spinner("proposal.status", || {
            reader
                .proposals()
                .status(GetProposalStatus::new(&proposal.id))
        })?;
        open_proposals.push(OpenProposal {
            proposal,
            can_land: st.can_land,
            stale: st.stale,
            next: st.next,
        });
    }
    let claims = all_pages(|cursor| {
        let mut list = ListClaims::all().status(ClaimStatus::Active).limit(200);
        if let Some(c) = cursor {
            list = list.cursor(c);
        }
        let page = spinner("claim.list", || reader.claims().list(list))?;
        Ok((page.claims, page.next_cursor))
    })?;
    let mut transactions = all_pages(|cursor| {
        let mut list = ListTransactions::all().limit(200);
        if let Some(c) = cursor {
            list = list.cursor(c);
        }
        let page = spinner("transaction.list", || reader.transactions().list(list))?;
        Ok((page.transactions, page.next_cursor))
    })?;
    let skip = transactions.len().saturating_sub(RECENT);
    let recent_transactions = transactions.drain(skip..).rev().collect();
    Ok(StatusView {
        open_proposals,
        claims,
        recent_transactions,
    })
}

pub(crate) fn run(common: &Common) -> Result<String, ToolError> {
    let engine = open(common)?;
    let view = status_view(&engine)?;
    if common.json {
        return to_json_sorted(&view);
    }
    // Every string from the store escaped (a resource id quoted when odd).
    let mut out = String::new();
    let _ = writeln!(out, "open proposals ({}):", view.open_proposals.len());
    if view.open_proposals.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for o in &view.open_proposals {
        let p = &o.proposal;
        let _ = writeln!(
            out,
            "  {} [{}, risk {}, revision {}] {} — by agent:{}",
            esc(&p.id),
            p.status.as_str(),
            spelling(&p.risk),
            p.latest_revision,
            esc(&p.title),
            esc(&p.author)
        );
        let state = if o.can_land {
            "can land"
        } else if o.stale {
            "stale"
        } else {
            "waiting"
        };
        let next: Vec<String> = o.next.iter().map(next_line).collect();
        let _ = writeln!(
            out,
            "    {state}; next: {}",
            if next.is_empty() {
                "nobody".to_owned()
            } else {
                next.join("; ")
            }
        );
    }
    let _ = writeln!(out, "\nlive claims ({}):", view.claims.len());
    if view.claims.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for c in &view.claims {
        let _ = writeln!(
            out,
            "  {} agent:{} {} {} (token {}) until {}",
            esc(&c.id),
            esc(&c.agent_id),
            c.claim_type.as_str(),
            terminal::name(&c.resource_id),
            c.token,
            c.expires_at
        );
    }
    let _ = writeln!(
        out,
        "\nrecent transactions ({}):",
        view.recent_transactions.len()
    );
    if view.recent_transactions.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for t in &view.recent_transactions {
        let _ = writeln!(
            out,
            "  {} {} {} of {} revision {} by {} ({} files) at {}",
            esc(&t.id),
            spelling(&t.kind),
            t.status.as_str(),
            esc(&t.proposal_id),
            t.revision,
            esc(&t.actor.to_string()),
            t.file_count,
            t.created_at
        );
    }
    Ok(out.trim_end().to_owned())
}
