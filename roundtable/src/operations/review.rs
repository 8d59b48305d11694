//! The read side for reviewers: what a revision changes (`proposal.files`,
//! `proposal.diff`, `proposal.symbols`), what changed between two revisions
//! (`proposal.compare`), and whether it can land now and who acts next
//! (`proposal.status`). All read-only.

use super::args::{Limit, PathArg, RevisionNumber};
use super::details::{DatabaseDetails, PreconditionFailedDetails};
use super::next::{by_requirement, next_actors, RequirementNext, Situation};
use super::proposals::changeset_against;
use super::records::{FileSummary as ChangeSummary, Proposal, ProposalStatus, Revision};
use super::validate::{gather, validate, StageStatus, ValidationReport};
use super::{Cx, Tool, ToolError};
use crate::actor::Actor;
use crate::diff::{FilePatch, FileStatus, Mode, Patch, TreeFile};
use crate::engine::Engine;
use crate::id::Id;
use crate::model::{OperationKind, RevisionFormat, StageName};
use crate::operations::records::ProposalRecord;
use crate::operations::records::RevisionRecord;
use crate::store::sql::Tx;
use crate::symbols::{Symbol, SymbolKind};
use crate::{Digest, RepoPath};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// The revision's unified diff: its changeset rendered when it was made
/// (what lands, whatever the format submitted), or for a patch revision
/// stored before previews were rendered, the patch itself.
pub(crate) fn diff_bytes(tx: &Tx<'_>, revision: &Revision) -> Result<Vec<u8>, ToolError> {
    use crate::store::BlobFault;
    let digest = revision.diff_digest.as_ref().unwrap_or(&revision.digest);
    let n = revision.number;
    crate::store::verified_blob(tx, digest)?.map_err(|fault| {
        let message = match fault {
            BlobFault::Missing => format!("the diff of revision {n} ({digest}) is missing"),
            BlobFault::Mismatch => format!("the diff of revision {n} does not match its digest"),
        };
        let details = DatabaseDetails {
            digest: Some(digest.to_string()),
            ..DatabaseDetails::default()
        };
        ToolError::new(message, details)
    })
}

fn parse_diff<'b>(engine: &crate::Engine, bytes: &'b [u8]) -> Result<Patch<'b>, ToolError> {
    Ok(crate::diff::parse(
        bytes,
        &engine.options().parse_options(),
    )?)
}

/// A revision's diff read, verified and parsed once: each file's entry
/// (without `matches`, which come from the revision's changeset) and its
/// section as rendered, in diff order.
#[derive(Debug)]
pub(crate) struct ParsedDiff {
    files: Vec<FileEntry>,
    sections: Vec<RenderedSection>,
    /// What it holds, in bytes (about the diff's size).
    size: usize,
}

/// One file's section of a parsed diff.
#[derive(Debug)]
struct RenderedSection {
    old_path: Option<String>,
    new_path: Option<String>,
    bytes: Vec<u8>,
}

impl ParsedDiff {
    fn of(patch: &Patch<'_>) -> ParsedDiff {
        let files: Vec<FileEntry> = patch.files().iter().map(file_entry).collect();
        let sections: Vec<RenderedSection> = patch
            .files()
            .iter()
            .map(|f| {
                let mut bytes = Vec::new();
                f.render_into(&mut bytes);
                RenderedSection {
                    old_path: lossy(f.old_path()),
                    new_path: lossy(f.new_path()),
                    bytes,
                }
            })
            .collect();
        let size = sections
            .iter()
            .map(|s| s.bytes.len() + 2 * std::mem::size_of::<FileEntry>())
            .sum();
        ParsedDiff {
            files,
            sections,
            size,
        }
    }
}

/// The most bytes of parsed diffs an engine keeps ([`DiffMemo`]).
pub(crate) const DIFF_MEMO_BYTES: usize = 128 << 20;

/// The parsed diffs of the revisions read last, most recent first, at most
/// [`DIFF_MEMO_BYTES`] in all, so that a reviewer paging through a large
/// revision's files and diff does not read, hash and parse all of it on
/// every page. Keyed by the diff's digest: a stored blob never changes,
/// so an entry is never stale (the blob's check against its digest is
/// made when the entry is made).
#[derive(Debug, Default)]
pub(crate) struct DiffMemo(std::sync::Mutex<Vec<(Digest, Arc<ParsedDiff>)>>);

