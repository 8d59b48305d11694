//! Argument types: each decodes strictly and describes itself in the
//! tool's JSON Schema, so the schema and the decoder cannot disagree.

use crate::resource::Resource;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use std::borrow::Cow;

/// A single-line or Markdown text: trimmed, never blank, without a NUL
/// character, at most `MAX` characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Text<const MAX: usize>(String);

impl<const MAX: usize> Text<MAX> {
    /// Trim `s` and check it.
    pub fn new(s: &str) -> Result<Text<MAX>, String> {
        let t = s.trim();
        if t.is_empty() {
            return Err("is blank".into());
        }
        if t.contains('\0') {
            // PostgreSQL's text keeps no NUL; neither store gets one.
            return Err("holds a NUL character".into());
        }
        let n = t.chars().count();
        if n > MAX {
            return Err(format!("is {n} characters; the limit is {MAX}"));
        }
        Ok(Text(t.to_owned()))
    }

    /// The trimmed text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de, const MAX: usize> Deserialize<'de> for Text<MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Text::new(&s).map_err(D::Error::custom)
    }
}

impl<const MAX: usize> JsonSchema for Text<MAX> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("Text{MAX}").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "minLength": 1,
            "maxLength": MAX,
            "pattern": "\\S",
            "description": "Trimmed; must not be blank or hold a NUL character."
        })
    }
}

/// A title: one line (no line breaks or other control characters) of up
/// to 200 characters, trimmed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Title(Text<200>);

impl Title {
    /// Trim `s` and check it.
    pub fn new(s: &str) -> Result<Title, String> {
        let t = Text::new(s)?;
        if t.as_str().chars().any(char::is_control) {
            return Err("must be one line, without control characters".into());
        }
        Ok(Title(t))
    }

    /// The trimmed title.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl<'de> Deserialize<'de> for Title {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Title::new(&s).map_err(D::Error::custom)
    }
}

impl JsonSchema for Title {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Title".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "pattern": "^[^\\u0000-\\u001f\\u007f]+$",
            "description": "One line; trimmed; must not be blank."
        })
    }
}
/// Markdown prose (summaries, reasons, notes): up to 64 KiB of characters.
pub type Markdown = Text<65_536>;

pub use crate::model::Role;

/// A revision number: 1 or more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct RevisionNumber(pub u32);

impl<'de> Deserialize<'de> for RevisionNumber {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match u32::deserialize(d)? {
            0 => Err(D::Error::custom("revisions are numbered from 1")),
            n => Ok(RevisionNumber(n)),
        }
    }
}

impl JsonSchema for RevisionNumber {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "RevisionNumber".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": 1, "maximum": u32::MAX})
    }
}

/// A page size: 1 to `MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Limit<const MAX: u32>(pub u32);

impl<'de, const MAX: u32> Deserialize<'de> for Limit<MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = u32::deserialize(d)?;
        if n == 0 || n > MAX {
            return Err(D::Error::custom(format!(
                "must be from 1 to {MAX}, not {n}"
            )));
        }
        Ok(Limit(n))
    }
}

impl<const MAX: u32> JsonSchema for Limit<MAX> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("Limit{MAX}").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": 1, "maximum": MAX})
    }
}

/// A time to wait, in milliseconds: 0 (do not wait) to `MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct WaitMs<const MAX: u32>(pub u32);

impl<const MAX: u32> WaitMs<MAX> {
    /// As a duration.
    pub fn duration(self) -> std::time::Duration {
        std::time::Duration::from_millis(u64::from(self.0))
    }
}

impl<'de, const MAX: u32> Deserialize<'de> for WaitMs<MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = u64::deserialize(d)?;
        match u32::try_from(n) {
            Ok(n) if n <= MAX => Ok(WaitMs(n)),
            _ => Err(D::Error::custom(format!(
                "must be from 0 to {MAX} milliseconds, not {n}"
            ))),
        }
    }
}

impl<const MAX: u32> JsonSchema for WaitMs<MAX> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("WaitMs{MAX}").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": 0, "maximum": MAX})
    }
}

/// A resource id in its canonical spelling (`file:src/a.rs`,
/// `directory:.`, `symbol:src/a.rs#Api.fetch`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceId(pub Resource);

impl Serialize for ResourceId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ResourceId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map(ResourceId).map_err(D::Error::custom)
    }
}

