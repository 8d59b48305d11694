//! Line-ending conversions git would make, named when a patch does not
//! apply.
//!
//! roundtable applies a diff to the working tree's bytes as they are, and
//! converts no line ends. In a repository where git converts them for a
//! path (`core.autocrlf`, or `.gitattributes` `text`/`eol`/`crlf`), the
//! working tree and the repository disagree on that path's line ends, so a
//! diff made in one form (`git diff` writes the repository's, LF) does not
//! match the other (a CRLF checkout). The bare "hunk does not apply" then
//! hides the cause; [`explain`] names the rule and the conversion instead.

use super::details::PatchDoesNotApplyDetails;
use super::ToolError;
use crate::ErrorCode;
use std::path::Path;

/// The rule under which git converts a path's line ends, and what it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EolRule {
    /// The rule, as configured: `core.autocrlf=true`, or the path's
    /// attributes (`text eol=crlf`, from `.gitattributes`).
    pub rule: String,
    /// What git does to the path's line ends.
    pub conversion: &'static str,
}

const TO_CRLF: &str = "git checks this file out with CRLF line ends and stores it with LF: the working tree's lines end in CRLF, while a diff made by `git diff` (or from the repository) has LF lines";
const TO_LF: &str = "git stores this file with LF line ends, converting CRLF on `git add`: the working tree's bytes may hold CRLF lines that the repository's (and `git diff`'s) do not";

/// The line-ending conversion git applies to `path` in the repository at
/// `root`, if any (`None` outside a git repository, or when git would
/// leave the path's bytes alone). Best effort: a configuration or
/// attribute git2 cannot read counts as none, since this only explains a
/// refusal that happens anyway.
pub(crate) fn rule_for(root: &Path, path: &str) -> Option<EolRule> {
    use git2::AttrValue;
    let repo = git2::Repository::open(root).ok()?;
    let attr = |name: &str| -> Option<String> {
        let value = repo
            .get_attr(Path::new(path), name, git2::AttrCheckFlags::FILE_THEN_INDEX)
            .ok()?;
        match AttrValue::from_string(value) {
            AttrValue::True => Some("true".to_owned()),
            AttrValue::False => Some("false".to_owned()),
            AttrValue::String(s) => Some(s.to_owned()),
            AttrValue::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
            AttrValue::Unspecified => None,
        }
    };
    let config = repo.config().ok();
    let setting = |name: &str| -> Option<String> {
        config
            .as_ref()
            .and_then(|c| c.get_string(name).ok())
            .map(|v| v.to_ascii_lowercase())
    };
    let autocrlf = setting("core.autocrlf");
    let core_eol = setting("core.eol");
    // The legacy `crlf` attribute spells `text` (`crlf`), `-text` (`-crlf`)
    // and `eol=lf` (`crlf=input`).
    let legacy = attr("crlf");
    let text = attr("text").or_else(|| match legacy.as_deref() {
        Some("true") => Some("true".to_owned()),
        Some("false") => Some("false".to_owned()),
        _ => None,
    });
    let eol = attr("eol").or_else(|| (legacy.as_deref() == Some("input")).then(|| "lf".to_owned()));
    if text.as_deref() == Some("false") {
        return None;
    }
    let attributes = |spelled: String| EolRule {
        rule: format!("{spelled} (from .gitattributes)"),
        conversion: TO_LF,
    };
    match (text.as_deref(), eol.as_deref()) {
        (_, Some("crlf")) => {
            let spelled = match text.as_deref() {
                Some(t) if t != "true" => format!("text={t} eol=crlf"),
                _ => "eol=crlf".to_owned(),
            };
            Some(EolRule {
                conversion: TO_CRLF,
                ..attributes(spelled)
            })
        }
        (_, Some("lf")) => Some(attributes(match text.as_deref() {
            Some(t) if t != "true" => format!("text={t} eol=lf"),
            _ => "eol=lf".to_owned(),
        })),
        (Some(t), _) => {
            let spelled = if t == "true" {
                "text".to_owned()
            } else {
                format!("text={t}")
            };
            let crlf = autocrlf.as_deref() == Some("true")
                || (autocrlf.as_deref() != Some("input") && core_eol.as_deref() == Some("crlf"));
            let setting = if autocrlf.as_deref() == Some("true") {
                ", core.autocrlf=true"
            } else if crlf {
                ", core.eol=crlf"
            } else {
                ""
            };
            Some(EolRule {
                rule: format!("{spelled} (from .gitattributes){setting}"),
                conversion: if crlf { TO_CRLF } else { TO_LF },
            })
        }
        (None, _) => match autocrlf.as_deref() {
            Some("true") => Some(EolRule {
                rule: "core.autocrlf=true".to_owned(),
                conversion: TO_CRLF,
            }),
            Some("input") => Some(EolRule {
                rule: "core.autocrlf=input".to_owned(),
                conversion: TO_LF,
            }),
            _ => None,
        },
    }
}

/// `error` with the line-ending rule of the path it is about named, when
/// it is a `patch_does_not_apply` on a path git converts: the message says
/// the rule and the conversion, and the details carry them as `eol_rule`
/// and `eol_conversion`. Any other error is returned as it is.
pub(crate) fn explain(root: &Path, error: ToolError) -> ToolError {
    if error.code() != ErrorCode::PatchDoesNotApply {
        return error;
    }
    let Some(path) = error.details().get("path").and_then(|p| p.as_str()) else {
        return error;
    };
    let Some(found) = rule_for(root, path) else {
        return error;
    };
    let message = format!(
        "{} (line endings: {path} is under the git rule {}; {}; roundtable applies a diff to the working tree's bytes and converts no line ends, so give the diff with the line ends the working tree has)",
        error.message(),
        found.rule,
        found.conversion
    );
    let Some(details) = error.details_as::<PatchDoesNotApplyDetails>() else {
        return error;
    };
    let details = PatchDoesNotApplyDetails {
        eol_rule: Some(found.rule),
        eol_conversion: Some(found.conversion.to_owned()),
        ..details
    };
    ToolError::new(message, details)
}
