//! The JSON registry: every tool by name, with its JSON Schemas, and
//! [`Engine::call`], the entry point of every front end that speaks JSON
//! (the CLI, MCP, C, Python, Go).
//!
//! It is a thin adapter over the typed [`Session`](crate::Session): a call
//! finds the tool, decodes its arguments into the tool's request type,
//! runs that request through the actor's session exactly as a Rust host
//! would, and encodes the result. The schemas are derived from the very
//! types that decode and encode, so the two surfaces cannot disagree.

use crate::actor::{Actor, ActorKind};
use crate::engine::Engine;
use crate::operations::{
    claims, evidence, inbox, landing, log, policies, proposals, provenance, queue, rebase, revert,
    revert_agent, review, setup, transactions, validate, verify, workspace,
};
use crate::operations::{Request, ToolError};
use schemars::JsonSchema;
use serde_json::{json, Value};

/// The version of the JSON surface: the tools, their argument and result
/// shapes and error codes as `Engine::tools_json` describes them. It grows
/// when a change could break a host that reads or writes them (a field
/// removed or renamed, a meaning changed); adding a tool, an optional
/// argument or a result field keeps it. Front ends compare it with the one
/// they were generated from.
pub const JSON_VERSION: u32 = 1;

/// A tool as the registry lists it.
#[derive(Clone, Copy)]
pub struct ToolSpec {
    /// The tool's name (`proposal.create`).
    pub name: &'static str,
    /// What it does, for people and for agents choosing a tool.
    pub description: &'static str,
    /// Whether it changes state.
    pub mutates: bool,
    /// The kinds of actor that may call it.
    pub callers: &'static [ActorKind],
    /// Whether a repeat with the same arguments has no further effect.
    pub idempotent: bool,
    /// Whether it may overwrite or retire state rather than only add.
    pub destructive: bool,
    /// Whether it may wait on other actors (`events.wait`, a claim wait).
    pub waits: bool,
    input_schema: fn() -> Value,
    output_schema: fn() -> Value,
    call: fn(&Engine, Value, &Actor) -> Result<Value, ToolError>,
}

impl std::fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.name)
            .finish()
    }
}

impl ToolSpec {
    /// Whether an actor of this kind may call the tool (the tool list a
    /// front end shows that actor).
    pub fn callable_by(&self, kind: ActorKind) -> bool {
        self.callers.contains(&kind)
    }

    /// The JSON Schema of the arguments.
    pub fn input_schema(&self) -> Value {
        (self.input_schema)()
    }

    /// The JSON Schema of the result.
    pub fn output_schema(&self) -> Value {
        (self.output_schema)()
    }

    pub(crate) fn invoke(
        &self,
        engine: &Engine,
        args: Value,
        actor: &Actor,
    ) -> Result<Value, ToolError> {
        (self.call)(engine, args, actor)
    }
}

fn schema<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).expect("a schema serializes")
}

const fn spec<R: Request>() -> ToolSpec {
    ToolSpec {
        name: R::TOOL,
        description: R::DESCRIPTION,
        mutates: R::MUTATES,
        callers: R::CALLERS,
        idempotent: R::IDEMPOTENT,
        destructive: R::DESTRUCTIVE,
        waits: R::WAITS,
        input_schema: schema::<R>,
        output_schema: schema::<R::Output>,
        call: call::<R>,
    }
}

/// The JSON adapter of one request type: decode the arguments, run the
/// request through the actor's [`Session`](crate::Session), encode the
/// result. No rule lives here.
fn call<R: Request>(engine: &Engine, args: Value, actor: &Actor) -> Result<Value, ToolError> {
    let out = engine.session(actor.clone()).run_json::<R>(args)?;
    let value = serde_json::to_value(&out).expect("results serialize");
    // Every result reads back as its type, to the same JSON (what a
    // replayed idempotent call and a Rust host rely on).
    #[cfg(debug_assertions)]
    {
        let again: R::Output = serde_json::from_value(value.clone())
            .unwrap_or_else(|e| panic!("{} result does not read back: {e}", R::TOOL));
        assert_eq!(
            serde_json::to_value(&again).expect("results serialize"),
            value,
            "{} result reads back differently",
            R::TOOL
        );
    }
    Ok(value)
}

/// Every tool, in a stable order.
pub static TOOLS: &[ToolSpec] = &[
    spec::<setup::RegisterAgent>(),
    spec::<setup::CreateTask>(),
    spec::<setup::GetAgent>(),
    spec::<setup::ListAgents>(),
    spec::<setup::GetTask>(),
    spec::<setup::ListTasks>(),
    spec::<proposals::CreateProposal>(),
    spec::<proposals::AttachPatch>(),
    spec::<rebase::RebaseProposal>(),
    spec::<proposals::GetProposal>(),
    spec::<proposals::ListProposals>(),
    spec::<review::ProposalFiles>(),
    spec::<review::ProposalDiff>(),
    spec::<review::ProposalSymbols>(),
    spec::<review::CompareRevisions>(),
    spec::<review::GetProposalStatus>(),
    spec::<revert::RevertProposal>(),
    spec::<revert_agent::RevertAgent>(),
    spec::<inbox::ListInbox>(),
    spec::<inbox::WaitInbox>(),
    spec::<proposals::RequestReview>(),
    spec::<proposals::Withdraw>(),
    spec::<proposals::Reject>(),
    spec::<evidence::CastVote>(),
    spec::<evidence::ListVotes>(),
    spec::<evidence::RecordDecision>(),
    spec::<evidence::RecordSecurityReview>(),
    spec::<evidence::RequestApproval>(),
    spec::<evidence::Approve>(),
    spec::<evidence::RecordTest>(),
    spec::<evidence::ListTests>(),
    spec::<evidence::GetTest>(),
    spec::<claims::AcquireClaim>(),
    spec::<claims::RenewClaim>(),
    spec::<claims::ReleaseClaim>(),
    spec::<claims::ListClaims>(),
    spec::<validate::Validate>(),
    spec::<policies::SetPolicy>(),
    spec::<policies::ActivatePolicy>(),
    spec::<policies::GetPolicy>(),
    spec::<transactions::ApplyRevision>(),
    spec::<transactions::Rollback>(),
    spec::<transactions::GetTransaction>(),
    spec::<transactions::ListTransactions>(),
    spec::<transactions::ListPhases>(),
    spec::<transactions::CheckRecovery>(),
    spec::<queue::Enqueue>(),
    spec::<queue::ListQueue>(),
    spec::<queue::RemoveFromQueue>(),
    spec::<queue::RunQueue>(),
    spec::<landing::LandingLog>(),
    spec::<landing::SettleLanding>(),
    spec::<verify::VerifyProvenance>(),
    spec::<provenance::BlameFile>(),
    spec::<log::ListEvents>(),
    spec::<log::WaitEvents>(),
    spec::<log::VerifyEvents>(),
    spec::<workspace::ConfigureWorkspace>(),
    spec::<workspace::GetWorkspace>(),
];