impl JsonSchema for ResourceId {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "ResourceId".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": "^(file:|directory:|symbol:)",
            "maxLength": crate::resource::MAX_RESOURCE_ID_BYTES,
            "description": "file:PATH, directory:PATH (directory:. is the root) or symbol:PATH#NAME; at most 4608 bytes"
        })
    }
}

/// A repository path argument (`src/a.rs`), checked as every repository
/// path is ([`RepoPath`](crate::RepoPath)): relative, clean, never into
/// `.git` or `.roundtable`. A refused one is `invalid_argument` naming the
/// argument, with the path and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct PathArg(pub crate::RepoPath);

impl<'de> Deserialize<'de> for PathArg {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        crate::RepoPath::from_bytes(s.as_bytes())
            .map(PathArg)
            .map_err(D::Error::custom)
    }
}

impl JsonSchema for PathArg {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "PathArg".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "minLength": 1,
            "maxLength": crate::path::MAX_PATH_BYTES,
            "description": "A relative repository path (`src/a.rs`): `/`-separated, no `.` or `..` component, not into `.git` or `.roundtable`."
        })
    }
}

/// Patch text: a unified or git diff, taken byte for byte (never trimmed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct PatchText(pub String);

impl<'de> Deserialize<'de> for PatchText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.trim().is_empty() {
            return Err(D::Error::custom("is blank"));
        }
        Ok(PatchText(s))
    }
}

impl JsonSchema for PatchText {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "PatchText".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "minLength": 1,
            "description": "A unified or git diff (paths stripped of one leading component, as `git apply` does); not trimmed."
        })
    }
}

/// Patch bytes, base64-encoded in JSON (the standard alphabet, padded): a
/// diff that is not UTF-8 (a Latin-1 file's lines) crosses JSON exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchBytes(pub Vec<u8>);

impl Serialize for PatchBytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use base64::Engine as _;
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for PatchBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use base64::Engine as _;
        let s = String::deserialize(d)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(s.as_bytes())
            .map_err(|e| {
                D::Error::custom(format!("is not base64 (standard alphabet, padded): {e}"))
            })?;
        if bytes.trim_ascii().is_empty() {
            return Err(D::Error::custom("is blank"));
        }
        Ok(PatchBytes(bytes))
    }
}

impl JsonSchema for PatchBytes {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "PatchBytes".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "minLength": 1,
            "contentEncoding": "base64",
            "description": "The patch's bytes, base64-encoded (standard alphabet, padded): for a diff that is not UTF-8, which `patch` (a JSON string) cannot carry exactly."
        })
    }
}

/// A strip level (`-p`): how many leading components to remove from the
/// file names of a unified diff, 0 to 16.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct StripLevel(pub u8);

impl StripLevel {
    /// The most components a strip level removes.
    pub const MAX: u8 = 16;
}

impl<'de> Deserialize<'de> for StripLevel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match u8::deserialize(d)? {
            n if n <= StripLevel::MAX => Ok(StripLevel(n)),
            n => Err(D::Error::custom(format!(
                "a strip level is 0 to {}, not {n}",
                StripLevel::MAX
            ))),
        }
    }
}

impl JsonSchema for StripLevel {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "StripLevel".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": 0, "maximum": StripLevel::MAX})
    }
}

/// How a request's `patch` text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PatchFormat {
    /// A unified or git diff (the default).
    #[default]
    Unified,
    /// A Codex `apply_patch` envelope: `*** Begin Patch`, `*** Add File:`,
    /// `*** Update File:` (with `*** Move to:`, `@@` anchors, ` `/`-`/`+`
    /// lines, `*** End of File`), `*** Delete File:`, `*** End Patch`.
    Codex,
    /// SEARCH/REPLACE blocks: a file path line, `<<<<<<< SEARCH`, the lines
    /// to find, `=======`, their replacement, `>>>>>>> REPLACE`.
    SearchReplace,
}

impl PatchFormat {
    /// The format a revision of this text is stored as.
    pub fn revision_format(self) -> crate::model::RevisionFormat {
        use crate::model::RevisionFormat as R;
        match self {
            PatchFormat::Unified => R::Patch,
            PatchFormat::Codex => R::CodexPatch,
            PatchFormat::SearchReplace => R::SearchReplace,
        }
    }
}

