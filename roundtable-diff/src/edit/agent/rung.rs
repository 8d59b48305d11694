//! How loosely each hunk of an agent-native change was matched.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How loosely a hunk of an agent-native change had to be matched to find
/// its unique place in the file: the rungs of the ladder, strictest first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MatchRung {
    /// Every line equal (line terminators aside).
    Exact,
    /// Equal once trailing whitespace is removed from each line.
    TrailingWhitespace,
    /// Equal once each line is trimmed and inner runs of whitespace are
    /// collapsed to one space; the replacement is written at the file's
    /// indentation (shifted by the one offset between the hunk's lines and
    /// the file's, or refused when that offset is uneven).
    Whitespace,
    /// Equal at the `whitespace` rung once typographic punctuation is read
    /// as its ASCII counterpart, as Codex's `apply_patch` matches: the
    /// dashes and minus U+2010–U+2015 and U+2212 as `-`, the quotes
    /// U+2018–U+201B as `'` and U+201C–U+201F as `"`, and the spaces
    /// U+00A0, U+2002–U+200A, U+202F, U+205F and U+3000 as a space. The
    /// file's own bytes are kept on every line the hunk does not replace.
    UnicodePunctuation,
}

impl MatchRung {
    /// Every rung, strictest first: the order the ladder tries them in.
    pub const LADDER: [MatchRung; 4] = [
        MatchRung::Exact,
        MatchRung::TrailingWhitespace,
        MatchRung::Whitespace,
        MatchRung::UnicodePunctuation,
    ];

    /// The stable spelling: `exact`, `trailing_whitespace`, `whitespace`,
    /// `unicode_punctuation`.
    pub fn as_str(self) -> &'static str {
        match self {
            MatchRung::Exact => "exact",
            MatchRung::TrailingWhitespace => "trailing_whitespace",
            MatchRung::Whitespace => "whitespace",
            MatchRung::UnicodePunctuation => "unicode_punctuation",
        }
    }
}

/// Where one hunk of an agent-native change matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MatchedHunk {
    /// The hunk's number in the submitted text (1-based, counted across
    /// the whole document).
    pub hunk: u32,
    /// The rung it needed (the loosest of its anchors and its lines).
    pub rung: MatchRung,
    /// The 1-based line where its lines start (for a pure insertion: the
    /// line it is inserted before): in the file as the blocks before it
    /// left it for SEARCH/REPLACE, which applies block after block; in the
    /// original file for a Codex hunk, which is found after the previous
    /// one.
    pub line: u32,
}