/// The tool named `name`.
pub fn find(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
}

impl Engine {
    /// Call `tool` with `args` (a JSON object) as `actor`.
    ///
    /// The result is the tool's JSON result; an error is a [`ToolError`]
    /// with a stable code. A refused call changes nothing.
    pub fn call(&self, tool: &str, args: Value, actor: &Actor) -> Result<Value, ToolError> {
        self.check_process()?;
        let spec = find(tool).ok_or_else(|| {
            ToolError::new(
                format!("there is no tool {tool:?}"),
                crate::operations::details::NotFoundDetails {
                    kind: "tool".to_owned(),
                    id: tool.to_owned(),
                },
            )
        });
        spec.and_then(|spec| spec.invoke(self, args, actor))
    }

    /// [`call`](Engine::call), interrupted by `options`: every wait it makes
    /// (the apply lock, a busy store, a claim wait, `events.wait`) gives up
    /// when `options`' token is cancelled or its deadline passes, and the
    /// call then fails with `cancelled` or `deadline_exceeded` having
    /// changed nothing. A call past its commit point finishes and reports
    /// success whatever happens to `options` (see [`crate::interrupt`]).
    pub fn call_with(
        &self,
        tool: &str,
        args: Value,
        actor: &Actor,
        options: &crate::CallOptions,
    ) -> Result<Value, ToolError> {
        self.interrupted(options, || self.call(tool, args, actor))
    }

    /// [`call_json`](Engine::call_json) interrupted by `options`, as
    /// [`call_with`](Engine::call_with).
    pub fn call_json_with(
        &self,
        tool: &str,
        args: &[u8],
        actor: &Actor,
        options: &crate::CallOptions,
    ) -> Result<Value, ToolError> {
        self.interrupted(options, || self.call_json(tool, args, actor))
    }

    /// `call` run with `options`' cancellation token and deadline in
    /// force, after checking they have not already passed.
    fn interrupted(
        &self,
        options: &crate::CallOptions,
        call: impl FnOnce() -> Result<Value, ToolError>,
    ) -> Result<Value, ToolError> {
        self.check_process()?;
        crate::interrupt::scope(options, || {
            crate::interrupt::check().map_err(ToolError::from)?;
            call()
        })
    }

    /// [`call`](Engine::call) with the arguments as JSON text, parsed
    /// strictly (a key given twice is refused).
    pub fn call_json(&self, tool: &str, args: &[u8], actor: &Actor) -> Result<Value, ToolError> {
        self.check_process()?;
        let args = crate::json::parse_strict(args)
            .map_err(|e| ToolError::invalid_argument("", format!("not valid JSON: {e}")))?;
        self.call(tool, args, actor)
    }

    /// Every tool.
    pub fn tools() -> &'static [ToolSpec] {
        TOOLS
    }

    /// Every tool as JSON: `[{"name", "description", "mutates", "callers",
    /// "idempotent", "destructive", "waits", "input_schema", "output_schema"}]`.
    pub fn tools_json() -> Value {
        Value::Array(
            TOOLS
                .iter()
                .map(|t| {
                    json!({
                        "name": t.name,
                        "description": t.description,
                        "mutates": t.mutates,
                        "callers": t.callers,
                        "idempotent": t.idempotent,
                        "destructive": t.destructive,
                        "waits": t.waits,
                        "input_schema": t.input_schema(),
                        "output_schema": t.output_schema(),
                    })
                })
                .collect(),
        )
    }

    /// Every error code as JSON, sorted by code: `[{"code", "status",
    /// "description", "details_schema"}]` (see [`errors_json`](crate::operations::details::errors_json)):
    /// what the `details` of each code's errors hold.
    pub fn errors_json() -> Value {
        crate::operations::details::errors_json()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_unique_and_schemas_are_closed() {
        let mut names = std::collections::HashSet::new();
        for t in TOOLS {
            assert!(names.insert(t.name), "{} twice", t.name);
            let input = t.input_schema();
            assert_eq!(input["type"], "object", "{}", t.name);
            assert_eq!(input["additionalProperties"], false, "{}", t.name);
            let has_key = input["properties"].get("idempotency_key").is_some();
            assert_eq!(
                has_key, t.mutates,
                "{}: idempotency_key iff mutating",
                t.name
            );
            assert!(!t.description.is_empty());
            assert_eq!(t.output_schema()["type"], "object", "{}", t.name);
        }
    }
}
