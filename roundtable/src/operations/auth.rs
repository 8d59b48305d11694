//! Authorization: every decision is made against the host-supplied actor.

use super::details::{ForbiddenDetails, ForbiddenReason};
use super::records::Agent;
use super::{Cx, ToolError};
use crate::actor::{Actor, ActorKind};
use crate::operations::records::AgentRecord;
use crate::policy::{People, PersonRole};

/// `forbidden` unless `actor` is of one of these kinds.
pub(crate) fn require_kind(
    actor: &Actor,
    kinds: &[ActorKind],
    tool: &str,
) -> Result<(), ToolError> {
    if kinds.contains(&actor.kind) {
        return Ok(());
    }
    let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
    Err(ToolError::new(
        format!(
            "{tool} is for {} actors; {actor} is {}",
            names.join(" or "),
            actor.kind.as_str()
        ),
        ForbiddenDetails {
            allowed_kinds: Some(kinds.to_vec()),
            ..ForbiddenDetails::new(actor, ForbiddenReason::WrongKind)
        },
    ))
}

impl Cx<'_> {
    /// The calling agent's record: `forbidden` unless the actor is a
    /// registered, enabled agent.
    pub(crate) fn enabled_agent(&self, tool: &str) -> Result<Agent, ToolError> {
        require_kind(self.actor, &[ActorKind::Agent], tool)?;
        let agent = Agent::load(self.tx, self.actor.id.as_str())?.ok_or_else(|| {
            ToolError::new(
                format!("agent {} is not registered", self.actor.id),
                ForbiddenDetails::new(self.actor, ForbiddenReason::Unregistered),
            )
        })?;
        if !agent.enabled {
            return Err(ToolError::new(
                format!("agent {} is disabled", self.actor.id),
                ForbiddenDetails::new(self.actor, ForbiddenReason::Disabled),
            ));
        }
        Ok(agent)
    }

    /// Whether the actor is the agent `author`.
    pub(crate) fn is_author(&self, author: &str) -> bool {
        self.actor.kind == ActorKind::Agent && self.actor.id.as_str() == author
    }

    /// `forbidden` unless the actor is the proposal's author (and still an
    /// enabled agent).
    pub(crate) fn require_author(&self, author: &str, tool: &str) -> Result<(), ToolError> {
        if !self.is_author(author) {
            return Err(ToolError::new(
                format!(
                    "only the author ({author}) may call {tool}; the caller is {}",
                    self.actor
                ),
                ForbiddenDetails {
                    author: Some(author.to_owned()),
                    ..ForbiddenDetails::new(self.actor, ForbiddenReason::NotAuthor)
                },
            ));
        }
        self.enabled_agent(tool).map(drop)
    }

    /// `forbidden` unless the actor is the author or an orchestrator.
    pub(crate) fn require_author_or_orchestrator(
        &self,
        author: &str,
        tool: &str,
    ) -> Result<(), ToolError> {
        if self.actor.kind == ActorKind::Orchestrator {
            return Ok(());
        }
        self.require_author(author, tool)
    }

    /// `forbidden` (`missing_role`) when the actor is a person who does not
    /// hold `role` under the effective policy's `[people]` table; any other
    /// actor passes (kinds are checked by the tool's callers).
    pub(crate) fn require_person_role(&self, role: PersonRole) -> Result<(), ToolError> {
        if self.actor.kind != ActorKind::Human {
            return Ok(());
        }
        let (_, policy) = super::policies::effective(self.tx)?;
        if policy.people.holds(self.actor.id.as_str(), role) {
            return Ok(());
        }
        let listed = People::spell(&policy.people.named(role).unwrap_or_default());
        Err(ToolError::new(
            format!(
                "{} does not hold the {} role: the policy's [people] {} lists {listed}",
                self.actor,
                role.as_str(),
                role.as_str()
            ),
            ForbiddenDetails {
                required_role: Some(role.as_str().to_owned()),
                ..ForbiddenDetails::new(self.actor, ForbiddenReason::MissingRole)
            },
        ))
    }
}
