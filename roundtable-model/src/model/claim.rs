//! Claims (leases) as records: what a claim holds and where it is in
//! its life.

use crate::claims::{ClaimType, LineSpan};
use crate::clock::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a claim is in its life, computed at read time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClaimStatus {
    /// Held: not released and not expired.
    Active,
    /// Its lease ran out; it neither blocks nor covers.
    Expired,
    /// Its holder released it.
    Released,
}

/// A claim as tools return it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Claim {
    /// The claim's id.
    pub id: String,
    /// The holder.
    pub agent_id: String,
    /// The claimed resource, canonical.
    pub resource_id: String,
    /// `write`, `read` or `review`.
    #[serde(rename = "type")]
    pub claim_type: ClaimType,
    /// The task it is for, if any.
    pub task_id: Option<String>,
    /// The resource's digest at acquisition: `blob:sha256:` of a file (or
    /// `absent`), of a symbol's span bytes, or the `state:sha256:` of a
    /// directory's subtree.
    pub base_digest: String,
    /// The fencing token: larger for every later acquisition in this store.
    pub token: i64,
    /// For a symbol, its line span at acquisition.
    pub span: Option<LineSpan>,
    /// When it was acquired.
    pub acquired_at: Timestamp,
    /// When it lapses unless renewed.
    pub expires_at: Timestamp,
    /// When it was released, if it was.
    pub released_at: Option<Timestamp>,
    /// `active`, `expired` or `released`, as of the call.
    pub status: ClaimStatus,
    #[serde(skip)]
    /// The store's row sequence: the keyset-paging cursor (not serialized).
    pub seq: i64,
}
