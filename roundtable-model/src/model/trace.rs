//! Attribution records: who wrote the lines a landing added, in the
//! Agent Trace format (v0.1, <https://agent-trace.dev>, its
//! `trace-record.json` schema), with what governed the landing in the
//! record's `metadata` under `dev.roundtable`.
//!
//! A landing's record is built once, before its commit point, from the
//! proposal, the revision's changeset and the evidence the policy counted
//! ([`TraceRecord::for_landing`]); the store keeps it with the
//! transaction, and in git mode it is also the landed commit's note under
//! [`NOTES_REF`], with `vcs.revision` set to the commit
//! ([`TraceRecord::at_commit`]). Everything in it is derived from the
//! transaction, so it can be built again identically (recovery writes a
//! note a crash left unwritten; `provenance.verify` compares a note with
//! the store's record).

use crate::clock::Timestamp;
use crate::Digest;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The ref that holds the notes: one per landed commit, the commit's
/// Agent Trace record (`git notes --ref agent-trace show COMMIT`).
pub const NOTES_REF: &str = "refs/notes/agent-trace";

/// The version of the Agent Trace format written (the schema's
/// `major.minor` pattern).
pub const AGENT_TRACE_VERSION: &str = "0.1";

/// The key of roundtable's part of a record's `metadata` (reverse-domain
/// notation, as the format asks of vendors).
pub const METADATA_KEY: &str = "dev.roundtable";

/// One Agent Trace record: the lines one landing added, attributed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceRecord {
    /// The format's version ([`AGENT_TRACE_VERSION`]).
    pub version: String,
    /// The record's id: a UUID derived from the transaction's id.
    pub id: String,
    /// When the landing started (RFC 3339, UTC).
    pub timestamp: Timestamp,
    /// In git mode, the landed commit; absent in files mode and in the
    /// store's copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vcs: Option<TraceVcs>,
    /// roundtable and its version.
    pub tool: TraceTool,
    /// Each file the landing wrote lines to, with the lines.
    pub files: Vec<TraceFile>,
    /// What governed the landing.
    pub metadata: TraceMetadata,
}

/// The version control system a record names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceVcs {
    /// Always `git`.
    #[serde(rename = "type")]
    pub kind: VcsKind,
    /// The commit id (40 hex digits).
    pub revision: String,
}

/// A version control system the format knows (roundtable writes `git`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VcsKind {
    /// git.
    Git,
}

/// The tool that wrote a record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceTool {
    /// `roundtable`.
    pub name: String,
    /// Its version.
    pub version: String,
}

/// One file of a record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceFile {
    /// Its path from the repository's root.
    pub path: String,
    /// One conversation: the proposal's author's.
    pub conversations: Vec<TraceConversation>,
}

/// The lines one contributor wrote to a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceConversation {
    /// The author's session or conversation, when the host registered one
    /// (`agent.register`'s `session_url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Who wrote them.
    pub contributor: TraceContributor,
    /// The lines, 1-based and inclusive, in the file as the landing left
    /// it.
    pub ranges: Vec<TraceRange>,
}

/// A contributor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceContributor {
    /// `ai` for an agent.
    #[serde(rename = "type")]
    pub kind: ContributorKind,
    /// The agent's model, when the host registered one (`provider/model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_id: Option<String>,
}

/// What the host registered about the author agent that a record names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Author {
    /// Its model (`provider/model`).
    pub model_id: Option<String>,
    /// Its session's or conversation's link.
    pub session_url: Option<String>,
}

/// The format's contributor types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ContributorKind {
    /// Written by a person.
    Human,
    /// Written by an AI agent.
    Ai,
    /// Both.
    Mixed,
    /// Not known.
    Unknown,
}

/// A stretch of lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceRange {
    /// The first line (1-based).
    pub start_line: u64,
    /// The last line (inclusive).
    pub end_line: u64,
}

/// A record's `metadata`: roundtable's part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceMetadata {
    /// What governed the landing.
    #[serde(rename = "dev.roundtable")]
    pub roundtable: Provenance,
}

/// What governed a landing: the proposal, who wrote it, for which task,
/// the transaction, the audit chain's head when it was planned, and the
/// evidence the policy counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// The proposal.
    pub proposal_id: String,
    /// The revision that landed.
    pub revision: u32,
    /// The transaction.
    pub transaction_id: String,
    /// The task.
    pub task_id: String,
    /// The proposal's author (an agent's id).
    pub agent_id: String,
    /// The audit chain's head when the landing was planned (also the
    /// commit's `Roundtable-Chain` trailer).
    pub chain: ChainPoint,
    /// Each record the policy counted.
    pub evidence: Vec<CountedEvidence>,
}