impl DiffMemo {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Digest, Arc<ParsedDiff>)>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The diff of `digest`, if kept (it becomes the most recent).
    fn get(&self, digest: &Digest) -> Option<Arc<ParsedDiff>> {
        let mut kept = self.lock();
        let at = kept.iter().position(|(d, _)| d == digest)?;
        let entry = kept.remove(at);
        let parsed = Arc::clone(&entry.1);
        kept.insert(0, entry);
        Some(parsed)
    }

    /// Keep `parsed` as the diff of `digest`, dropping the least recent
    /// past the limit (one larger than the limit is not kept).
    fn put(&self, digest: Digest, parsed: &Arc<ParsedDiff>) {
        if parsed.size > DIFF_MEMO_BYTES {
            return;
        }
        let mut kept = self.lock();
        kept.retain(|(d, _)| *d != digest);
        kept.insert(0, (digest, Arc::clone(parsed)));
        let mut total = 0usize;
        kept.retain(|(_, p)| {
            total = total.saturating_add(p.size);
            total <= DIFF_MEMO_BYTES
        });
    }
}

/// `revision`'s diff, parsed: from the engine's [`DiffMemo`], else read
/// from the store (checked against its digest), parsed and kept.
fn parsed_diff(cx: &Cx<'_>, revision: &Revision) -> Result<Arc<ParsedDiff>, ToolError> {
    let digest = revision.diff_digest.as_ref().unwrap_or(&revision.digest);
    let memo = cx.engine.extension::<DiffMemo>();
    if let Some(hit) = memo.get(digest) {
        return Ok(hit);
    }
    let bytes = diff_bytes(cx.tx, revision)?;
    let parsed = Arc::new(ParsedDiff::of(&parse_diff(cx.engine, &bytes)?));
    memo.put(*digest, &parsed);
    Ok(parsed)
}

fn load(
    cx: &Cx<'_>,
    proposal_id: &Id,
    revision: Option<RevisionNumber>,
) -> Result<(Proposal, Revision), ToolError> {
    let p = Proposal::load(cx.tx, proposal_id.as_str())?;
    let number = revision.map_or(p.latest_revision, |r| r.0);
    let r = Revision::load(cx.tx, &p.id, number)?;
    Ok((p, r))
}

fn lossy(p: Option<&[u8]>) -> Option<String> {
    p.map(|p| String::from_utf8_lossy(p).into_owned())
}

fn operation_kind(s: FileStatus) -> OperationKind {
    match s {
        FileStatus::Added => OperationKind::Create,
        FileStatus::Deleted => OperationKind::Delete,
        FileStatus::Modified => OperationKind::Modify,
        FileStatus::Renamed => OperationKind::Rename,
        FileStatus::Copied => OperationKind::Copy,
    }
}

/// Arguments naming one revision of a proposal.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "RevisionArgs")]
pub struct ProposalFiles {
    /// The proposal.
    pub proposal_id: Id,
    /// The revision (default: the latest).
    pub revision: Option<RevisionNumber>,
}

/// The most paths one `proposal.symbols` or `proposal.diff` call may name.
const MAX_SYMBOL_PATHS: usize = 1000;

/// Arguments of `proposal.symbols`: one revision of a proposal, and
/// optionally which of its files.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SymbolsArgs")]
pub struct ProposalSymbols {
    /// The proposal.
    pub proposal_id: Id,
    /// The revision (default: the latest).
    pub revision: Option<RevisionNumber>,
    /// Only these files, each named by its new or its old path; only
    /// they are parsed. A path the revision does not touch is simply
    /// absent from the result. Default: every file; at most 1000.
    pub paths: Option<Vec<PathArg>>,
}

/// `invalid_argument` when `paths` names more than [`MAX_SYMBOL_PATHS`].
fn check_paths(paths: Option<&[PathArg]>) -> Result<(), ToolError> {
    match paths.filter(|ps| ps.len() > MAX_SYMBOL_PATHS) {
        Some(ps) => Err(ToolError::invalid_argument(
            "paths",
            format!("has {} entries; the limit is {MAX_SYMBOL_PATHS}", ps.len()),
        )),
        None => Ok(()),
    }
}

/// Whether a file of a changeset at `path` (from `source` before a rename
/// or copy) is one `paths` asks for (`None`: every file).
fn wanted(paths: Option<&[PathArg]>, path: &RepoPath, source: &RepoPath) -> bool {
    paths.is_none_or(|ps| ps.iter().any(|p| p.0 == *path || p.0 == *source))
}

/// One file of a revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FileEntry {
    /// The old path (`null` for a created file).
    pub old_path: Option<String>,
    /// The new path (`null` for a deleted file).
    pub new_path: Option<String>,
    /// `create`, `modify`, `delete`, `rename` or `copy`.
    pub operation: OperationKind,
    /// The old mode, when it changes or the file is deleted (`100644`…).
    pub old_mode: Option<String>,
    /// The new mode, when it changes or the file is created.
    pub new_mode: Option<String>,
    /// Whether the executable bit changes.
    pub mode_change: bool,
    /// A binary change (line counts do not apply).
    pub binary: bool,
    /// Lines added (`null` for binary), as `git apply --numstat` counts.
    pub added_lines: Option<u64>,
    /// Lines removed (`null` for binary).
    pub removed_lines: Option<u64>,
    /// For a Codex patch or SEARCH/REPLACE revision: where each hunk
    /// editing this file matched and the rung of the matching ladder it
    /// needed (`exact`, `trailing_whitespace`, `whitespace`,
    /// `unicode_punctuation`); written only when there are any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<crate::model::MatchedHunk>,
}

