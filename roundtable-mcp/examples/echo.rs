//! The floor `bench/mcp_bench.py` measures roundtable against: an MCP
//! server on the same SDK (rmcp) and runtime as `roundtable mcp`, doing no
//! work. It has one tool, `echo`, whose result is the JSON in the file
//! named on the command line (the bench gives it roundtable's own
//! `proposal.get` result, so both answer with the same bytes), or the
//! call's arguments when no file is named; as structured content plus the
//! same JSON as text, as roundtable answers.
//!
//!     cargo run --release -p roundtable-mcp --example echo [RESULT.json]

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};

#[derive(Clone)]
struct Echo {
    canned: Option<Arc<Value>>,
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object"});
        let Value::Object(schema) = schema else {
            unreachable!("an object literal")
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new_with_raw(
            "echo",
            Some("Answers with its canned result, or its arguments.".into()),
            schema,
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let value = match &self.canned {
            Some(canned) => Value::clone(canned),
            None => Value::Object(request.arguments.unwrap_or_default()),
        };
        Ok(CallToolResult::structured(value).into())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let canned = match std::env::args_os().nth(1) {
        Some(path) => Some(Arc::new(serde_json::from_slice(&std::fs::read(path)?)?)),
        None => None,
    };
    // As `roundtable mcp` runs: one thread for the protocol.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(async {
            let running = Echo { canned }
                .serve(rmcp::transport::stdio_pipes())
                .await?;
            running.waiting().await?;
            Ok(())
        })
}