/// A point of the audit chain: an event's seq and digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChainPoint {
    /// The event's seq (0: the empty log).
    pub seq: i64,
    /// Its digest (`sha256:` and 64 hex digits).
    pub digest: String,
}

impl ChainPoint {
    /// The `Roundtable-Chain` trailer's value: `SEQ DIGEST`.
    pub fn trailer(&self) -> String {
        format!("{} {}", self.seq, self.digest)
    }

    /// A `Roundtable-Chain` trailer's value read back (`None`: not one).
    pub fn parse_trailer(value: &str) -> Option<ChainPoint> {
        let (seq, digest) = value.trim().split_once(' ')?;
        let seq = seq.parse().ok()?;
        let hex = digest.strip_prefix("sha256:")?;
        (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then(|| ChainPoint {
            seq,
            digest: digest.to_owned(),
        })
    }
}

/// The kinds of record that let a change land.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceKind {
    /// An approving vote (`Approved-by`).
    Vote,
    /// A passing security review (`Security-Reviewed-by`).
    SecurityReview,
    /// A person's approval (`Human-Approved-by`).
    HumanApproval,
    /// A check's result (`Checks`).
    Check,
}

impl EvidenceKind {
    /// Every kind.
    pub const ALL: [EvidenceKind; 4] = [
        EvidenceKind::Vote,
        EvidenceKind::SecurityReview,
        EvidenceKind::HumanApproval,
        EvidenceKind::Check,
    ];

    /// The commit trailer that names evidence of this kind.
    pub fn trailer_key(self) -> &'static str {
        match self {
            EvidenceKind::Vote => "Approved-by",
            EvidenceKind::SecurityReview => "Security-Reviewed-by",
            EvidenceKind::HumanApproval => "Human-Approved-by",
            EvidenceKind::Check => "Checks",
        }
    }

    /// The kind a commit trailer's key names (`None`: not an evidence
    /// trailer).
    pub fn of_trailer_key(key: &str) -> Option<EvidenceKind> {
        EvidenceKind::ALL
            .into_iter()
            .find(|k| k.trailer_key() == key)
    }
}

/// One record the policy counted for a landing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CountedEvidence {
    /// What it is.
    pub kind: EvidenceKind,
    /// Who gave it (`agent:bob`, `human:alice`), or for a check its name
    /// and status (`unit=passed`).
    pub by: String,
    /// The revision it was given on.
    pub revision: u32,
    /// The record's id.
    pub id: String,
}

impl CountedEvidence {
    /// Its commit trailer: `KEY: BY (revision N, ID)`.
    pub fn trailer_value(&self) -> String {
        format!("{} (revision {}, {})", self.by, self.revision, self.id)
    }
}

/// One file a landing wrote: its path and its bytes before and after
/// (`None`: absent; a link or binary file is given as `None` after, and
/// gets no lines).
#[derive(Debug, Clone, Copy)]
pub struct WrittenFile<'a> {
    /// The path.
    pub path: &'a str,
    /// Its bytes before.
    pub before: Option<&'a [u8]>,
    /// Its text after.
    pub after: Option<&'a [u8]>,
}

