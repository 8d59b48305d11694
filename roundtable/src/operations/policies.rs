//! Policies, versioned in the store: `policy.set` makes a draft,
//! `policy.activate` retires the active one and activates a draft in one
//! transaction, `policy.get` reads one. With none active, the built-in
//! default applies.

use super::args::{Markdown, RevisionNumber};
use super::details::{IllegalTransitionDetails, RecordStatus};
use super::Request as _;
use super::{Cx, Tool, ToolError};
use crate::actor::{Actor, ActorKind};
use crate::engine::Engine;
use crate::id::Id;
use crate::policy::{PersonRole, Policy, DEFAULT_POLICY_TOML};
use crate::store;
use crate::store::sql::Tx;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The longest policy document, in characters.
const MAX_POLICY_CHARS: usize = 256 * 1024;

pub use crate::model::{PolicyRecord, PolicyStatus};

/// The built-in policy's record, and a stored version loaded for a call.
trait PolicyVersion: Sized {
    fn builtin() -> Self;
    fn load(tx: &Tx<'_>, version: u32) -> Result<Self, ToolError>;
}

impl PolicyVersion for PolicyRecord {
    fn builtin() -> PolicyRecord {
        PolicyRecord {
            version: None,
            status: PolicyStatus::Builtin,
            document: DEFAULT_POLICY_TOML.into(),
            digest: crate::Digest::of(DEFAULT_POLICY_TOML.as_bytes()).to_string(),
            note_md: None,
            created_by: None,
            created_at: None,
            activated_at: None,
            retired_at: None,
        }
    }

    fn load(tx: &Tx<'_>, version: u32) -> Result<PolicyRecord, ToolError> {
        store::policies::version(tx, version)?
            .ok_or_else(|| ToolError::not_found("policy", &version.to_string()))
    }
}

/// The policy in force: the active version, or the built-in default.
pub(crate) fn effective(tx: &Tx<'_>) -> Result<(PolicyRecord, Policy), ToolError> {
    let active = store::policies::active(tx)?;
    match active {
        None => Ok((PolicyRecord::builtin(), Policy::default())),
        Some(record) => {
            let policy = Policy::parse(&record.document).map_err(|e| {
                let details = super::details::InvalidPolicyDetails::from(&e);
                ToolError::new(
                    format!(
                        "the active policy (version {}) no longer parses: {e}",
                        record
                            .version
                            .map_or_else(|| "builtin".to_owned(), |v| v.to_string())
                    ),
                    super::details::DatabaseDetails::from(details),
                )
            })?;
            Ok((record, policy))
        }
    }
}

/// A policy document, kept exactly as submitted: not trimmed (unlike other
/// texts), so the line of an `invalid_policy` error and the stored digest
/// refer to the caller's own text. Not blank; at most 256 KiB characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct PolicyDocument(String);

impl PolicyDocument {
    /// The document as submitted.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for PolicyDocument {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let s = String::deserialize(d)?;
        if s.trim().is_empty() {
            return Err(D::Error::custom("is blank"));
        }
        let n = s.chars().count();
        if n > MAX_POLICY_CHARS {
            return Err(D::Error::custom(format!(
                "is {n} characters; the limit is {MAX_POLICY_CHARS}"
            )));
        }
        Ok(PolicyDocument(s))
    }
}

impl JsonSchema for PolicyDocument {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PolicyDocument".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_POLICY_CHARS,
            "pattern": "\\S",
            "description": "A TOML policy document, stored as given (not trimmed); must not be blank."
        })
    }
}

/// Arguments of `policy.set`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SetArgs")]
pub struct SetPolicy {
    /// The policy as a TOML document (its format: the book's policy
    /// reference, `docs/src/reference/policy.md`).
    pub document: PolicyDocument,
    /// Why.
    pub note_md: Option<Markdown>,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// Result of `policy.set` and `policy.get`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct PolicyResult {
    /// The policy.
    pub policy: PolicyRecord,
}

impl super::Request for SetPolicy {
    const TOOL: &'static str = "policy.set";
    const DESCRIPTION: &'static str = "Store a policy document as a new draft version (orchestrator, or a person holding the policy role). It is parsed strictly first; it takes effect only when activated.";
    const MUTATES: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Orchestrator, ActorKind::Human];
    type Output = PolicyResult;

    store_tool!();
}