/// An Opcore edit plan (a JSON object).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct EditPlanJson(pub serde_json::Map<String, serde_json::Value>);

impl<'de> Deserialize<'de> for EditPlanJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde_json::Map::deserialize(d).map(EditPlanJson)
    }
}

impl JsonSchema for EditPlanJson {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "EditPlan".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        use serde_json::json;
        let digest = json!({"type": "string", "pattern": "^blob:sha256:[0-9a-f]{64}$"});
        let position = json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["line", "char"],
            "properties": {
                "line": {"type": "integer", "minimum": 0, "maximum": u32::MAX,
                         "description": "0-based line; `\\r\\n`, `\\n` and a lone `\\r` each end a line."},
                "char": {"type": "integer", "minimum": 0, "maximum": u32::MAX,
                         "description": "Offset in the line, in the edit's coordinateSystem units, from 0 to the line's length (its terminator excluded); never clamped."}
            }
        });
        let edit = json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["range", "coordinateSystem", "newText"],
            "properties": {
                "range": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["start", "end"],
                    "properties": {"start": position, "end": position},
                    "description": "[start, end) in the original text; edits of one file may touch but not overlap."
                },
                "coordinateSystem": {"enum": ["utf8", "utf16", "codepoint"],
                                     "description": "What `char` counts: bytes, UTF-16 code units or code points."},
                "newText": {"type": "string"},
                "rangeBasis": {"allOf": [digest],
                               "description": "The digest of the text the range applies to (the precondition's, or the empty blob's for a create)."}
            }
        });
        let change = json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["path", "kind", "precondition"],
            "properties": {
                "path": {"type": "string", "description": "A repository path (for a rename, the source)."},
                "kind": {"enum": ["modify", "create", "delete", "rename"]},
                "to": {"type": "string", "description": "A rename's destination, which must be absent (rename only)."},
                "precondition": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "expectedDigest": digest,
                        "expectedAbsence": {"const": true}
                    },
                    "oneOf": [{"required": ["expectedDigest"]}, {"required": ["expectedAbsence"]}],
                    "description": "create: {\"expectedAbsence\": true}; modify, delete, rename: {\"expectedDigest\": \"blob:sha256:…\"} of the current file."
                },
                "edits": {"type": "array", "minItems": 1, "items": edit,
                          "description": "Text edits (modify, create on empty text, rename); or give `after`."},
                "after": {"allOf": [digest],
                          "description": "Whole-blob replacement: the new content's digest; its bytes travel base64-encoded in the top-level `blobs`."}
            }
        });
        let changes = json!({"type": "array", "minItems": 1, "items": change});
        let blobs = json!({
            "type": "object",
            "additionalProperties": {"type": "string", "contentEncoding": "base64"},
            "description": "Digest → base64 bytes of each `after` (each must be referenced)."
        });
        let status = json!({"enum": ["complete", "incomplete", "unsupported", "cancelled", "errored"],
                            "description": "Anything but complete is refused with incomplete_edit_plan."});
        let touched = json!({
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": false,
                "required": ["path", "kind"],
                "properties": {"path": {"type": "string"}, "kind": {"type": "string"},
                               "to": {"type": "string"}, "precondition": {"type": "object"}}
            },
            "description": "Must list exactly the plan's changes (same path, kind, to and precondition)."
        });
        json_schema!({
            "type": "object",
            "description": "An Opcore edit plan (not an LSP WorkspaceEdit: every change names its kind and a precondition, every edit its coordinateSystem). Either a bare plan {status?, reason?, baseline?, documentChanges, blobs?} or an edit/propose result {proposal: {status, workspaceEdit: {documentChanges}, …}, blobs?}. Unknown and duplicate keys are refused. Its format: the book's page \"Patches, agent formats and edit plans\" (docs/src/concepts/patches.md).",
            "anyOf": [
                {
                    "additionalProperties": false,
                    "required": ["documentChanges"],
                    "properties": {
                        "status": status,
                        "reason": {},
                        "baseline": {"type": "object"},
                        "documentChanges": changes,
                        "blobs": blobs
                    }
                },
                {
                    "additionalProperties": false,
                    "required": ["proposal"],
                    "properties": {
                        "proposal": {
                            "type": "object",
                            "additionalProperties": false,
                            "required": ["status"],
                            "properties": {
                                "proposalId": {"type": "string", "minLength": 1},
                                "provider": {"type": "object"},
                                "status": status,
                                "baseline": {"type": "object"},
                                "validAsOf": {"type": "object"},
                                "touchedResources": touched,
                                "workspaceEdit": {
                                    "type": "object",
                                    "additionalProperties": false,
                                    "required": ["documentChanges"],
                                    "properties": {"baseline": {"type": "object"}, "documentChanges": changes}
                                },
                                "reason": {},
                                "diagnostics": {},
                                "complete": {"type": "boolean"},
                                "incompleteReason": {}
                            }
                        },
                        "blobs": blobs
                    }
                }
            ]
        })
    }
}

