//! The strict JSON reader behind [`parse_plan`](super::parse_plan).
//!
//! The document is first read into a [`Value`] that refuses duplicate keys,
//! then walked by hand so every refusal names its exact field.

use super::{
    ChangeKind, ContentChange, CoordinateSystem, DocumentChange, EditError, EditPlan, PlanStatus,
    Position, Precondition, Range, TextEdit,
};
use crate::{Digest, ErrorCode, RepoPath};
use base64::Engine as _;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The keys the reader accepts in a bare plan.
pub const BARE_KEYS: &[&str] = &["status", "reason", "baseline", "documentChanges", "blobs"];
/// The keys the reader accepts in the `{proposal, blobs}` wrapper.
pub const WRAPPER_KEYS: &[&str] = &["proposal", "blobs"];
/// The keys the reader accepts in the wrapped proposal.
pub const PROPOSAL_KEYS: &[&str] = &[
    "proposalId",
    "provider",
    "status",
    "baseline",
    "validAsOf",
    "touchedResources",
    "workspaceEdit",
    "reason",
    "diagnostics",
    "complete",
    "incompleteReason",
];
/// The keys the reader accepts in `workspaceEdit`.
pub const WORKSPACE_EDIT_KEYS: &[&str] = &["baseline", "documentChanges"];
/// The keys the reader accepts in one document change.
pub const CHANGE_KEYS: &[&str] = &["path", "kind", "to", "precondition", "edits", "after"];
/// The keys the reader accepts in a change's precondition.
pub const PRECONDITION_KEYS: &[&str] = &["expectedDigest", "expectedAbsence"];
/// The keys the reader accepts in one text edit.
pub const EDIT_KEYS: &[&str] = &["range", "coordinateSystem", "newText", "rangeBasis"];
/// The keys the reader accepts in an edit's range.
pub const RANGE_KEYS: &[&str] = &["start", "end"];
/// The keys the reader accepts in a range's position.
pub const POSITION_KEYS: &[&str] = &["line", "char"];
/// The keys the reader accepts in one touched resource.
pub const TOUCHED_KEYS: &[&str] = &["path", "kind", "to", "precondition"];

pub(super) fn parse(json: &[u8]) -> Result<EditPlan, EditError> {
    let root = strict_json(json)?;
    let top = Obj::new(&root, String::new())?;
    if top.get("proposal").is_none() {
        top.only(BARE_KEYS)?;
        check_status(&top, false)?;
        let baseline = opt_object(&top, "baseline")?;
        let changes = changes(&top, top.get("blobs"))?;
        return Ok(EditPlan {
            proposal_id: None,
            baseline,
            changes,
        });
    }
    top.only(WRAPPER_KEYS)?;
    let p = Obj::new(top.req("proposal")?, "proposal".into())?;
    p.only(PROPOSAL_KEYS)?;
    check_status(&p, true)?;
    let proposal_id = match p.get("proposalId") {
        Some(v) => {
            let f = p.at("proposalId");
            let s = string(v, &f)?;
            if s.trim().is_empty() {
                return Err(EditError::invalid(&f, "must not be blank"));
            }
            Some(s.to_owned())
        }
        None => None,
    };
    for key in ["provider", "validAsOf"] {
        if let Some(v) = p.get(key) {
            Obj::new(v, p.at(key))?;
        }
    }
    let baseline = opt_object(&p, "baseline")?;
    let we = Obj::new(p.req("workspaceEdit")?, p.at("workspaceEdit"))?;
    we.only(WORKSPACE_EDIT_KEYS)?;
    let we_baseline = opt_object(&we, "baseline")?;
    if let (Some(a), Some(b)) = (&baseline, &we_baseline) {
        if a != b {
            return Err(EditError::invalid(
                &we.at("baseline"),
                "differs from proposal.baseline",
            ));
        }
    }
    let changes = changes(&we, top.get("blobs"))?;
    if let Some(t) = p.get("touchedResources") {
        check_touched(t, &p.at("touchedResources"), &changes)?;
    }
    Ok(EditPlan {
        proposal_id,
        baseline: baseline.or(we_baseline),
        changes,
    })
}

