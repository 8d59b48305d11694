//! `roundtable call`: one tool run through [`Engine::call_json`] as the
//! actor `--as` names.

use crate::cli_util::{absolute, engine_options, read_input, spinner, to_json, Input};
use roundtable::{Actor, Engine, ToolError};
use std::path::Path;

/// The bytes of `--args`: inline JSON, `@FILE`, or `-` for standard input
/// (`@-` too, as with curl). Neither `@` nor a lone `-` can begin a JSON
/// object, so the spellings never overlap.
fn read_args(args: &str) -> Result<Input, ToolError> {
    if args == "-" {
        return read_input(Path::new("-"));
    }
    if let Some(file) = args.strip_prefix('@') {
        return read_input(Path::new(file));
    }
    Ok(Input::Read(args.as_bytes().to_vec()))
}

pub(crate) fn run(tool: &str, root: &Path, actor: &str, args: &str) -> Result<String, ToolError> {
    // Everything that can be refused without the store is checked first, so
    // a mistyped command does not create a store.
    let actor = Actor::parse(actor).map_err(|e| ToolError::invalid_argument("--as", e))?;
    if roundtable::registry::find(tool).is_none() {
        return Err(ToolError::new(
            format!("there is no tool {tool:?} (`roundtable tools` lists them)"),
            roundtable::operations::details::NotFoundDetails {
                kind: "tool".to_owned(),
                id: tool.to_owned(),
            },
        ));
    }
    let bytes = read_args(args)?;
    let engine = Engine::open(&absolute(root), engine_options())?;
    to_json(&spinner(tool, || engine.call_json(tool, &bytes, &actor))?)
}
