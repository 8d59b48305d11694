//! The MCP handler: the registry as MCP tools, calls run on the engine.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use roundtable::registry::ToolSpec;
use roundtable::{Actor, ActorKind, CallOptions, CancelToken, Engine, ToolError};

use crate::waits::{self, Waits, PROGRESS_EVERY};
use serde_json::Value;

use crate::schema::{self, Side};

/// What the server says about itself to every client.
const INSTRUCTIONS: &str = "roundtable governs changes to this repository. \
Propose a change with proposal.create (a unified diff, an edit plan, a Codex \
*** Begin Patch envelope or SEARCH/REPLACE blocks), follow it with \
proposal.status (its next field says who acts next), and wait for what \
concerns you with events.wait instead of polling (see its description for \
how many waits may be pending and how long one lasts). A refusal is a tool \
error (isError) whose text is the JSON {\"code\", \"message\", \"details\"}: \
code is stable (forbidden, not_found, busy, invalid_argument, ...), message \
says why for a reader, details holds the specifics (a field, a reason); a \
refusal changes nothing.";

/// One MCP server over one engine.
///
/// Built [`for_actor`](McpServer::for_actor) (stdio: the launching host
/// names the actor once), or by [`serve_http`](crate::serve_http) to take
/// each request's actor from the bearer check.
#[derive(Clone, Debug)]
pub struct McpServer {
    engine: Arc<Engine>,
    actor: Option<Actor>,
    /// The pending waits, per actor (shared by every request's server over
    /// HTTP): [`crate::waits`].
    waits: Arc<Waits>,
}

impl McpServer {
    /// A server whose every request acts as `actor`.
    pub fn for_actor(engine: Arc<Engine>, actor: Actor) -> McpServer {
        McpServer {
            engine,
            actor: Some(actor),
            waits: Arc::default(),
        }
    }

    /// This server with at most `max` pending waits per actor instead of
    /// [`MAX_WAITS`](crate::MAX_WAITS).
    #[must_use]
    pub fn with_max_waits(mut self, max: usize) -> McpServer {
        self.waits = Arc::new(Waits::new(max));
        self
    }

    /// A server that takes each request's actor from the HTTP request the
    /// bearer check annotated; a request without one is refused.
    /// Every request's server shares `waits`, so the cap counts each
    /// actor's waits across requests.
    pub(crate) fn per_request(engine: Arc<Engine>, waits: Arc<Waits>) -> McpServer {
        McpServer {
            engine,
            actor: None,
            waits,
        }
    }

    fn actor(&self, cx: &RequestContext<RoleServer>) -> Result<Actor, McpError> {
        if let Some(actor) = &self.actor {
            return Ok(actor.clone());
        }
        cx.extensions
            .get::<hyper::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Actor>())
            .cloned()
            .ok_or_else(|| McpError::invalid_request("no actor is bound to this request", None))
    }
}

/// The MCP tools an actor of `kind` may call, in registry order, each with
/// its schemas and annotations.
pub fn tool_list(kind: ActorKind) -> Vec<Tool> {
    Engine::tools()
        .iter()
        .filter(|spec| spec.callable_by(kind))
        .map(tool)
        .collect()
}

fn tool(spec: &ToolSpec) -> Tool {
    let annotations = ToolAnnotations::new()
        .read_only(!spec.mutates)
        .destructive(spec.destructive)
        .idempotent(spec.idempotent)
        // The tools act on this repository and its store only.
        .open_world(false);
    let description = if spec.waits {
        format!("{} {}", spec.description, waits::rule())
    } else {
        spec.description.to_owned()
    };
    // The registry's schemas in the form every MCP client reads cleanly
    // (crate::schema); the registry itself is unchanged.
    Tool::new_with_raw(
        spec.name,
        Some(description.into()),
        schema::for_clients(spec.input_schema(), Side::Input),
    )
    .with_raw_output_schema(Arc::new(schema::for_clients(
        spec.output_schema(),
        Side::Output,
    )))
    .with_annotations(annotations)
}

