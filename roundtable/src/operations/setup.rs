//! Registering agents and tasks: the host's set-up tools.

use super::args::{Cursor, Limit, Markdown, Role, Title};
use super::records::{Agent, Task};
use super::{Cx, Tool, ToolError};
use crate::actor::ActorKind;
use crate::id::Id;
use crate::operations::records::AgentRecord;
use crate::store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    /// Its model, `provider/model` (the models.dev convention, at most
    /// 250 characters): landings' attribution records name it.
    #[schemars(length(min = 1, max = 250))]
    pub model_id: Option<String>,
    /// An `https://` (or `http://`) link to its session or conversation,
    /// at most 2000 characters: landings' attribution records name it.
    #[schemars(length(min = 1, max = 2000))]
    pub session_url: Option<String>,
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
    const IDEMPOTENT: bool = true;
    const DESTRUCTIVE: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Orchestrator];
    type Output = AgentRegistered;

    store_tool!();
}

/// Store `fields` as agent `old`'s settings, with the `agent.updated`
/// event naming its access before and after (`agent.register` of a known
/// agent; `proposal.revert_agent`'s `disable`).
pub(super) fn update_agent(
    cx: &Cx<'_>,
    old: &Agent,
    fields: store::agents::AgentFields<'_>,
) -> Result<(), ToolError> {
    store::agents::update_agent(cx.tx, &old.id, fields, cx.now)?;
    cx.event(
        &old.id,
        None,
        crate::model::AgentUpdatedData {
            enabled: fields.enabled,
            roles: fields.roles.to_vec(),
            previous: crate::model::AgentAccess {
                enabled: old.enabled,
                roles: old.roles.clone(),
            },
        },
    )?;
    Ok(())
}

impl Tool for RegisterAgent {
    keyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: Self, (): ()) -> Result<AgentRegistered, ToolError> {
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
        let model_id = args.model_id.clone();
        if let Some(m) = &model_id {
            if m.trim().is_empty() || m.chars().count() > 250 || m.chars().any(char::is_control) {
                return Err(ToolError::invalid_argument(
                    "model_id",
                    "must be 1 to 250 characters without control characters (provider/model)",
                ));
            }
        }
        let session_url = args.session_url.clone();
        if let Some(u) = &session_url {
            let scheme_ok = u.starts_with("https://") || u.starts_with("http://");
            if !scheme_ok
                || u.len() > 2000
                || u.chars().any(|c| c.is_whitespace() || c.is_control())
            {
                return Err(ToolError::invalid_argument(
                    "session_url",
                    "must be an https:// or http:// link of at most 2000 characters without spaces",
                ));
            }
        }
        let fields = store::agents::AgentFields {
            roles: &roles,
            enabled,
            display_name: display_name.as_deref(),
            model_id: model_id.as_deref(),
            session_url: session_url.as_deref(),
        };
        let id = args.agent_id.as_str();
        let existing = Agent::load(cx.tx, id)?;
        let created = existing.is_none();
        match &existing {
            None => {
                store::agents::insert_agent(cx.tx, id, fields, cx.now)?;
                cx.event(
                    id,
                    None,
                    crate::model::AgentRegisteredData {
                        enabled,
                        roles: roles.clone(),
                    },
                )?;
            }
            Some(old)
                if old.roles == roles
                    && old.enabled == enabled
                    && old.display_name == display_name
                    && old.model_id == model_id
                    && old.session_url == session_url => {}
            Some(old) => update_agent(cx, old, fields)?,
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
    /// The task (new, or the existing identical one).
    pub task: Task,
    /// `false` when a task with this id, title and summary already
    /// existed: creating it again is not a conflict.
    #[serde(default = "created_default")]
    pub created: bool,
}

/// Results stored before `created` existed were creations.
fn created_default() -> bool {
    true
}

impl super::Request for CreateTask {
    const TOOL: &'static str = "task.create";
    const DESCRIPTION: &'static str =
        "Create a task that proposals belong to (orchestrator or human).";
    const MUTATES: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Orchestrator, ActorKind::Human];
    type Output = TaskCreated;

    store_tool!();
}

impl Tool for CreateTask {
    keyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: Self, (): ()) -> Result<TaskCreated, ToolError> {
        let id = args.task_id.unwrap_or_else(|| cx.new_id("task"));
        let summary = args.summary_md.as_ref().map(|t| t.as_str());
        if let Some(task) = store::agents::task(cx.tx, id.as_str())? {
            // The same task again (a host reconciling after a restart) is
            // what it asked for; another task under this id is a conflict.
            if task.title == args.title.as_str() && task.summary_md.as_deref() == summary {
                return Ok(TaskCreated {
                    task,
                    created: false,
                });
            }
            return Err(ToolError::new(
                format!("task {id} already exists with another title or summary"),
                super::details::ConflictDetails {
                    kind: Some("task".to_owned()),
                    id: Some(id.to_string()),
                    ..super::details::ConflictDetails::default()
                },
            ));
        }
        store::agents::insert_task(
            cx.tx,
            id.as_str(),
            args.title.as_str(),
            summary,
            cx.actor,
            cx.now,
        )?;
        cx.event(
            id.as_str(),
            None,
            crate::model::TaskCreatedData {
                title: args.title.as_str().to_owned(),
            },
        )?;
        let task = store::agents::task(cx.tx, id.as_str())?.expect("the task was just written");
        Ok(TaskCreated {
            task,
            created: true,
        })
    }
}