impl TraceRecord {
    /// The record of a landing: each of `files`' lines the landing added
    /// or rewrote ([`roundtable_diff::merge::added_lines`]), attributed to
    /// the proposal's author agent, and what governed it. A file whose
    /// lines it only removed is not listed.
    pub fn for_landing(
        provenance: Provenance,
        author: &Author,
        started: Timestamp,
        tool_version: &str,
        files: &[WrittenFile<'_>],
    ) -> TraceRecord {
        let files = files
            .iter()
            .filter_map(|f| {
                let after = f.after?;
                let ranges: Vec<TraceRange> =
                    roundtable_diff::merge::added_lines(f.before.unwrap_or_default(), after)
                        .into_iter()
                        .map(|(start, end)| TraceRange {
                            start_line: start as u64,
                            end_line: end as u64,
                        })
                        .collect();
                (!ranges.is_empty()).then(|| TraceFile {
                    path: f.path.to_owned(),
                    conversations: vec![TraceConversation {
                        url: author.session_url.clone(),
                        contributor: TraceContributor {
                            kind: ContributorKind::Ai,
                            model_id: author.model_id.clone(),
                        },
                        ranges,
                    }],
                })
            })
            .collect();
        TraceRecord {
            version: AGENT_TRACE_VERSION.to_owned(),
            id: uuid_of(&provenance.transaction_id),
            timestamp: started,
            vcs: None,
            tool: TraceTool {
                name: "roundtable".to_owned(),
                version: tool_version.to_owned(),
            },
            files,
            metadata: TraceMetadata {
                roundtable: provenance,
            },
        }
    }

    /// The record as the note of `commit` holds it: `vcs` names the
    /// commit.
    pub fn at_commit(&self, commit: &str) -> TraceRecord {
        TraceRecord {
            vcs: Some(TraceVcs {
                kind: VcsKind::Git,
                revision: commit.to_owned(),
            }),
            ..self.clone()
        }
    }

    /// The note's bytes: the record as pretty JSON and a line feed.
    pub fn to_note(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(self).expect("a trace record serializes");
        out.push(b'\n');
        out
    }
}

/// A UUID (version 8: name-based with SHA-256, RFC 9562) for `name`: the
/// same name gives the same id, so a record built again is the same.
pub fn uuid_of(name: &str) -> String {
    let mut b = [0u8; 16];
    b.copy_from_slice(&Digest::of(name.as_bytes()).as_bytes()[..16]);
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provenance() -> Provenance {
        Provenance {
            proposal_id: "prop-1".into(),
            revision: 2,
            transaction_id: "tx-1".into(),
            task_id: "task-1".into(),
            agent_id: "alice".into(),
            chain: ChainPoint {
                seq: 7,
                digest: format!("sha256:{}", "ab".repeat(32)),
            },
            evidence: vec![CountedEvidence {
                kind: EvidenceKind::Vote,
                by: "agent:bob".into(),
                revision: 2,
                id: "vote-1".into(),
            }],
        }
    }

    #[test]
    fn a_record_attributes_the_added_lines_and_is_the_same_when_built_again() {
        let files = [
            WrittenFile {
                path: "a.txt",
                before: Some(b"1\n2\n3\n"),
                after: Some(b"1\nTWO\n3\n4\n"),
            },
            WrittenFile {
                path: "gone.txt",
                before: Some(b"x\n"),
                after: None,
            },
            WrittenFile {
                path: "cut.txt",
                before: Some(b"x\ny\n"),
                after: Some(b"x\n"),
            },
        ];
        let r = TraceRecord::for_landing(
            provenance(),
            &Author::default(),
            Timestamp(0),
            "1.0.0",
            &files,
        );
        assert_eq!(r.files.len(), 1);
        assert_eq!(r.files[0].path, "a.txt");
        let ranges = &r.files[0].conversations[0].ranges;
        assert_eq!(
            ranges
                .iter()
                .map(|r| (r.start_line, r.end_line))
                .collect::<Vec<_>>(),
            vec![(2, 2), (4, 4)]
        );
        assert_eq!(
            r,
            TraceRecord::for_landing(
                provenance(),
                &Author::default(),
                Timestamp(0),
                "1.0.0",
                &files
            )
        );
        let note = r.at_commit("c0ffee");
        let back: TraceRecord = serde_json::from_slice(&note.to_note()).expect("parses");
        assert_eq!(back, note);
        assert_eq!(
            serde_json::to_value(&note).expect("json")["metadata"]["dev.roundtable"]["agent_id"],
            "alice"
        );
    }

    #[test]
    fn the_uuid_is_version_8_and_stable() {
        let id = uuid_of("tx-1");
        assert_eq!(id, uuid_of("tx-1"));
        assert_ne!(id, uuid_of("tx-2"));
        let parts: Vec<&str> = id.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            vec![8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('8'), "{id}");
        assert!(matches!(&parts[3][..1], "8" | "9" | "a" | "b"), "{id}");
    }

    #[test]
    fn a_chain_trailer_reads_back() {
        let p = provenance().chain;
        assert_eq!(ChainPoint::parse_trailer(&p.trailer()), Some(p));
        assert_eq!(ChainPoint::parse_trailer("7 sha256:zz"), None);
        assert_eq!(ChainPoint::parse_trailer("x"), None);
    }
}