/// A refusal as MCP carries it: a tool error (`isError: true`) whose one
/// content item is the refusal JSON `{"code", "message", "details"}` as
/// text, and no `structuredContent`.
///
/// Structured content on an error would be checked against the tool's
/// output schema by clients that validate it even on errors (the
/// TypeScript SDK and the Inspector do), and a refusal matches no output
/// schema: the agent would read a schema complaint instead of the refusal.
/// Output schemas stay the success shape alone.
fn refused(refusal: &roundtable::operations::ToolError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(refusal.to_json().to_string())])
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("roundtable", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let actor = self.actor(&cx)?;
        Ok(ListToolsResult::with_all_items(tool_list(actor.kind)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let actor = self.actor(&cx)?;
        // A tool that does not exist is the request's error (JSON-RPC
        // invalid params), not a tool result.
        let Some(spec) = roundtable::registry::find(&request.name) else {
            return Err(McpError::invalid_params(
                format!("no tool is named {:?}", request.name),
                Some(serde_json::json!({"tool": request.name})),
            ));
        };
        let name = request.name.into_owned();
        let mut args = Value::Object(request.arguments.unwrap_or_default());
        // A read returns in microseconds: it runs here, since a hand-off to
        // another thread costs more than the call (`bench/mcp_bench.py`).
        if !spec.mutates && !spec.waits {
            return Ok(reply(self.engine.call(&name, args, &actor)));
        }
        // A change (fsync, the apply lock) runs on the blocking pool, a
        // wait on a thread of its own (`crate::waits`), so neither holds up
        // the protocol or other requests, and waits never hold the threads
        // changes need. Both are cancellable until their commit point.
        let cancel = CancelToken::new();
        let options = CallOptions {
            deadline: None,
            cancel: Some(cancel.clone()),
        };
        let engine = Arc::clone(&self.engine);
        let progress = cx.meta.get_progress_token();
        let running = if spec.waits {
            let pending = match self.waits.enter(&actor.to_string()) {
                Ok(p) => p,
                Err(refusal) => return Ok(reply(Err(refusal))),
            };
            if progress.is_none() {
                waits::quiet(&mut args);
            }
            waits::spawn(pending, move || {
                engine.call_with(&name, args, &actor, &options)
            })
            .ok_or_else(|| McpError::internal_error("no thread for the wait", None))?
        } else {
            let (tx, rx) = tokio::sync::oneshot::channel();
            tokio::task::spawn_blocking(move || {
                let _ = tx.send(engine.call_with(&name, args, &actor, &options));
            });
            rx
        };
        // This request dropped (its client gone) also cancels the call.
        let _cancel_on_drop = CancelOnDrop(cancel.clone());
        let outcome = finish(running, &cancel, &cx, progress).await?;
        Ok(reply(outcome))
    }
}

/// A tool's outcome as an MCP result: structured content, or a refusal.
fn reply(outcome: Result<Value, ToolError>) -> CallToolResponse {
    match outcome {
        Ok(value) => CallToolResult::structured(value),
        Err(refusal) => refused(&refusal),
    }
    .into()
}

/// Cancels its token when dropped.
struct CancelOnDrop(CancelToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// Await a running call: cancel it when the client cancels the request
/// (`notifications/cancelled`, or the HTTP client gone), and send progress
/// every [`PROGRESS_EVERY`] when the request asked for it.
async fn finish(
    mut running: tokio::sync::oneshot::Receiver<Result<Value, ToolError>>,
    cancel: &CancelToken,
    cx: &RequestContext<RoleServer>,
    progress: Option<ProgressToken>,
) -> Result<Result<Value, ToolError>, McpError> {
    let start = tokio::time::Instant::now();
    let mut ticks = tokio::time::interval_at(start + PROGRESS_EVERY, PROGRESS_EVERY);
    let mut told = 0u32;
    loop {
        tokio::select! {
            out = &mut running => {
                return out.map_err(|_| {
                    McpError::internal_error("the tool call panicked", None)
                });
            }
            () = cx.ct.cancelled(), if !cancel.is_cancelled() => cancel.cancel(),
            _ = ticks.tick(), if progress.is_some() => {
                if let Some(token) = &progress {
                    told += 1;
                    let param = ProgressNotificationParam::new(token.clone(), f64::from(told))
                        .with_message(format!(
                            "still waiting after {} s",
                            start.elapsed().as_secs()
                        ));
                    // A client that cannot be told is cancelled by its transport.
                    let _ = cx.peer.notify_progress(param).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(kind: ActorKind) -> Vec<String> {
        tool_list(kind).into_iter().map(|t| t.name.into()).collect()
    }

    #[test]
    fn each_kind_sees_exactly_the_tools_it_may_call() {
        for kind in ActorKind::ALL {
            let expected: Vec<String> = Engine::tools()
                .iter()
                .filter(|s| s.callers.contains(&kind))
                .map(|s| s.name.to_owned())
                .collect();
            assert_eq!(names(kind), expected, "{kind:?}");
        }
        let agent = names(ActorKind::Agent);
        for hidden in [
            "patch.apply",
            "agent.register",
            "task.create",
            "transaction.rollback",
            "test.record",
            "policy.activate",
            "human.approve",
        ] {
            assert!(!agent.iter().any(|n| n == hidden), "agent sees {hidden}");
        }
        for shown in [
            "proposal.create",
            "proposal.status",
            "events.wait",
            "vote.cast",
        ] {
            assert!(agent.iter().any(|n| n == shown), "agent lacks {shown}");
        }
        let host = names(ActorKind::Orchestrator);
        assert!(host.iter().any(|n| n == "patch.apply"));
        assert!(!host.iter().any(|n| n == "proposal.create"));
    }

    /// What the MCP Inspector's `--strict` lint and the TypeScript SDK
    /// (ajv) complain about in one schema position, as `path: problem`.
    fn lint(schema: &Value, path: &str, keyword: Option<&str>, out: &mut Vec<String>) {
        // The MCP Inspector's strict lint and the TS SDK (ajv) hold the same
        // list (tests/mcp-ts runs the Inspector on every kind's tools).
        const FORMATS: &[&str] = crate::schema::STANDARD_FORMATS;
        const RULES: &[&str] = &[
            "additionalProperties",
            "unevaluatedProperties",
            "additionalItems",
            "unevaluatedItems",
        ];
        const NOTES: &[&str] = &[
            "description",
            "title",
            "default",
            "examples",
            "deprecated",
            "readOnly",
            "writeOnly",
            "$comment",
            "$schema",
            "$defs",
            "definitions",
        ];
        let map = match schema {
            Value::Bool(_) if keyword.is_some_and(|k| RULES.contains(&k)) => return,
            Value::Bool(b) => return out.push(format!("{path}: bare {b}")),
            Value::Object(map) => map,
            _ => return,
        };
        if map.get("type").is_some_and(Value::is_array) {
            out.push(format!("{path}: type array"));
        }
        if let Some(f) = map.get("format").and_then(Value::as_str) {
            if !FORMATS.contains(&f) {
                out.push(format!("{path}: format {f}"));
            }
        }
        if !map.keys().any(|k| !NOTES.contains(&k.as_str())) && keyword != Some("not") {
            out.push(format!("{path}: accepts anything"));
        }
        for (k, v) in map {
            match (k.as_str(), v) {
                (
                    "properties" | "patternProperties" | "$defs" | "definitions"
                    | "dependentSchemas",
                    Value::Object(subs),
                ) => {
                    for (name, sub) in subs {
                        lint(sub, &format!("{path}.{k}.{name}"), Some(k), out);
                    }
                }
                ("allOf" | "anyOf" | "oneOf" | "prefixItems", Value::Array(subs)) => {
                    for (i, sub) in subs.iter().enumerate() {
                        lint(sub, &format!("{path}.{k}[{i}]"), Some(k), out);
                    }
                }
                (
                    "items"
                    | "contains"
                    | "not"
                    | "propertyNames"
                    | "if"
                    | "then"
                    | "else"
                    | "additionalProperties"
                    | "unevaluatedProperties"
                    | "additionalItems"
                    | "unevaluatedItems"
                    | "contentSchema",
                    sub,
                ) => {
                    lint(sub, &format!("{path}.{k}"), Some(k), out);
                }
                _ => {}
            }
        }
    }

    /// Issue 32 item 7: every tool schema an MCP client sees, for every
    /// actor kind, is free of what clients warn about (non-standard
    /// formats, `type` arrays, bare `true`, schemas that accept anything
    /// silently), and an actor's `tools/list` is lean.
    #[test]
    fn item7_tool_schemas_are_portable_and_lean() {
        for kind in ActorKind::ALL {
            let tools = tool_list(kind);
            let mut problems = Vec::new();
            for t in &tools {
                let input = Value::Object((*t.input_schema).clone());
                lint(
                    &input,
                    &format!("{}.inputSchema", t.name),
                    None,
                    &mut problems,
                );
                let output = Value::Object((**t.output_schema.as_ref().expect("output")).clone());
                lint(
                    &output,
                    &format!("{}.outputSchema", t.name),
                    None,
                    &mut problems,
                );
            }
            assert!(
                problems.is_empty(),
                "{kind:?}: {} problems, e.g. {:#?}",
                problems.len(),
                &problems[..problems.len().min(10)]
            );
            let bytes = serde_json::to_vec(&ListToolsResult::with_all_items(tools))
                .expect("json")
                .len();
            // 208 KB for an agent before issue 32; the budget leaves room
            // for new tools and fields but not for the noise to come back
            // (130 KB until people's roles and `proposal.diff` `paths`,
            // which took an agent's list to 130.1 KB; 135 KB until
            // provenance — `provenance.blame`, `provenance.verify` and
            // `proposal.revert_agent` — took an orchestrator's to 140.0 KB).
            assert!(bytes < 145_000, "{kind:?}: tools/list is {bytes} bytes");
        }
    }

    #[test]
    fn every_tool_carries_object_schemas_and_annotations_from_its_nature() {
        let all: Vec<Tool> = Engine::tools().iter().map(tool).collect();
        assert_eq!(all.len(), Engine::tools().len());
        for (t, spec) in all.iter().zip(Engine::tools()) {
            assert_eq!(t.input_schema.get("type"), Some(&Value::from("object")));
            let out = t.output_schema.as_ref().expect("output schema");
            assert_eq!(
                out.get("type"),
                Some(&Value::from("object")),
                "{}",
                spec.name
            );
            let a = t.annotations.as_ref().expect("annotations");
            assert_eq!(a.read_only_hint, Some(!spec.mutates), "{}", spec.name);
            assert_eq!(a.idempotent_hint, Some(spec.idempotent), "{}", spec.name);
            assert_eq!(a.destructive_hint, Some(spec.destructive), "{}", spec.name);
        }
        let by = |n: &str| {
            all.iter()
                .find(|t| t.name == n)
                .and_then(|t| t.annotations.clone())
                .expect("tool")
        };
        // A waiting tool says the MCP wait rules (the cap, the time).
        let said = |n: &str| {
            all.iter()
                .find(|t| t.name == n)
                .and_then(|t| t.description.clone())
                .expect("tool")
        };
        for waits in ["events.wait", "claim.acquire"] {
            assert!(said(waits).contains("at most 600 waiting calls"), "{waits}");
        }
        assert!(!said("proposal.get").contains("waiting calls"));
        assert_eq!(by("proposal.get").read_only_hint, Some(true));
        assert_eq!(by("proposal.get").idempotent_hint, Some(true));
        assert_eq!(by("patch.apply").destructive_hint, Some(true));
        assert_eq!(by("proposal.create").read_only_hint, Some(false));
        assert_eq!(by("proposal.create").idempotent_hint, Some(false));
        assert_eq!(by("proposal.create").destructive_hint, Some(false));
    }
}