fn file_entry(f: &FilePatch<'_>) -> FileEntry {
    let mode = |m: Option<Mode>| m.map(|m| format!("{:06o}", m.0));
    let mode_change = match (f.old_mode(), f.new_mode()) {
        (Some(a), Some(b)) => a.is_executable() != b.is_executable(),
        _ => false,
    };
    let binary = f.is_binary();
    FileEntry {
        old_path: lossy(f.old_path()),
        new_path: lossy(f.new_path()),
        operation: operation_kind(f.status()),
        old_mode: mode(f.old_mode()),
        new_mode: mode(f.new_mode()),
        mode_change,
        binary,
        added_lines: (!binary).then_some(f.added_lines() as u64),
        removed_lines: (!binary).then_some(f.removed_lines() as u64),
        matches: Vec::new(),
    }
}

/// Result of `proposal.files`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Files {
    /// The revision.
    pub revision: u32,
    /// Its files, in diff order.
    pub files: Vec<FileEntry>,
    /// Totals over text files.
    pub added_lines: u64,
    /// Totals over text files.
    pub removed_lines: u64,
}

impl super::Request for ProposalFiles {
    const TOOL: &'static str = "proposal.files";
    const DESCRIPTION: &'static str = "List what a revision changes, file by file: old and new path, operation, mode change, binary flag, and the real numbers of added and removed lines.";
    const MUTATES: bool = false;
    type Output = Files;

    store_tool!();
}

impl Tool for ProposalFiles {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: ProposalFiles, (): ()) -> Result<Files, ToolError> {
        let (_, revision) = load(cx, &args.proposal_id, args.revision)?;
        let parsed = parsed_diff(cx, &revision)?;
        let mut files = parsed.files.clone();
        // The hunks were matched in the file they edit: the old path (a
        // move's source). Only an agent-format revision has any.
        let matched: HashMap<&str, &Vec<crate::model::MatchedHunk>> = revision
            .changeset
            .iter()
            .filter(|f| !f.matches.is_empty())
            .map(|f| (f.path.as_str(), &f.matches))
            .collect();
        if !matched.is_empty() {
            for entry in &mut files {
                let edited = entry.old_path.as_ref().or(entry.new_path.as_ref());
                if let Some(m) = edited.and_then(|p| matched.get(p.as_str())) {
                    entry.matches.clone_from(m);
                }
            }
        }
        Ok(Files {
            revision: revision.number,
            added_lines: files.iter().filter_map(|f| f.added_lines).sum(),
            removed_lines: files.iter().filter_map(|f| f.removed_lines).sum(),
            files,
        })
    }
}

/// Arguments of `proposal.diff`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "DiffArgs")]
pub struct ProposalDiff {
    /// The proposal.
    pub proposal_id: Id,
    /// The revision (default: the latest).
    pub revision: Option<RevisionNumber>,
    /// Files per page, 1 to 100 (default 20).
    pub limit: Option<Limit<100>>,
    /// Continue after the page that returned this `next_cursor`.
    pub cursor: Option<super::args::Cursor>,
    /// Only these files (by new or old path), paged among them; at most
    /// 1000. Default: every file.
    pub paths: Option<Vec<PathArg>>,
}

/// One file's section of the diff, exactly as stored.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct DiffSection {
    /// Its position among the revision's files (from 0).
    pub index: u64,
    /// The old path.
    pub old_path: Option<String>,
    /// The new path.
    pub new_path: Option<String>,
    /// The section's text, byte for byte (when it is UTF-8).
    pub diff: Option<String>,
    /// The section's bytes in base64, when they are not UTF-8.
    pub diff_base64: Option<String>,
}

/// Result of `proposal.diff`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct DiffPage {
    /// The revision.
    pub revision: u32,
    /// How many files the revision changes.
    pub total_files: u64,
    /// This page's sections; concatenated over all pages they are the
    /// revision's diff, which applies.
    pub files: Vec<DiffSection>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<super::args::Cursor>,
}

impl super::Request for ProposalDiff {
    const TOOL: &'static str = "proposal.diff";
    const DESCRIPTION: &'static str = "A revision as a unified diff rendered from the changeset that lands (whatever format was submitted: proposal.get include_content has the submitted text), paged by file; exact bytes, never redacted.";
    const MUTATES: bool = false;
    type Output = DiffPage;

    store_tool!();
}