/// An opaque page cursor returned as `next_cursor`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Cursor(pub String);

impl Cursor {
    /// The cursor after the row with this sort key.
    pub fn after(seq: i64) -> Cursor {
        use base64::Engine as _;
        Cursor(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("s:{seq}")))
    }

    /// The sort key a page starts after: 0 without a cursor,
    /// `invalid_argument` (field `cursor`) for one this tool did not return.
    pub(crate) fn start(cursor: Option<&Cursor>) -> Result<i64, crate::operations::ToolError> {
        match cursor {
            None => Ok(0),
            Some(c) => c.seq().ok_or_else(|| {
                crate::operations::ToolError::invalid_argument(
                    "cursor",
                    "is not a cursor this tool returned",
                )
            }),
        }
    }

    /// Cut `rows` (fetched with `limit + 1`) to one page; the cursor after
    /// its last row when there are more.
    pub(crate) fn page<T>(
        rows: &mut Vec<T>,
        limit: u32,
        seq: impl Fn(&T) -> i64,
    ) -> Option<Cursor> {
        if rows.len() <= limit as usize {
            return None;
        }
        rows.truncate(limit as usize);
        rows.last().map(|r| Cursor::after(seq(r)))
    }

    /// The sort key this cursor continues after; `None` when it is not one
    /// of ours.
    pub fn seq(&self) -> Option<i64> {
        use base64::Engine as _;
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&self.0)
            .ok()?;
        let text = std::str::from_utf8(&raw).ok()?;
        text.strip_prefix("s:")?.parse().ok().filter(|n| *n >= 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn keys(v: &Value) -> Vec<String> {
        let mut k: Vec<String> = v["properties"]
            .as_object()
            .expect("properties")
            .keys()
            .cloned()
            .collect();
        k.sort();
        k
    }

    fn sorted(k: &[&str]) -> Vec<String> {
        let mut k: Vec<String> = k.iter().map(|s| (*s).to_owned()).collect();
        k.sort();
        k
    }

    /// The edit-plan schema names exactly the keys the reader accepts, at
    /// every level: it cannot drift from `edit::parse`.
    #[test]
    fn the_edit_plan_schema_lists_exactly_the_keys_the_reader_accepts() {
        use crate::edit::*;
        let mut g = SchemaGenerator::default();
        let s = serde_json::to_value(EditPlanJson::json_schema(&mut g)).expect("a schema");
        let bare = &s["anyOf"][0];
        let wrapper = &s["anyOf"][1];
        let proposal = &wrapper["properties"]["proposal"];
        let we = &proposal["properties"]["workspaceEdit"];
        let change = &bare["properties"]["documentChanges"]["items"];
        let edit = &change["properties"]["edits"]["items"];
        let range = &edit["properties"]["range"];
        let position = &range["properties"]["start"];
        for (schema, want) in [
            (bare, BARE_KEYS),
            (wrapper, WRAPPER_KEYS),
            (proposal, PROPOSAL_KEYS),
            (we, WORKSPACE_EDIT_KEYS),
            (change, CHANGE_KEYS),
            (&change["properties"]["precondition"], PRECONDITION_KEYS),
            (edit, EDIT_KEYS),
            (range, RANGE_KEYS),
            (position, POSITION_KEYS),
            (
                &proposal["properties"]["touchedResources"]["items"],
                TOUCHED_KEYS,
            ),
        ] {
            assert_eq!(keys(schema), sorted(want), "{schema}");
            assert_eq!(schema["additionalProperties"], false);
        }
        assert_eq!(we["properties"]["documentChanges"]["items"], *change);
    }
}