/// Refuse anything but a complete status; `required` for a proposal (a
/// bare plan defaults to complete).
fn check_status(o: &Obj<'_>, required: bool) -> Result<(), EditError> {
    let status = match o.get("status") {
        Some(v) => {
            let f = o.at("status");
            let s = string(v, &f)?;
            PlanStatus::ALL
                .iter()
                .copied()
                .find(|x| x.as_str() == s)
                .ok_or_else(|| {
                    EditError::invalid(&f, one_of(PlanStatus::ALL.iter().map(|x| x.as_str()), s))
                })?
        }
        None if required => return Err(EditError::invalid(&o.at("status"), "is required")),
        None => PlanStatus::Complete,
    };
    if let Some(v) = o.get("complete") {
        let f = o.at("complete");
        let c = boolean(v, &f)?;
        if c != (status == PlanStatus::Complete) {
            return Err(EditError::invalid(
                &f,
                format!("{c} contradicts status {:?}", status.as_str()),
            ));
        }
    }
    if status == PlanStatus::Complete {
        return Ok(());
    }
    let reason = o.get("reason").or_else(|| o.get("incompleteReason"));
    let mut message = format!(
        "the proposal's status is {:?}: only a complete edit plan can be applied",
        status.as_str()
    );
    if let Some(Value::String(r)) = reason {
        message.push_str(&format!(" (reason: {r})"));
    }
    let mut e = EditError::new(ErrorCode::IncompleteEditPlan, message);
    e.0.field = Some(o.at("status"));
    e.0.status = Some(status);
    e.0.reason = reason.cloned();
    e.0.diagnostics = o.get("diagnostics").cloned();
    Err(e)
}

/// `documentChanges` of `o`, with `after` blobs resolved from `blobs`.
fn changes(o: &Obj<'_>, blobs: Option<&Value>) -> Result<Vec<DocumentChange>, EditError> {
    let blobs = parse_blobs(blobs)?;
    let field = o.at("documentChanges");
    let list = array(o.req("documentChanges")?, &field)?;
    if list.is_empty() {
        return Err(EditError::invalid(
            &field,
            "is empty: the plan changes nothing",
        ));
    }
    let mut used = HashSet::new();
    let changes = list
        .iter()
        .enumerate()
        .map(|(i, v)| change(v, format!("{field}[{i}]"), &blobs, &mut used))
        .collect::<Result<Vec<_>, _>>()?;

    // Each path is touched once, a rename's destination included.
    let mut touched: HashMap<&RepoPath, &str> = HashMap::new();
    for c in &changes {
        let mut paths = vec![(&c.path, "path")];
        if let ChangeKind::Rename { to } = &c.kind {
            paths.push((to, "to"));
        }
        for (path, key) in paths {
            if let Some(prev) = touched.insert(path, &c.field) {
                return Err(EditError::invalid(
                    &format!("{}.{key}", c.field),
                    format!("{:?} is already touched by {prev}", path.as_str()),
                )
                .with_path(path));
            }
        }
    }

    // No path ends up both a file and a directory.
    let mut files: HashMap<&str, &str> = HashMap::new();
    for c in &changes {
        match &c.kind {
            ChangeKind::Modify | ChangeKind::Create => files.insert(c.path.as_str(), &c.field),
            ChangeKind::Rename { to } => files.insert(to.as_str(), &c.field),
            ChangeKind::Delete => None,
        };
    }
    for c in &changes {
        let (path, key) = match &c.kind {
            ChangeKind::Modify | ChangeKind::Create => (&c.path, "path"),
            ChangeKind::Rename { to } => (to, "to"),
            ChangeKind::Delete => continue,
        };
        let s = path.as_str();
        for (at, _) in s.match_indices('/') {
            if let Some(other) = files.get(&s[..at]) {
                return Err(EditError::invalid(
                    &format!("{}.{key}", c.field),
                    format!(
                        "{s:?} needs {:?} to be a directory, but {other} makes it a file",
                        &s[..at]
                    ),
                )
                .with_path(path));
            }
        }
    }

    if let Some(d) = blobs.keys().find(|d| !used.contains(*d)) {
        return Err(EditError::invalid(
            &format!("blobs[{:?}]", d.to_string()),
            "is not referenced by any `after`",
        ));
    }
    Ok(changes)
}

