//! `roundtable recover`: open the workspace (which runs recovery) and
//! report what recovery could not finish.

use crate::cli_util::{open, Common};
use roundtable::ToolError;

/// `roundtable recover`: opening the engine runs recovery; what it could
/// not finish is [`roundtable::Engine::unrecovered`], reported as `busy` (the
/// transactions stay `applying`) until its causes are removed.
pub(crate) fn run(common: &Common) -> Result<String, ToolError> {
    let engine = open(common)?;
    let left = engine.unrecovered();
    let Some(first) = left.first() else {
        return Ok(if common.json {
            "{\"unrecovered\":[]}\n".to_owned()
        } else {
            "nothing is left applying: every transaction is applied, recovered or failed\n"
                .to_owned()
        });
    };
    let each: Vec<String> = left
        .iter()
        .map(|u| format!("{} ({}: {})", u.transaction_id, u.code, u.message))
        .collect();
    Err(ToolError::new(
        format!(
            "{} transaction(s) left applying could not be recovered: {}; remove the cause and run `roundtable recover` again",
            left.len(),
            each.join("; ")
        ),
        roundtable::operations::details::BusyDetails {
            transaction_id: Some(first.transaction_id.clone()),
            ..Default::default()
        },
    ))
}
