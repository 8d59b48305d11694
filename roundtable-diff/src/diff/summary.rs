//! [`PatchSummary`]: what a parsed patch touches, as every front end
//! reports it (`roundtable patch parse`, `rt_patch_parse`,
//! `roundtable.parse_patch`).

use super::{FileStatus, Mode, Patch};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// One file section of a patch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSummary<'a> {
    /// The old path (`None` for a created file); lossily decoded.
    pub old_path: Option<Cow<'a, str>>,
    /// The new path (`None` for a deleted file); lossily decoded.
    pub new_path: Option<Cow<'a, str>>,
    /// What the section does.
    pub status: FileStatus,
    /// The old mode, when stated.
    pub old_mode: Option<Mode>,
    /// The new mode, when stated.
    pub new_mode: Option<Mode>,
    /// Whether the section is a binary patch (or `Binary files … differ`).
    pub binary: bool,
    /// Each hunk's ranges.
    pub hunks: Vec<HunkRange>,
    /// Lines added.
    pub added_lines: usize,
    /// Lines removed.
    pub removed_lines: usize,
}

/// A hunk's ranges, as in its `@@` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HunkRange {
    /// First old line.
    pub old_start: u32,
    /// Old line count.
    pub old_lines: u32,
    /// First new line.
    pub new_start: u32,
    /// New line count.
    pub new_lines: u32,
}

/// Every file section of a patch: `{"files": [...]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchSummary<'a> {
    /// The file sections, in input order.
    pub files: Vec<FileSummary<'a>>,
}

impl<'a> Patch<'a> {
    /// What the patch touches, file by file.
    pub fn summary(&self) -> PatchSummary<'_> {
        let files = self
            .files()
            .iter()
            .map(|f| FileSummary {
                old_path: f.old_path().map(String::from_utf8_lossy),
                new_path: f.new_path().map(String::from_utf8_lossy),
                status: f.status(),
                old_mode: f.old_mode(),
                new_mode: f.new_mode(),
                binary: f.is_binary(),
                hunks: f
                    .hunks()
                    .iter()
                    .map(|h| HunkRange {
                        old_start: h.old_start(),
                        old_lines: h.old_lines(),
                        new_start: h.new_start(),
                        new_lines: h.new_lines(),
                    })
                    .collect(),
                added_lines: f.added_lines(),
                removed_lines: f.removed_lines(),
            })
            .collect();
        PatchSummary { files }
    }
}