impl Tool for ProposalDiff {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: ProposalDiff, (): ()) -> Result<DiffPage, ToolError> {
        let (_, revision) = load(cx, &args.proposal_id, args.revision)?;
        let parsed = parsed_diff(cx, &revision)?;
        let limit = args.limit.map_or(20, |l| l.0) as usize;
        let start = match &args.cursor {
            None => 0,
            Some(c) => c
                .seq()
                .and_then(|s| usize::try_from(s).ok())
                .ok_or_else(|| {
                    ToolError::invalid_argument("cursor", "is not a cursor this tool returned")
                })?,
        };
        check_paths(args.paths.as_deref())?;
        let named = |side: &Option<String>| {
            side.as_deref()
                .is_some_and(|s| args.paths.iter().flatten().any(|p| p.0.as_str() == s))
        };
        let wanted: Vec<(usize, &_)> = parsed
            .sections
            .iter()
            .enumerate()
            .filter(|(_, f)| args.paths.is_none() || named(&f.new_path) || named(&f.old_path))
            .collect();
        let total = parsed.sections.len();
        let listed = wanted.len();
        let files = wanted
            .into_iter()
            .skip(start)
            .take(limit)
            .map(|(i, f)| {
                let (diff, diff_base64) = match std::str::from_utf8(&f.bytes) {
                    Ok(s) => (Some(s.to_owned()), None),
                    Err(_) => {
                        use base64::Engine as _;
                        (
                            None,
                            Some(base64::engine::general_purpose::STANDARD.encode(&f.bytes)),
                        )
                    }
                };
                DiffSection {
                    index: i as u64,
                    old_path: f.old_path.clone(),
                    new_path: f.new_path.clone(),
                    diff,
                    diff_base64,
                }
            })
            .collect();
        let next = start + limit;
        Ok(DiffPage {
            revision: revision.number,
            total_files: total as u64,
            files,
            next_cursor: (next < listed).then(|| super::args::Cursor::after(next as i64)),
        })
    }
}

/// The contents a revision was made against, for its touched paths: from
/// the blob table when a transaction journaled them, else from the current
/// files when they still match.
fn before_tree(
    engine: &Engine,
    tx: &Tx<'_>,
    changeset: &[ChangeSummary],
) -> Result<BTreeMap<Vec<u8>, TreeFile>, ToolError> {
    let mut tree = BTreeMap::new();
    for f in changeset {
        let Some(before) = &f.before else { continue };
        let data = match crate::store::verified_blob(tx, &before.digest)? {
            Ok(bytes) => bytes,
            // Missing, or not what its digest says: the file itself may
            // still have that content.
            _ => {
                let path: RepoPath = f.path.parse().map_err(|e: crate::PathError| {
                    ToolError::new(e.to_string(), DatabaseDetails::default())
                })?;
                match engine.workspace().read(&path)? {
                    Some(file) if Digest::of(&file.data) == before.digest => file.data,
                    _ => {
                        return Err(ToolError::new(
                            format!(
                                "{} is no longer what the revision was made against, and no transaction kept that content",
                                f.path
                            ),
                            PreconditionFailedDetails {
                                path: Some(f.path.to_string()),
                                expected: Some(before.digest.to_string()),
                                ..PreconditionFailedDetails::default()
                            },
                        ))
                    }
                }
            }
        };
        tree.insert(
            f.path.as_bytes().to_vec(),
            TreeFile {
                data,
                executable: before.executable,
                symlink: before.symlink,
            },
        );
    }
    Ok(tree)
}

/// A symbol a change touches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SymbolChange {
    /// `added`, `removed`, `modified` or `renamed`.
    pub change: String,
    /// The qualified name (after the change; before, for `removed`).
    pub name: String,
    /// For `renamed`, the name before.
    pub old_name: Option<String>,
    /// `function`, `method`, `type`, …
    pub kind: SymbolKind,
    /// Its line span before the change (`[start, end]`, 1-based).
    pub before: Option<[u32; 2]>,
    /// Its line span after.
    pub after: Option<[u32; 2]>,
}

/// One file's symbol changes.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct FileSymbols {
    /// The path (after the change).
    pub path: String,
    /// The language, or `null` when no grammar indexes the file.
    pub language: Option<String>,
    /// The changes, in order of position.
    pub symbols: Vec<SymbolChange>,
}

/// Result of `proposal.symbols`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Symbols {
    /// The revision.
    pub revision: u32,
    /// Per touched file.
    pub files: Vec<FileSymbols>,
}

fn span(s: &Symbol) -> [u32; 2] {
    [s.start_line, s.end_line]
}