fn change(
    v: &Value,
    field: String,
    blobs: &BTreeMap<Digest, Vec<u8>>,
    used: &mut HashSet<Digest>,
) -> Result<DocumentChange, EditError> {
    let o = Obj::new(v, field)?;
    o.only(CHANGE_KEYS)?;
    let path = repo_path(o.req("path")?, &o.at("path"))?;
    let kind_name = string(o.req("kind")?, &o.at("kind"))?;
    let kind = match kind_name {
        "modify" => ChangeKind::Modify,
        "create" => ChangeKind::Create,
        "delete" => ChangeKind::Delete,
        "rename" => {
            let f = o.at("to");
            let Some(to) = o.get("to") else {
                return Err(EditError::invalid(
                    &f,
                    "is required: a rename needs `to`, its destination",
                ));
            };
            let to = repo_path(to, &f)?;
            if to == path {
                return Err(EditError::invalid(&f, "renames the file to itself").with_path(&to));
            }
            ChangeKind::Rename { to }
        }
        other => {
            return Err(EditError::invalid(
                &o.at("kind"),
                one_of(["modify", "create", "delete", "rename"], other),
            ))
        }
    };
    if !matches!(kind, ChangeKind::Rename { .. }) && o.get("to").is_some() {
        return Err(EditError::invalid(
            &o.at("to"),
            format!("only a rename has `to` (kind is {kind_name:?})"),
        ));
    }

    let pf = o.at("precondition");
    let precondition = precondition(o.req("precondition")?, &pf)?;
    let basis = match (&kind, precondition) {
        (ChangeKind::Create, Precondition::ExpectedAbsence) => Digest::of(b""),
        (ChangeKind::Create, Precondition::ExpectedDigest(_)) => {
            return Err(EditError::invalid(
                &pf,
                "a create must have precondition {\"expectedAbsence\": true}",
            ))
        }
        (_, Precondition::ExpectedAbsence) => {
            return Err(EditError::invalid(
                &pf,
                format!(
                    "a {kind_name} must have precondition {{\"expectedDigest\": \"blob:sha256:…\"}}"
                ),
            ))
        }
        (_, Precondition::ExpectedDigest(d)) => d,
    };

    let content = match (o.get("edits"), o.get("after")) {
        (Some(_), Some(_)) => {
            return Err(EditError::invalid(
                &o.field,
                "has both `edits` and `after`: a file change is either text edits or a whole-blob replacement",
            ))
        }
        (e, a) if kind == ChangeKind::Delete && (e.is_some() || a.is_some()) => {
            return Err(EditError::invalid(
                &o.at(if e.is_some() { "edits" } else { "after" }),
                "a delete has no content",
            ))
        }
        (None, None) if matches!(kind, ChangeKind::Modify | ChangeKind::Create) => {
            return Err(EditError::invalid(
                &o.field,
                format!("a {kind_name} needs `edits` or `after`"),
            ))
        }
        (None, None) => ContentChange::Keep,
        (Some(e), None) => ContentChange::Edits(edits(e, &o.at("edits"), basis)?),
        (None, Some(a)) => {
            let f = o.at("after");
            let digest = digest(a, &f)?;
            let Some(data) = blobs.get(&digest) else {
                return Err(EditError::invalid(
                    &f,
                    format!("blob {digest} is not in `blobs`"),
                ));
            };
            used.insert(digest);
            ContentChange::Replace {
                digest,
                data: data.clone(),
            }
        }
    };
    Ok(DocumentChange {
        field: o.field,
        path,
        kind,
        precondition,
        content,
    })
}

fn precondition(v: &Value, field: &str) -> Result<Precondition, EditError> {
    let o = Obj::new(v, field.to_owned())?;
    o.only(PRECONDITION_KEYS)?;
    match (o.get("expectedDigest"), o.get("expectedAbsence")) {
        (Some(d), None) => Ok(Precondition::ExpectedDigest(digest(
            d,
            &o.at("expectedDigest"),
        )?)),
        (None, Some(a)) => {
            let f = o.at("expectedAbsence");
            if boolean(a, &f)? {
                Ok(Precondition::ExpectedAbsence)
            } else {
                Err(EditError::invalid(
                    &f,
                    "must be true (to require an existing file, give expectedDigest)",
                ))
            }
        }
        _ => Err(EditError::invalid(
            field,
            "must have exactly one of expectedDigest, expectedAbsence",
        )),
    }
}

