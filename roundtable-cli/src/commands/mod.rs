//! One module per command (`roundtable <command>`): each parses nothing and
//! decides nothing the library does not; it calls the library (the session
//! API, the tool registry, or — for the ungoverned `patch`/`edit`/`state`
//! commands — the workspace functions) and prints the result.

pub(crate) mod approve;
pub(crate) mod blame;
pub(crate) mod call;
pub(crate) mod demo;
pub(crate) mod edit;
pub(crate) mod errors;
pub(crate) mod events;
pub(crate) mod init;
pub(crate) mod log;
pub(crate) mod mcp;
pub(crate) mod patch;
pub(crate) mod recover;
pub(crate) mod reject;
pub(crate) mod serve;
pub(crate) mod show;
pub(crate) mod state;
pub(crate) mod status;
pub(crate) mod tools;
pub(crate) mod verify;