fn last_segment(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// Compare the symbols of one file before and after.
pub(crate) fn symbol_changes(
    before: (&[u8], &[Symbol]),
    after: (&[u8], &[Symbol]),
) -> Vec<SymbolChange> {
    let text = |src: &[u8], s: &Symbol| src[s.start_byte..s.end_byte].to_vec();
    let by_name = |syms: &[Symbol]| {
        let mut m: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, s) in syms.iter().enumerate() {
            m.entry(s.name.clone()).or_default().push(i);
        }
        m
    };
    let (old, new) = (by_name(before.1), by_name(after.1));
    let mut out = Vec::new();
    let mut removed: Vec<&Symbol> = Vec::new();
    let mut added: Vec<&Symbol> = Vec::new();
    for (name, idx) in &old {
        match new.get(name) {
            Some(nidx) => {
                for (a, b) in idx.iter().zip(nidx) {
                    let (a, b) = (&before.1[*a], &after.1[*b]);
                    if text(before.0, a) != text(after.0, b) {
                        out.push(SymbolChange {
                            change: "modified".into(),
                            name: name.clone(),
                            old_name: None,
                            kind: a.kind,
                            before: Some(span(a)),
                            after: Some(span(b)),
                        });
                    }
                }
                removed.extend(idx.iter().skip(nidx.len()).map(|i| &before.1[*i]));
                added.extend(nidx.iter().skip(idx.len()).map(|i| &after.1[*i]));
            }
            None => removed.extend(idx.iter().map(|i| &before.1[*i])),
        }
    }
    for (name, nidx) in &new {
        if !old.contains_key(name) {
            added.extend(nidx.iter().map(|i| &after.1[*i]));
        }
    }
    // A removed and an added symbol of one kind whose text is the same once
    // their own names are blanked out: a rename.
    let blank = |src: &[u8], s: &Symbol| {
        let t = String::from_utf8_lossy(&text(src, s)).into_owned();
        t.replacen(last_segment(&s.name), "\u{0}", 1)
    };
    let mut renamed_added = vec![false; added.len()];
    for r in removed {
        let found = added.iter().enumerate().position(|(i, a)| {
            !renamed_added[i] && a.kind == r.kind && blank(after.0, a) == blank(before.0, r)
        });
        match found {
            Some(i) => {
                renamed_added[i] = true;
                out.push(SymbolChange {
                    change: "renamed".into(),
                    name: added[i].name.clone(),
                    old_name: Some(r.name.clone()),
                    kind: r.kind,
                    before: Some(span(r)),
                    after: Some(span(added[i])),
                });
            }
            None => out.push(SymbolChange {
                change: "removed".into(),
                name: r.name.clone(),
                old_name: None,
                kind: r.kind,
                before: Some(span(r)),
                after: None,
            }),
        }
    }
    for (i, a) in added.iter().enumerate() {
        if !renamed_added[i] {
            out.push(SymbolChange {
                change: "added".into(),
                name: a.name.clone(),
                old_name: None,
                kind: a.kind,
                before: None,
                after: Some(span(a)),
            });
        }
    }
    out.sort_by_key(|c| (c.after.or(c.before).map_or(0, |s| s[0]), c.name.clone()));
    out
}

impl super::Request for ProposalSymbols {
    const TOOL: &'static str = "proposal.symbols";
    const DESCRIPTION: &'static str = "The functions, methods and types a revision adds, removes, renames or modifies, computed on the content before and after the change.";
    const MUTATES: bool = false;
    type Output = Symbols;

    store_tool!();
}