impl Tool for SetPolicy {
    type Prep = ();

    keyed!();

    fn prepare(_: &Engine, _: &Actor, args: &SetPolicy) -> Result<(), ToolError> {
        Policy::parse(args.document.as_str())?;
        Ok(())
    }

    fn run(cx: &Cx<'_>, args: SetPolicy, (): ()) -> Result<PolicyResult, ToolError> {
        cx.require_person_role(PersonRole::Policy)?;
        let version = store::policies::next_version(cx.tx)?;
        let document = args.document.as_str();
        let digest = crate::Digest::of(document.as_bytes()).to_string();
        store::policies::insert_draft(
            cx.tx,
            version,
            document,
            &digest,
            args.note_md.as_ref().map(|t| t.as_str()),
            cx.actor,
            cx.now,
        )?;
        cx.event(
            &format!("policy-{version}"),
            None,
            crate::model::PolicyDraftedData {
                version,
                digest: digest.clone(),
            },
        )?;
        Ok(PolicyResult {
            policy: PolicyRecord::load(cx.tx, version)?,
        })
    }
}

/// Arguments of `policy.activate`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ActivateArgs")]
pub struct ActivatePolicy {
    /// The draft version to activate.
    pub version: RevisionNumber,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// Result of `policy.activate`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Activated {
    /// The policy now active.
    pub policy: PolicyRecord,
    /// The version it replaced, now retired (`null` when the default was in
    /// force).
    pub retired_version: Option<u32>,
}

impl super::Request for ActivatePolicy {
    const TOOL: &'static str = "policy.activate";
    const DESCRIPTION: &'static str = "Activate a draft policy version and retire the active one, atomically (orchestrator, or a person holding the policy role).";
    const MUTATES: bool = true;
    const IDEMPOTENT: bool = true;
    const DESTRUCTIVE: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Orchestrator, ActorKind::Human];
    type Output = Activated;

    store_tool!();
}

impl Tool for ActivatePolicy {
    keyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: ActivatePolicy, (): ()) -> Result<Activated, ToolError> {
        cx.require_person_role(PersonRole::Policy)?;
        let target = PolicyRecord::load(cx.tx, args.version.0)?;
        if target.status != PolicyStatus::Draft {
            return Err(ToolError::new(
                format!(
                    "policy version {} is {}; only a draft can be activated",
                    args.version.0, target.status
                ),
                IllegalTransitionDetails {
                    version: Some(u64::from(args.version.0)),
                    status: Some(RecordStatus::Policy(target.status)),
                    allowed: Some(vec![RecordStatus::Policy(PolicyStatus::Draft)]),
                    operation: Some(Self::TOOL.to_owned()),
                    ..IllegalTransitionDetails::default()
                },
            ));
        }
        let retired = store::policies::active_version(cx.tx)?;
        if let Some(old) = retired {
            store::policies::retire(cx.tx, old, cx.now)?;
        }
        store::policies::activate(cx.tx, args.version.0, cx.now)?;
        cx.event(
            &format!("policy-{}", args.version.0),
            None,
            crate::model::PolicyActivatedData {
                version: args.version.0,
                retired_version: retired,
                digest: target.digest.clone(),
            },
        )?;
        Ok(Activated {
            policy: PolicyRecord::load(cx.tx, args.version.0)?,
            retired_version: retired,
        })
    }
}

/// Arguments of `policy.get`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "GetArgs")]
pub struct GetPolicy {
    /// The version to read (default: the policy in force — the active
    /// version, or the built-in default).
    pub version: Option<RevisionNumber>,
}

impl super::Request for GetPolicy {
    const TOOL: &'static str = "policy.get";
    const DESCRIPTION: &'static str =
        "Read a policy version, or (by default) the policy in force: the active version or the built-in default.";
    const MUTATES: bool = false;
    type Output = PolicyResult;

    store_tool!();
}

impl Tool for GetPolicy {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: GetPolicy, (): ()) -> Result<PolicyResult, ToolError> {
        let policy = match args.version {
            Some(v) => PolicyRecord::load(cx.tx, v.0)?,
            None => effective(cx.tx)?.0,
        };
        Ok(PolicyResult { policy })
    }
}
