//! The details of the codes about `symbol:` resources.

use crate::symbols::{Symbol, SymbolKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `unknown_symbol`: the name asked for, and names that resemble it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnknownSymbolDetails {
    /// The repository path the refusal is about (lossily decoded when it is not UTF-8).
    pub path: String,
    /// The name asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub name: Option<String>,
    /// Names in the file that resemble it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<String>")]
    pub similar: Option<Vec<String>>,
    /// The name asked for, in a file that does not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub symbol: Option<String>,
}

/// One indexed symbol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Symbol")]
pub struct SymbolCandidate {
    /// The qualified name, `.`-separated.
    pub name: String,
    /// What kind of item it is.
    pub kind: SymbolKind,
    /// First line of the span, 1-based.
    pub start_line: u64,
    /// Last line of the span, 1-based and inclusive.
    pub end_line: u64,
    /// First byte of the span.
    pub start_byte: u64,
    /// One past the last byte of the span.
    pub end_byte: u64,
    /// `true` for a definition, `false` for a bare declaration.
    pub definition: bool,
}

impl From<&Symbol> for SymbolCandidate {
    fn from(s: &Symbol) -> SymbolCandidate {
        SymbolCandidate {
            name: s.name.clone(),
            kind: s.kind,
            start_line: u64::from(s.start_line),
            end_line: u64::from(s.end_line),
            start_byte: s.start_byte as u64,
            end_byte: s.end_byte as u64,
            definition: s.definition,
        }
    }
}

/// `ambiguous_symbol`: every symbol of the name, with its span.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AmbiguousSymbolDetails {
    /// The repository path the refusal is about (lossily decoded when it is not UTF-8).
    pub path: String,
    /// The name asked for.
    pub name: String,
    /// Every symbol of that name, with its span.
    pub candidates: Vec<SymbolCandidate>,
}

/// `unsupported_language`: the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnsupportedLanguageDetails {
    /// The repository path the refusal is about (lossily decoded when it is not UTF-8).
    pub path: String,
}