impl Tool for ProposalSymbols {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: ProposalSymbols, (): ()) -> Result<Symbols, ToolError> {
        let paths = args.paths.as_deref();
        check_paths(paths)?;
        let (_, revision) = load(cx, &args.proposal_id, args.revision)?;
        let options = cx.engine.options().parse_options();
        let rendered = revision.diff_digest.is_some() || revision.format == RevisionFormat::Patch;
        let (tree, changeset) = match paths {
            // Only the named files: their sections of the revision's diff
            // (rendered from what lands, so it gives the same results from
            // the same contents) against their own before-contents, so a
            // file's symbols cost that file, not the whole revision.
            Some(ps) if rendered => {
                let parsed = parsed_diff(cx, &revision)?;
                let named = |p: &Option<String>| {
                    p.as_deref()
                        .is_some_and(|p| ps.iter().any(|w| w.0.as_str() == p))
                };
                let mut sections = Vec::new();
                let mut touched: HashSet<&str> = HashSet::new();
                for s in parsed
                    .sections
                    .iter()
                    .filter(|s| named(&s.old_path) || named(&s.new_path))
                {
                    sections.extend_from_slice(&s.bytes);
                    touched.extend(s.old_path.as_deref());
                    touched.extend(s.new_path.as_deref());
                }
                if sections.is_empty() {
                    return Ok(Symbols {
                        revision: revision.number,
                        files: Vec::new(),
                    });
                }
                let before: Vec<ChangeSummary> = revision
                    .changeset
                    .iter()
                    .filter(|f| touched.contains(f.path.as_str()))
                    .cloned()
                    .collect();
                let tree = before_tree(cx.engine, cx.tx, &before)?;
                let changeset =
                    changeset_against(&tree, RevisionFormat::Patch, &sections, &options)?;
                (tree, changeset)
            }
            _ => {
                let bytes = super::proposals::source_bytes(cx.tx, &revision)?;
                let tree = before_tree(cx.engine, cx.tx, &revision.changeset)?;
                let changeset = changeset_against(&tree, revision.format, &bytes, &options)?;
                (tree, changeset)
            }
        };
        let mut files = Vec::new();
        for f in changeset.files() {
            let source = match &f.operation {
                crate::changeset::Operation::Rename { from }
                | crate::changeset::Operation::Copy { from } => from.clone(),
                _ => f.path.clone(),
            };
            if !wanted(paths, &f.path, &source) {
                continue;
            }
            let Some(language) = crate::symbols::Language::for_path(&f.path) else {
                files.push(FileSymbols {
                    path: f.path.to_string(),
                    language: None,
                    symbols: Vec::new(),
                });
                continue;
            };
            if matches!(f.operation, crate::changeset::Operation::RenamedAway { .. }) {
                continue;
            }
            let empty = Vec::new();
            let old = tree
                .get(source.as_str().as_bytes())
                .filter(|_| !matches!(f.operation, crate::changeset::Operation::Create))
                .map_or(&empty, |t| &t.data);
            let new = f.after.as_ref().map_or(&empty, |c| &c.data);
            let old_syms = crate::symbols::index(language, old)?;
            let new_syms = crate::symbols::index(language, new)?;
            files.push(FileSymbols {
                path: f.path.to_string(),
                language: Some(language.as_str().to_owned()),
                symbols: symbol_changes((old, &old_syms), (new, &new_syms)),
            });
        }
        Ok(Symbols {
            revision: revision.number,
            files,
        })
    }
}

/// Arguments of `proposal.compare`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "CompareArgs")]
pub struct CompareRevisions {
    /// The proposal.
    pub proposal_id: Id,
    /// The earlier revision.
    pub from_revision: RevisionNumber,
    /// The later revision.
    pub to_revision: RevisionNumber,
}

/// How one file differs between two revisions.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct FileInterdiff {
    /// The path.
    pub path: String,
    /// `changed` (both revisions touch it, differently), `only_in_from`
    /// or `only_in_to`.
    pub status: InterdiffStatus,
    /// Hunks (header and body) the earlier revision has and the later does
    /// not.
    pub removed_hunks: Vec<String>,
    /// Hunks the later revision has and the earlier does not.
    pub added_hunks: Vec<String>,
}

/// Which of two compared revisions touch a file (a `FileInterdiff`'s
/// `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InterdiffStatus {
    /// Both revisions touch it, differently.
    Changed,
    /// Only the earlier revision touches it.
    OnlyInFrom,
    /// Only the later revision touches it.
    OnlyInTo,
}

/// Result of `proposal.compare`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Interdiff {
    /// The earlier revision.
    pub from_revision: u32,
    /// The later revision.
    pub to_revision: u32,
    /// Whether the two revisions make the identical changeset.
    pub identical: bool,
    /// Files the two revisions change differently (files changed
    /// identically are not listed).
    pub files: Vec<FileInterdiff>,
}

fn section_key(f: &FilePatch<'_>) -> String {
    String::from_utf8_lossy(f.path()).into_owned()
}

/// A hunk as (what it changes, its text): the key is its lines without the
/// `@@` header, so a hunk that only moved (an earlier hunk grew or shrank)
/// compares equal.
fn hunk_text(h: &crate::diff::Hunk<'_>) -> (Vec<u8>, String) {
    let mut key = Vec::new();
    for line in h.lines() {
        key.push(match line.kind {
            crate::diff::LineKind::Context => b' ',
            crate::diff::LineKind::Delete => b'-',
            crate::diff::LineKind::Insert => b'+',
        });
        key.extend_from_slice(line.content);
        if line.no_newline {
            key.extend_from_slice(crate::diff::NO_NEWLINE_MARKER);
        }
    }
    let mut out = Vec::new();
    h.render_into(&mut out);
    (key, String::from_utf8_lossy(&out).into_owned())
}

impl super::Request for CompareRevisions {
    const TOOL: &'static str = "proposal.compare";
    const DESCRIPTION: &'static str = "The interdiff of two revisions of one proposal: per file, the hunks one has and the other lacks (compared by content, so shifted line numbers do not count); files both change identically are omitted.";
    const MUTATES: bool = false;
    type Output = Interdiff;

    store_tool!();
}