fn edits(v: &Value, field: &str, basis: Digest) -> Result<Vec<TextEdit>, EditError> {
    let list = array(v, field)?;
    if list.is_empty() {
        return Err(EditError::invalid(field, "must not be empty"));
    }
    let mut out = Vec::with_capacity(list.len());
    for (j, e) in list.iter().enumerate() {
        let o = Obj::new(e, format!("{field}[{j}]"))?;
        o.only(EDIT_KEYS)?;
        let range = range(o.req("range")?, &o.at("range"))?;
        let cf = o.at("coordinateSystem");
        let coordinate_system = match string(o.req("coordinateSystem")?, &cf)? {
            "utf8" => CoordinateSystem::Utf8,
            "utf16" => CoordinateSystem::Utf16,
            "codepoint" => CoordinateSystem::Codepoint,
            other => {
                return Err(EditError::invalid(
                    &cf,
                    one_of(["utf8", "utf16", "codepoint"], other),
                ))
            }
        };
        let new_text = string(o.req("newText")?, &o.at("newText"))?.to_owned();
        let range_basis = match o.get("rangeBasis") {
            Some(v) => {
                let f = o.at("rangeBasis");
                let d = digest(v, &f)?;
                if d != basis {
                    return Err(EditError::invalid(
                        &f,
                        format!("is {d}, but the edits apply to {basis}"),
                    ));
                }
                Some(d)
            }
            None => None,
        };
        out.push(TextEdit {
            range,
            coordinate_system,
            new_text,
            range_basis,
        });
    }
    Ok(out)
}

fn range(v: &Value, field: &str) -> Result<Range, EditError> {
    let o = Obj::new(v, field.to_owned())?;
    o.only(RANGE_KEYS)?;
    let start = position(o.req("start")?, &o.at("start"))?;
    let end = position(o.req("end")?, &o.at("end"))?;
    if end < start {
        return Err(EditError::invalid(
            field,
            format!("end ({end}) is before start ({start})"),
        ));
    }
    Ok(Range { start, end })
}

fn position(v: &Value, field: &str) -> Result<Position, EditError> {
    let o = Obj::new(v, field.to_owned())?;
    o.only(POSITION_KEYS)?;
    Ok(Position {
        line: uint(o.req("line")?, &o.at("line"))?,
        character: uint(o.req("char")?, &o.at("char"))?,
    })
}

/// The top-level `blobs` map, each entry decoded and verified.
fn parse_blobs(v: Option<&Value>) -> Result<BTreeMap<Digest, Vec<u8>>, EditError> {
    let mut out = BTreeMap::new();
    let Some(v) = v else { return Ok(out) };
    let o = Obj::new(v, "blobs".into())?;
    for (key, value) in o.map {
        let f = format!("blobs[{key:?}]");
        let digest: Digest = key
            .parse()
            .map_err(|e| EditError::invalid(&f, format!("the key is not a digest: {e}")))?;
        let data = base64::engine::general_purpose::STANDARD
            .decode(string(value, &f)?)
            .map_err(|e| EditError::invalid(&f, format!("is not valid base64: {e}")))?;
        let actual = Digest::of(&data);
        if actual != digest {
            return Err(EditError::invalid(
                &f,
                format!("the decoded bytes have digest {actual}, not {digest}"),
            ));
        }
        out.insert(digest, data);
    }
    Ok(out)
}

/// `touchedResources` must list exactly the plan's changes, and agree with
/// them on kind, destination and precondition.
fn check_touched(v: &Value, field: &str, changes: &[DocumentChange]) -> Result<(), EditError> {
    let by_path: HashMap<&str, &DocumentChange> =
        changes.iter().map(|c| (c.path.as_str(), c)).collect();
    let mut listed = BTreeSet::new();
    for (k, e) in array(v, field)?.iter().enumerate() {
        let o = Obj::new(e, format!("{field}[{k}]"))?;
        o.only(TOUCHED_KEYS)?;
        let pf = o.at("path");
        let path = string(o.req("path")?, &pf)?;
        let Some(c) = by_path.get(path) else {
            return Err(EditError::invalid(
                &pf,
                format!("{path:?} is not changed by documentChanges"),
            ));
        };
        if !listed.insert(path) {
            return Err(EditError::invalid(&pf, format!("{path:?} is listed twice")));
        }
        let kf = o.at("kind");
        let kind = string(o.req("kind")?, &kf)?;
        if kind != c.kind.as_str() {
            return Err(EditError::invalid(
                &kf,
                format!("is {kind:?}, but {}.kind is {:?}", c.field, c.kind.as_str()),
            ));
        }
        if let Some(t) = o.get("to") {
            let tf = o.at("to");
            let t = string(t, &tf)?;
            if !matches!(&c.kind, ChangeKind::Rename { to } if to.as_str() == t) {
                return Err(EditError::invalid(
                    &tf,
                    format!("{t:?} disagrees with {}", c.field),
                ));
            }
        }
        if let Some(p) = o.get("precondition") {
            let pf = o.at("precondition");
            if precondition(p, &pf)? != c.precondition {
                return Err(EditError::invalid(
                    &pf,
                    format!("disagrees with {}.precondition", c.field),
                ));
            }
        }
    }
    if let Some(c) = changes.iter().find(|c| !listed.contains(c.path.as_str())) {
        return Err(EditError::invalid(
            field,
            format!("does not list {:?} ({})", c.path.as_str(), c.field),
        ));
    }
    Ok(())
}