/// Arguments of `agent.get`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetAgent {
    /// The agent.
    pub agent_id: Id,
}

/// Result of `agent.get`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AgentDetail {
    /// The agent as stored.
    pub agent: Agent,
}

impl super::Request for GetAgent {
    const TOOL: &'static str = "agent.get";
    const DESCRIPTION: &'static str = "An agent: its roles, enabled flag and display name (not_found if it was never registered).";
    const MUTATES: bool = false;
    type Output = AgentDetail;

    store_tool!();
}

impl Tool for GetAgent {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: GetAgent, (): ()) -> Result<AgentDetail, ToolError> {
        let agent = store::agents::agent(cx.tx, args.agent_id.as_str())?
            .ok_or_else(|| ToolError::not_found("agent", args.agent_id.as_str()))?;
        Ok(AgentDetail { agent })
    }
}

/// Arguments of `agent.list`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListAgents {
    /// Only agents holding this role.
    pub role: Option<Role>,
    /// Only enabled (`true`) or disabled (`false`) agents.
    pub enabled: Option<bool>,
    /// At most this many (default 50, at most 200).
    pub limit: Option<Limit<200>>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<Cursor>,
}

/// Result of `agent.list`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AgentPage {
    /// The agents, in the order they were registered.
    pub agents: Vec<Agent>,
    /// Where the next page starts (`null`: this is the last).
    pub next_cursor: Option<Cursor>,
}

impl super::Request for ListAgents {
    const TOOL: &'static str = "agent.list";
    const DESCRIPTION: &'static str = "Registered agents, a page at a time in registration order, optionally only those with a role or enabled flag: what a host reconciles against after a restart.";
    const MUTATES: bool = false;
    type Output = AgentPage;

    store_tool!();
}

impl Tool for ListAgents {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: ListAgents, (): ()) -> Result<AgentPage, ToolError> {
        let limit = args.limit.map_or(50, |l| l.0);
        let after = Cursor::start(args.cursor.as_ref())?;
        let mut rows = store::agents::list_agents(
            cx.tx,
            after,
            args.role.as_ref().map(Role::as_str),
            args.enabled,
            u64::from(limit) + 1,
        )?;
        let next_cursor = Cursor::page(&mut rows, limit, |(rowid, _)| *rowid);
        Ok(AgentPage {
            agents: rows.into_iter().map(|(_, a)| a).collect(),
            next_cursor,
        })
    }
}

/// Arguments of `task.get`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetTask {
    /// The task.
    pub task_id: Id,
}

/// Result of `task.get`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TaskDetail {
    /// The task.
    pub task: Task,
}

impl super::Request for GetTask {
    const TOOL: &'static str = "task.get";
    const DESCRIPTION: &'static str =
        "A task: its title, summary and who created it (not_found if there is none).";
    const MUTATES: bool = false;
    type Output = TaskDetail;

    store_tool!();
}

impl Tool for GetTask {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: GetTask, (): ()) -> Result<TaskDetail, ToolError> {
        let task = store::agents::task(cx.tx, args.task_id.as_str())?
            .ok_or_else(|| ToolError::not_found("task", args.task_id.as_str()))?;
        Ok(TaskDetail { task })
    }
}

/// Arguments of `task.list`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTasks {
    /// At most this many (default 50, at most 200).
    pub limit: Option<Limit<200>>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<Cursor>,
}

/// Result of `task.list`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TaskPage {
    /// The tasks, oldest first.
    pub tasks: Vec<Task>,
    /// Where the next page starts (`null`: this is the last).
    pub next_cursor: Option<Cursor>,
}

impl super::Request for ListTasks {
    const TOOL: &'static str = "task.list";
    const DESCRIPTION: &'static str = "Tasks, a page at a time, oldest first.";
    const MUTATES: bool = false;
    type Output = TaskPage;

    store_tool!();
}

impl Tool for ListTasks {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: ListTasks, (): ()) -> Result<TaskPage, ToolError> {
        let limit = args.limit.map_or(50, |l| l.0);
        let after = Cursor::start(args.cursor.as_ref())?;
        let mut rows = store::agents::list_tasks(cx.tx, after, u64::from(limit) + 1)?;
        let next_cursor = Cursor::page(&mut rows, limit, |(rowid, _)| *rowid);
        Ok(TaskPage {
            tasks: rows.into_iter().map(|(_, t)| t).collect(),
            next_cursor,
        })
    }
}