impl Tool for CompareRevisions {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: CompareRevisions, (): ()) -> Result<Interdiff, ToolError> {
        let p = Proposal::load(cx.tx, args.proposal_id.as_str())?;
        let a = Revision::load(cx.tx, &p.id, args.from_revision.0)?;
        let b = Revision::load(cx.tx, &p.id, args.to_revision.0)?;
        let (abytes, bbytes) = (diff_bytes(cx.tx, &a)?, diff_bytes(cx.tx, &b)?);
        let (apatch, bpatch) = (
            parse_diff(cx.engine, &abytes)?,
            parse_diff(cx.engine, &bbytes)?,
        );
        let summaries = |r: &Revision| -> BTreeMap<String, ChangeSummary> {
            r.changeset
                .iter()
                .map(|f| (f.path.clone(), f.clone()))
                .collect()
        };
        let (asum, bsum) = (summaries(&a), summaries(&b));
        let sections = |p: &Patch<'_>| -> BTreeMap<String, Vec<(Vec<u8>, String)>> {
            let mut m: BTreeMap<String, Vec<(Vec<u8>, String)>> = BTreeMap::new();
            for f in p.files() {
                let entry = m.entry(section_key(f)).or_default();
                let mut header = Vec::new();
                // A section's non-hunk part (headers, binary payload) counts
                // as one "hunk" so mode and binary changes compare too.
                let mut whole = Vec::new();
                f.render_into(&mut whole);
                let hunks: Vec<(Vec<u8>, String)> = f.hunks().iter().map(hunk_text).collect();
                if hunks.is_empty() {
                    header.push((whole.clone(), String::from_utf8_lossy(&whole).into_owned()));
                }
                entry.extend(header);
                entry.extend(hunks);
            }
            m
        };
        let (ahunks, bhunks) = (sections(&apatch), sections(&bpatch));
        let mut paths: Vec<&String> = ahunks.keys().chain(bhunks.keys()).collect();
        paths.sort();
        paths.dedup();
        let mut files = Vec::new();
        for path in paths {
            if asum.contains_key(path) && asum.get(path) == bsum.get(path) {
                continue;
            }
            let empty = Vec::new();
            let (ah, bh) = (
                ahunks.get(path).unwrap_or(&empty),
                bhunks.get(path).unwrap_or(&empty),
            );
            let has = |list: &[(Vec<u8>, String)], key: &[u8]| list.iter().any(|(k, _)| k == key);
            let removed: Vec<String> = ah
                .iter()
                .filter(|(k, _)| !has(bh, k))
                .map(|(_, t)| t.clone())
                .collect();
            let added: Vec<String> = bh
                .iter()
                .filter(|(k, _)| !has(ah, k))
                .map(|(_, t)| t.clone())
                .collect();
            if removed.is_empty() && added.is_empty() {
                continue;
            }
            let status = match (ahunks.contains_key(path), bhunks.contains_key(path)) {
                (true, true) => InterdiffStatus::Changed,
                (true, false) => InterdiffStatus::OnlyInFrom,
                _ => InterdiffStatus::OnlyInTo,
            };
            files.push(FileInterdiff {
                path: path.clone(),
                status,
                removed_hunks: removed,
                added_hunks: added,
            });
        }
        Ok(Interdiff {
            from_revision: a.number,
            to_revision: b.number,
            identical: a.changeset_digest == b.changeset_digest,
            files,
        })
    }
}

pub use super::next::{NextAction, NextActor, NextRole};

/// Result of `proposal.status`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StatusReport {
    /// The proposal.
    pub proposal: Proposal,
    /// Whether the latest revision can be applied now.
    pub can_land: bool,
    /// Whether the revision no longer matches the files (its preconditions
    /// fail or it does not apply): the author must revise. Never while the
    /// proposal is `applying`.
    pub stale: bool,
    /// The transaction applying the proposal right now, if one is: it is
    /// committing (the files are changing and its claims are about to be
    /// released), so it is neither stale nor landable again, and
    /// `validation` is `null`; wait for the transaction (`transaction.get`).
    pub applying: Option<String>,
    /// The validation report of the latest revision (`null` once the
    /// proposal is closed).
    pub validation: Option<ValidationReport>,
    /// Who acts next.
    pub next: Vec<NextActor>,
    /// For each unsatisfied requirement of the latest revision, in the
    /// policy's order, who can satisfy it (the item of `next` it gives,
    /// before equal items are merged; for a pending proposal too, whose
    /// `next` is only the author's review request). Empty while `validation`
    /// is `null`.
    pub by_requirement: Vec<RequirementNext>,
}

/// Arguments of `proposal.status`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "StatusArgs")]
pub struct GetProposalStatus {
    /// The proposal.
    pub proposal_id: Id,
}

impl super::Request for GetProposalStatus {
    const TOOL: &'static str = "proposal.status";
    const DESCRIPTION: &'static str = "Can this proposal land now, and if not, why: the validation gates of its latest revision, whether the revision is stale against the files, and who is expected to act next (author, reviewer roles, a human, the orchestrator).";
    const MUTATES: bool = false;
    type Output = StatusReport;

