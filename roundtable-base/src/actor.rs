//! [`Actor`]: who is calling a tool.
//!
//! The host supplies the actor with every call — it is never read from tool
//! arguments — and every authorization decision is made against it.

use crate::id::Id;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What kind of party an actor is.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ActorKind {
    /// An AI agent: proposes changes, reviews others' proposals.
    Agent,
    /// A person: grants human approvals, rejects, records decisions.
    Human,
    /// The host program: registers agents and tasks, records test results,
    /// applies changes.
    Orchestrator,
}

impl ActorKind {
    /// Every kind, in a stable order.
    pub const ALL: [ActorKind; 3] = [ActorKind::Agent, ActorKind::Human, ActorKind::Orchestrator];

    /// The stable spelling (`agent`, `human`, `orchestrator`).
    pub fn as_str(self) -> &'static str {
        match self {
            ActorKind::Agent => "agent",
            ActorKind::Human => "human",
            ActorKind::Orchestrator => "orchestrator",
        }
    }

    /// The kind spelled `s`.
    pub fn parse(s: &str) -> Option<ActorKind> {
        match s {
            "agent" => Some(ActorKind::Agent),
            "human" => Some(ActorKind::Human),
            "orchestrator" => Some(ActorKind::Orchestrator),
            _ => None,
        }
    }
}

/// Who is calling: `{"id": "...", "kind": "agent"|"human"|"orchestrator"}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Actor {
    /// The actor's id (for an agent, its registered agent id).
    pub id: Id,
    /// What kind of party it is.
    pub kind: ActorKind,
}

/// Why an actor spelling was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("actor {spelling:?}: {reason}")]
pub struct ActorError {
    spelling: String,
    reason: String,
}

impl Actor {
    /// An agent actor.
    pub fn agent(id: Id) -> Actor {
        Actor {
            id,
            kind: ActorKind::Agent,
        }
    }

    /// A human actor.
    pub fn human(id: Id) -> Actor {
        Actor {
            id,
            kind: ActorKind::Human,
        }
    }

    /// An orchestrator actor.
    pub fn orchestrator(id: Id) -> Actor {
        Actor {
            id,
            kind: ActorKind::Orchestrator,
        }
    }

    /// Parse `KIND:ID` (the CLI's `--as human:alice`).
    pub fn parse(spelling: &str) -> Result<Actor, ActorError> {
        let err = |reason: String| ActorError {
            spelling: spelling.to_owned(),
            reason,
        };
        let (kind, id) = spelling
            .split_once(':')
            .ok_or_else(|| err("expected KIND:ID, e.g. human:alice".into()))?;
        let kind = ActorKind::parse(kind)
            .ok_or_else(|| err(format!("kind {kind:?} is not agent, human or orchestrator")))?;
        let id = Id::new(id).map_err(|e| err(format!("id {e}")))?;
        Ok(Actor { id, kind })
    }
}

impl ActorError {
    /// The stable error code: `invalid_argument`.
    pub fn code(&self) -> crate::ErrorCode {
        crate::ErrorCode::InvalidArgument
    }
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind.as_str(), self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kind_colon_id() {
        let a = Actor::parse("human:alice").expect("valid");
        assert_eq!(a.kind, ActorKind::Human);
        assert_eq!(a.id.as_str(), "alice");
        assert_eq!(a.to_string(), "human:alice");
        for bad in ["alice", "robot:x", "agent:", "agent:a b"] {
            assert!(Actor::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn decodes_strictly() {
        let ok: Actor = serde_json::from_str(r#"{"id":"a1","kind":"agent"}"#).expect("valid actor");
        assert_eq!(ok, Actor::agent(Id::new("a1").expect("id")));
        assert!(serde_json::from_str::<Actor>(r#"{"id":"a1","kind":"Agent"}"#).is_err());
        assert!(serde_json::from_str::<Actor>(r#"{"id":"a1","kind":"agent","x":1}"#).is_err());
    }
}
