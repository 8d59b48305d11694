//! Registering agents and tasks: the host's set-up tools.

use super::args::{Markdown, Role, Title};
use super::records::{Agent, Task};
use super::Request as _;
use super::{Cx, Tool, ToolError};
use crate::actor::ActorKind;
use crate::id::Id;
use crate::store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Arguments of `agent.register`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "AgentRegisterArgs")]
pub struct RegisterAgent {
    /// The agent's id: what its actor's `id` will be.
    pub agent_id: Id,
    /// Its roles (at most 32), e.g. `["reviewer"]`; duplicates are refused.
    #[schemars(length(max = 32))]
    pub roles: Vec<Role>,
    /// Whether it may act (default true). Registering again with `false`
    /// disables it.
    pub enabled: Option<bool>,
    /// A name for people.
    pub display_name: Option<Title>,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// Result of `agent.register`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AgentRegistered {
    /// The agent as stored.
    pub agent: Agent,
    /// `true` when the agent is new, `false` when an existing one was
    /// updated (or already had these settings).
    pub created: bool,
}

impl super::Request for RegisterAgent {
    const TOOL: &'static str = "agent.register";
    const DESCRIPTION: &'static str = "Register an agent with its roles (orchestrator only). Registering an existing agent updates its roles, enabled flag and display name.";
    const MUTATES: bool = true;
    type Output = AgentRegistered;

    store_tool!();
}

impl Tool for RegisterAgent {
    keyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: Self, (): ()) -> Result<AgentRegistered, ToolError> {
        cx.require_kind(&[ActorKind::Orchestrator], Self::TOOL)?;
        if args.roles.len() > 32 {
            return Err(ToolError::invalid_argument(
                "roles",
                format!("has {} roles; the limit is 32", args.roles.len()),
            ));
        }
        let mut roles: Vec<String> = args.roles.iter().map(|r| r.as_str().to_owned()).collect();
        roles.sort();
        if let Some(w) = roles.windows(2).find(|w| w[0] == w[1]) {
            return Err(ToolError::invalid_argument(
                "roles",
                format!("names {:?} twice", w[0]),
            ));
        }
        let enabled = args.enabled.unwrap_or(true);
        let display_name = args.display_name.as_ref().map(|t| t.as_str().to_owned());
        let id = args.agent_id.as_str();
        let existing = Agent::load(cx.tx, id)?;
        let created = existing.is_none();
        match &existing {
            None => {
                store::agents::insert_agent(
                    cx.tx,
                    id,
                    &roles,
                    enabled,
                    display_name.as_deref(),
                    cx.now,
                )?;
                cx.event(
                    crate::model::EventKind::AgentRegistered,
                    id,
                    None,
                    json!({"roles": roles, "enabled": enabled}),
                )?;
            }
            Some(old)
                if old.roles == roles
                    && old.enabled == enabled
                    && old.display_name == display_name => {}
            Some(old) => {
                store::agents::update_agent(
                    cx.tx,
                    id,
                    &roles,
                    enabled,
                    display_name.as_deref(),
                    cx.now,
                )?;
                cx.event(
                    crate::model::EventKind::AgentUpdated,
                    id,
                    None,
                    json!({
                        "roles": roles, "enabled": enabled,
                        "previous": {"roles": old.roles, "enabled": old.enabled},
                    }),
                )?;
            }
        }
        let agent = Agent::load(cx.tx, id)?.expect("the agent was just written");
        Ok(AgentRegistered { agent, created })
    }
}

/// Arguments of `task.create`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "TaskCreateArgs")]
pub struct CreateTask {
    /// The task's id; generated when absent. An id in use is `conflict`.
    pub task_id: Option<Id>,
    /// Its title.
    pub title: Title,
    /// What it is about.
    pub summary_md: Option<Markdown>,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// Result of `task.create`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TaskCreated {
    /// The new task.
    pub task: Task,
}

impl super::Request for CreateTask {
    const TOOL: &'static str = "task.create";
    const DESCRIPTION: &'static str =
        "Create a task that proposals belong to (orchestrator or human).";
    const MUTATES: bool = true;
    type Output = TaskCreated;

    store_tool!();
}

impl Tool for CreateTask {
    keyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: Self, (): ()) -> Result<TaskCreated, ToolError> {
        cx.require_kind(&[ActorKind::Orchestrator, ActorKind::Human], Self::TOOL)?;
        let id = args.task_id.unwrap_or_else(|| cx.new_id("task"));
        let taken = store::agents::task_exists(cx.tx, id.as_str())?;
        if taken {
            return Err(ToolError::conflict(
                format!("task {id} already exists"),
                json!({"kind": "task", "id": id}),
            ));
        }
        let summary = args.summary_md.as_ref().map(|t| t.as_str());
        store::agents::insert_task(
            cx.tx,
            id.as_str(),
            args.title.as_str(),
            summary,
            cx.actor,
            cx.now,
        )?;
        cx.event(
            crate::model::EventKind::TaskCreated,
            id.as_str(),
            None,
            json!({"title": args.title}),
        )?;
        let task = store::agents::task(cx.tx, id.as_str())?.expect("the task was just written");
        Ok(TaskCreated { task })
    }
}