    /// Callers asking about the same proposal at once share one
    /// validation, started after each of them asked ([`StatusFlights`]):
    /// the answer depends on the proposal, the store and the files, never
    /// on who asks.
    fn execute(self, engine: &Engine, actor: &Actor) -> Result<StatusReport, ToolError> {
        let flights = engine.extension::<StatusFlights>();
        let id = self.proposal_id.clone();
        flights
            .0
            .share(&id, || super::run_tool::<Self>(engine, actor, self))
            .map(|report| StatusReport::clone(&report))
    }
}

/// `proposal.status`'s computations in progress, by proposal: a burst of
/// identical calls (every console open on a proposal asks again after
/// each of its events) validates it at most twice, and each caller's
/// answer is worked out after it asked ([`super::flights`]). Nothing is
/// remembered once handed out.
#[derive(Debug, Default)]
pub(crate) struct StatusFlights(pub(crate) super::flights::Flights<Id, StatusReport>);

impl Tool for GetProposalStatus {
    const READS_FILES: bool = true;

    fn store_only(out: &StatusReport) -> bool {
        out.validation.is_none()
    }

    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: GetProposalStatus, (): ()) -> Result<StatusReport, ToolError> {
        let p = Proposal::load(cx.tx, args.proposal_id.as_str())?;
        if !matches!(p.status, ProposalStatus::Pending | ProposalStatus::InReview) {
            return Ok(StatusReport {
                proposal: p,
                can_land: false,
                stale: false,
                applying: None,
                validation: None,
                next: Vec::new(),
                by_requirement: Vec::new(),
            });
        }
        let applying = crate::store::transactions::applying_for(cx.tx, &p.id)?;
        if let Some(transaction) = applying {
            let next = vec![NextActor {
                actor: NextRole::Orchestrator,
                action: NextAction::Wait,
                candidates: Vec::new(),
                people: None,
                roles: Vec::new(),
                why: format!("wait: transaction {transaction} is applying it"),
            }];
            return Ok(StatusReport {
                proposal: p,
                can_land: false,
                stale: false,
                applying: Some(transaction),
                validation: None,
                next,
                by_requirement: Vec::new(),
            });
        }
        let evidence = gather(cx, &p.id, None)?;
        let report = validate(cx.engine, &evidence);
        let stale = report.stages.iter().any(|s| {
            (s.name == "preconditions" || s.name == "dry_run") && s.status == StageStatus::Failed
        });
        let stage_failed = |name: StageName| {
            report
                .stages
                .iter()
                .any(|s| s.name == name && s.status == StageStatus::Failed)
        };
        let rebase = stale
            .then(|| super::rebase::rebase_outlook(cx, &p, &evidence.revision))
            .flatten();
        let situation = Situation {
            proposal: &p,
            policy: &report.policy,
            stale,
            rebase,
            claims: report.stages.iter().find(|s| s.name == StageName::Claims),
            coverage_failed: stage_failed(StageName::Coverage),
            valid: report.valid,
            votes: &evidence.votes,
            reviews: &evidence.reviews,
            tests: &evidence.tests,
        };
        let next = next_actors(&situation);
        let by_requirement = by_requirement(&situation);
        Ok(StatusReport {
            can_land: report.valid,
            stale,
            applying: None,
            next,
            by_requirement,
            validation: Some(report),
            proposal: p,
        })
    }
}

#[cfg(test)]
mod memo_tests {
    use super::*;

    fn parsed(size: usize) -> Arc<ParsedDiff> {
        Arc::new(ParsedDiff {
            files: Vec::new(),
            sections: Vec::new(),
            size,
        })
    }

    fn digest(n: u8) -> Digest {
        Digest::of(&[n])
    }

    #[test]
    fn the_diff_memo_keeps_the_most_recent_within_its_byte_limit() {
        let memo = DiffMemo::default();
        let third = DIFF_MEMO_BYTES / 3;
        for n in 0..3 {
            memo.put(digest(n), &parsed(third));
        }
        // Reading 0 makes it the most recent: 1 is now the least.
        assert!(memo.get(&digest(0)).is_some());
        memo.put(digest(3), &parsed(third));
        assert!(memo.get(&digest(1)).is_none(), "the least recent went");
        for n in [0, 2, 3] {
            assert!(memo.get(&digest(n)).is_some(), "{n} is kept");
        }
        // Kept again under the same digest: one entry, not two.
        memo.put(digest(3), &parsed(third));
        assert_eq!(memo.lock().len(), 3);
        // A diff over the whole limit is not kept, and evicts nothing.
        memo.put(digest(9), &parsed(DIFF_MEMO_BYTES + 1));
        assert!(memo.get(&digest(9)).is_none());
        assert_eq!(memo.lock().len(), 3);
    }
}