// ---- typed access to JSON values, naming the field on every refusal ----

/// A JSON object and where it is.
struct Obj<'a> {
    map: &'a Map<String, Value>,
    field: String,
}

impl<'a> Obj<'a> {
    fn new(v: &'a Value, field: String) -> Result<Self, EditError> {
        match v {
            Value::Object(map) => Ok(Obj { map, field }),
            other => Err(EditError::invalid(
                &field,
                format!("must be an object, not {}", type_name(other)),
            )),
        }
    }

    /// The field of `key` in this object.
    fn at(&self, key: &str) -> String {
        if self.field.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.field)
        }
    }

    /// Refuse keys not in `allowed`.
    fn only(&self, allowed: &[&str]) -> Result<(), EditError> {
        match self.map.keys().find(|k| !allowed.contains(&k.as_str())) {
            Some(k) => Err(EditError::invalid(
                &self.at(k),
                format!(
                    "unknown key {k:?} (expected one of: {})",
                    allowed.join(", ")
                ),
            )),
            None => Ok(()),
        }
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    fn req(&self, key: &str) -> Result<&'a Value, EditError> {
        self.get(key)
            .ok_or_else(|| EditError::invalid(&self.at(key), "is required"))
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn one_of<'a>(allowed: impl IntoIterator<Item = &'a str>, got: &str) -> String {
    let list: Vec<String> = allowed.into_iter().map(|a| format!("{a:?}")).collect();
    format!("must be one of {}, not {got:?}", list.join(", "))
}

fn string<'a>(v: &'a Value, field: &str) -> Result<&'a str, EditError> {
    v.as_str()
        .ok_or_else(|| EditError::invalid(field, format!("must be a string, not {}", type_name(v))))
}

fn boolean(v: &Value, field: &str) -> Result<bool, EditError> {
    v.as_bool().ok_or_else(|| {
        EditError::invalid(field, format!("must be a boolean, not {}", type_name(v)))
    })
}

fn uint(v: &Value, field: &str) -> Result<u32, EditError> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| {
            EditError::invalid(
                field,
                format!(
                    "must be a non-negative integer of at most {}, not {v}",
                    u32::MAX
                ),
            )
        })
}

fn array<'a>(v: &'a Value, field: &str) -> Result<&'a [Value], EditError> {
    match v {
        Value::Array(a) => Ok(a),
        other => Err(EditError::invalid(
            field,
            format!("must be an array, not {}", type_name(other)),
        )),
    }
}

fn digest(v: &Value, field: &str) -> Result<Digest, EditError> {
    string(v, field)?
        .parse()
        .map_err(|e| EditError::invalid(field, e))
}

fn opt_object(o: &Obj<'_>, key: &str) -> Result<Option<Value>, EditError> {
    match o.get(key) {
        Some(v) => {
            Obj::new(v, o.at(key))?;
            Ok(Some(v.clone()))
        }
        None => Ok(None),
    }
}

fn repo_path(v: &Value, field: &str) -> Result<RepoPath, EditError> {
    let s = string(v, field)?;
    RepoPath::from_bytes(s.as_bytes()).map_err(|e| {
        let mut err = EditError::new(e.code(), format!("{field}: {e}"));
        err.0.field = Some(field.to_owned());
        err.0.path = Some(e.path.clone());
        err
    })
}

fn strict_json(json: &[u8]) -> Result<Value, EditError> {
    crate::json::parse_strict(json)
        .map_err(|e| EditError::invalid("", format!("is not valid JSON: {e}")))
}
