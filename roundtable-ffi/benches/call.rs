//! Per-call overhead of the C ABI: `rt_engine_call("proposal.get")` against
//! the same call through the Rust API, on a warm store.
//!
//! `cargo bench -p roundtable-ffi --bench call` (release profile). Sizes:
//! `RT_BENCH_CALLS` calls per round (2,000), `RT_BENCH_ROUNDS` rounds (15).
//! Rounds interleave the three ways of calling; the best and median round
//! are reported per call.

#![allow(clippy::print_stdout)]

use roundtable::{
    rt_engine, rt_engine_call, rt_engine_close, rt_engine_open, rt_status, rt_string_free,
};
use rt::{Actor, Engine, EngineOptions, Id};
use serde_json::json;
use std::ffi::{c_char, CString};
use std::hint::black_box;
use std::ptr;
use std::time::Instant;

const LIB_RS: &str = "pub fn greet(name: &str) -> String {\n    format!(\"Hello, {name}\")\n}\n";
const PATCH: &str = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n pub fn greet(name: &str) -> String {\n-    format!(\"Hello, {name}\")\n+    format!(\"Hello, {name}!\")\n }\n";

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let calls = env("RT_BENCH_CALLS", 2_000);
    let rounds = env("RT_BENCH_ROUNDS", 15);
    let dir = tempfile::tempdir()?;
    std::fs::create_dir(dir.path().join("src"))?;
    std::fs::write(dir.path().join("src/lib.rs"), LIB_RS)?;

    // Set up one proposal through the Rust API, then drop that engine: both
    // ways of calling below open their own engine on the same store.
    let host = Actor::orchestrator(Id::new("host")?);
    let alice = Actor::agent(Id::new("alice")?);
    let pid = {
        let engine = Engine::open(dir.path(), EngineOptions::default())?;
        engine.call(
            "agent.register",
            json!({"agent_id": "alice", "roles": ["author"]}),
            &host,
        )?;
        engine.call(
            "task.create",
            json!({"task_id": "t1", "title": "Greet louder"}),
            &host,
        )?;
        let created = engine.call(
            "proposal.create",
            json!({"task_id": "t1", "title": "Exclaim", "summary_md": "`!`", "risk": "low",
                   "patch": PATCH, "affected_resources": ["file:src/lib.rs"]}),
            &alice,
        )?;
        created["proposal"]["id"]
            .as_str()
            .ok_or("no proposal id")?
            .to_owned()
    };

    let engine = Engine::open(dir.path(), EngineOptions::default())?;
    let args = json!({"proposal_id": pid});
    let args_text = args.to_string();

    let root = CString::new(dir.path().to_str().ok_or("root is not UTF-8")?)?;
    let mut handle: *mut rt_engine = ptr::null_mut();
    // SAFETY: valid strings and a writable output.
    let status =
        unsafe { rt_engine_open(root.as_ptr(), ptr::null(), &mut handle, ptr::null_mut()) };
    if status != rt_status::RT_OK {
        return Err(format!("rt_engine_open: {status:?}").into());
    }
    let tool = CString::new("proposal.get")?;
    let args_c = CString::new(args_text.clone())?;
    let actor_c = CString::new(r#"{"id":"host","kind":"orchestrator"}"#)?;

    let rust_value = || -> Result<(), Box<dyn std::error::Error>> {
        let out = engine.call("proposal.get", args.clone(), &host)?;
        black_box(out);
        Ok(())
    };
    let rust_text = || -> Result<(), Box<dyn std::error::Error>> {
        let out = engine.call_json("proposal.get", args_text.as_bytes(), &host)?;
        black_box(out.to_string());
        Ok(())
    };
    let c_abi = || -> Result<(), Box<dyn std::error::Error>> {
        let mut out: *mut c_char = ptr::null_mut();
        // SAFETY: an open engine, valid strings, a writable output.
        let status = unsafe {
            rt_engine_call(
                handle,
                tool.as_ptr(),
                args_c.as_ptr(),
                actor_c.as_ptr(),
                &mut out,
                ptr::null_mut(),
            )
        };
        if status != rt_status::RT_OK {
            return Err(format!("rt_engine_call: {status:?}").into());
        }
        black_box(out);
        // SAFETY: the string came from rt_engine_call and is freed once.
        unsafe { rt_string_free(out) };
        Ok(())
    };

    type Way<'a> = (
        &'a str,
        &'a dyn Fn() -> Result<(), Box<dyn std::error::Error>>,
    );
    let ways: [Way<'_>; 3] = [
        (
            "Rust `Engine::call` (serde_json::Value in and out)",
            &rust_value,
        ),
        ("Rust `Engine::call_json` + result to JSON text", &rust_text),
        ("C ABI `rt_engine_call` + `rt_string_free`", &c_abi),
    ];
    // Warm up: page cache, SQLite's statement cache, allocator.
    for (_, f) in &ways {
        for _ in 0..calls / 4 {
            f()?;
        }
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); ways.len()];
    for _ in 0..rounds {
        for (i, (_, f)) in ways.iter().enumerate() {
            let start = Instant::now();
            for _ in 0..calls {
                f()?;
            }
            times[i].push(start.elapsed().as_secs_f64() * 1e6 / calls as f64);
        }
    }
    // SAFETY: closed once, after the last call.
    unsafe { rt_engine_close(handle) };

    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "proposal.get on a warm store: {calls} calls x {rounds} rounds (load {})",
        load.split(' ').next().unwrap_or("?")
    );
    println!("| way | best µs/call | median µs/call |");
    println!("|---|---:|---:|");
    let mut medians = Vec::new();
    for ((name, _), t) in ways.iter().zip(&mut times) {
        t.sort_by(f64::total_cmp);
        let median = t[t.len() / 2];
        medians.push(median);
        println!("| {name} | {:.2} | {:.2} |", t[0], median);
    }
    println!(
        "C ABI overhead per call (median): {:+.2} µs over `Engine::call`, {:+.2} µs over `call_json` + to_string",
        medians[2] - medians[0],
        medians[2] - medians[1]
    );
    Ok(())
}
