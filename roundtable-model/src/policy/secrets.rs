//! Secret scanning of added lines.
//!
//! Each pattern is anchored on a fixed prefix and bounded on both sides so a
//! token inside a longer word does not match. A finding names the path, line
//! and kind; the secret itself is never copied out.

use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::LazyLock;

/// What kind of secret a line holds.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SecretKind {
    /// `-----BEGIN OPENSSH PRIVATE KEY-----`.
    OpensshPrivateKey,
    /// A PEM private key: `-----BEGIN [RSA |EC |DSA |ENCRYPTED |PGP ]PRIVATE KEY[ BLOCK]-----`.
    PrivateKey,
    /// An AWS access key id: `AKIA` or `ASIA` and 16 uppercase letters or digits.
    AwsAccessKeyId,
    /// A GitHub token: `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` and 36
    /// characters, or a fine-grained `github_pat_` token.
    GithubToken,
    /// A Slack token: `xoxa-`, `xoxb-`, `xoxp-`, `xoxr-`, `xoxs-`.
    SlackToken,
    /// A Google API key: `AIza` and 35 characters.
    GoogleApiKey,
    /// A Stripe live secret key: `sk_live_`.
    StripeLiveKey,
}

impl SecretKind {
    /// The stable spelling (`private_key`, `aws_access_key_id`…).
    pub fn as_str(self) -> &'static str {
        match self {
            SecretKind::OpensshPrivateKey => "openssh_private_key",
            SecretKind::PrivateKey => "private_key",
            SecretKind::AwsAccessKeyId => "aws_access_key_id",
            SecretKind::GithubToken => "github_token",
            SecretKind::SlackToken => "slack_token",
            SecretKind::GoogleApiKey => "google_api_key",
            SecretKind::StripeLiveKey => "stripe_live_key",
        }
    }
}

/// A secret found in an added line: where and what kind, never the text.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub struct SecretFinding {
    /// The file.
    pub path: String,
    /// The 1-based line number in the new content.
    pub line: u32,
    /// What was found.
    pub kind: SecretKind,
}

// Boundaries: the regex crate has no look-around, so a pattern consumes the
// character before (or the start) and the character after (or the end).
const PATTERNS: &[(SecretKind, &str)] = &[
    (
        SecretKind::OpensshPrivateKey,
        r"-----BEGIN OPENSSH PRIVATE KEY-----",
    ),
    (
        SecretKind::PrivateKey,
        r"-----BEGIN (?:(?:RSA|DSA|EC|ENCRYPTED|PGP) )?PRIVATE KEY(?: BLOCK)?-----",
    ),
    (
        SecretKind::AwsAccessKeyId,
        r"(?:^|[^A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?:[^A-Za-z0-9]|$)",
    ),
    (
        SecretKind::GithubToken,
        r"(?:^|[^A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})(?:[^A-Za-z0-9_]|$)",
    ),
    (
        SecretKind::SlackToken,
        r"(?:^|[^A-Za-z0-9_-])xox[abprs]-[A-Za-z0-9]+-[A-Za-z0-9-]{8,}",
    ),
    (
        SecretKind::GoogleApiKey,
        r"(?:^|[^A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?:[^A-Za-z0-9_-]|$)",
    ),
    (
        SecretKind::StripeLiveKey,
        r"(?:^|[^A-Za-z0-9_])sk_live_[A-Za-z0-9]{24,}(?:[^A-Za-z0-9_]|$)",
    ),
];

struct Scanner {
    /// A cheap first pass: one search for the fixed prefixes the patterns
    /// start with (the regex engine runs it as a vectorized literal search).
    prefixes: Regex,
    patterns: Vec<(SecretKind, Regex)>,
}

/// The literal each pattern starts with.
const PREFIXES: &[&str] = &[
    "-----BEGIN ",
    "AKIA",
    "ASIA",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "xox",
    "AIza",
    "sk_live_",
];

static SCANNER: LazyLock<Scanner> = LazyLock::new(|| Scanner {
    prefixes: Regex::new(
        &PREFIXES
            .iter()
            .map(|p| regex::escape(p))
            .collect::<Vec<_>>()
            .join("|"),
    )
    .expect("the prefixes are literals"),
    patterns: PATTERNS
        .iter()
        .map(|(kind, p)| (*kind, Regex::new(p).expect("the secret patterns are valid")))
        .collect(),
});

/// The first secret in `text`, an added line `line_no` of `path`, if any.
pub fn scan_secrets(path: &str, line_no: u32, text: &str) -> Option<SecretFinding> {
    let scanner = &*SCANNER;
    if !scanner.prefixes.is_match(text) {
        return None;
    }
    scanner
        .patterns
        .iter()
        .find(|(_, re)| re.is_match(text))
        .map(|(kind, _)| SecretFinding {
            path: path.to_owned(),
            line: line_no,
            kind: *kind,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> Option<SecretKind> {
        scan_secrets("f", 1, text).map(|f| f.kind)
    }

    #[test]
    fn pem_private_keys() {
        assert_eq!(
            kind("-----BEGIN RSA PRIVATE KEY-----"),
            Some(SecretKind::PrivateKey)
        );
        assert_eq!(
            kind("  \"-----BEGIN PRIVATE KEY-----\\n\""),
            Some(SecretKind::PrivateKey)
        );
        assert_eq!(
            kind("-----BEGIN EC PRIVATE KEY-----"),
            Some(SecretKind::PrivateKey)
        );
        assert_eq!(
            kind("-----BEGIN PGP PRIVATE KEY BLOCK-----"),
            Some(SecretKind::PrivateKey)
        );
        // Near misses: a public key, a certificate, a prose mention.
        assert_eq!(kind("-----BEGIN PUBLIC KEY-----"), None);
        assert_eq!(kind("-----BEGIN CERTIFICATE-----"), None);
        assert_eq!(kind("-----BEGIN RSA PRIVATE KEY"), None);
        assert_eq!(kind("// starts with BEGIN PRIVATE KEY"), None);
    }

    #[test]
    fn openssh_private_keys() {
        assert_eq!(
            kind("-----BEGIN OPENSSH PRIVATE KEY-----"),
            Some(SecretKind::OpensshPrivateKey)
        );
        assert_eq!(kind("-----BEGIN OPENSSH PUBLIC KEY-----"), None);
        assert_eq!(
            kind("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI user@host"),
            None
        );
    }

    #[test]
    fn aws_access_key_ids() {
        assert_eq!(
            kind("aws_access_key_id = AKIAIOSFODNN7EXAMPLE"),
            Some(SecretKind::AwsAccessKeyId)
        );
        assert_eq!(
            kind("\"ASIAY34FZKBOKMUTVV7A\""),
            Some(SecretKind::AwsAccessKeyId)
        );
        // 15 characters after the prefix; lowercase; inside a longer word.
        assert_eq!(kind("AKIAIOSFODNN7EXAMPL"), None);
        assert_eq!(kind("AKIAiosfodnn7example"), None);
        assert_eq!(kind("XAKIAIOSFODNN7EXAMPLE"), None);
        assert_eq!(kind("AKIAIOSFODNN7EXAMPLEX"), None);
    }

    #[test]
    fn github_tokens() {
        let classic = format!("ghp_{}", "a1B2c3D4e5".repeat(3) + "F6g7H8");
        assert_eq!(classic.len(), 40);
        assert_eq!(
            kind(&format!("token: {classic}")),
            Some(SecretKind::GithubToken)
        );
        for p in ["gho_", "ghu_", "ghs_", "ghr_"] {
            assert_eq!(
                kind(&format!("{p}{}", &classic[4..])),
                Some(SecretKind::GithubToken),
                "{p}"
            );
        }
        let pat = format!("github_pat_{}_{}", "A".repeat(22), "b".repeat(59));
        assert_eq!(kind(&pat), Some(SecretKind::GithubToken));
        // Near misses: one character short, an unknown prefix, a short pat.
        assert_eq!(kind(&classic[..39]), None);
        assert_eq!(kind(&format!("ghx_{}", &classic[4..])), None);
        assert_eq!(
            kind(&format!("github_pat_{}_{}", "A".repeat(22), "b".repeat(58))),
            None
        );
    }

    #[test]
    fn slack_tokens() {
        assert_eq!(
            kind("SLACK=xoxb-123456789012-abcdefghijkl"),
            Some(SecretKind::SlackToken)
        );
        assert_eq!(
            kind("xoxp-1234-5678-abcdefgh"),
            Some(SecretKind::SlackToken)
        );
        // Near misses: an unknown letter; a prefix with no token body.
        assert_eq!(kind("xoxz-123456789012-abcdefghijkl"), None);
        assert_eq!(kind("the xoxb- prefix marks bot tokens"), None);
    }

    #[test]
    fn google_api_keys() {
        let key = format!("AIza{}", "Sy0_-AbCdE".repeat(3) + "fGhIj");
        assert_eq!(key.len(), 39);
        assert_eq!(
            kind(&format!("key={key}&q=1")),
            Some(SecretKind::GoogleApiKey)
        );
        // 34 characters after the prefix, or 36.
        assert_eq!(kind(&key[..38]), None);
        assert_eq!(kind(&format!("{key}x")), None);
    }

    #[test]
    fn stripe_live_keys() {
        assert_eq!(
            kind("STRIPE_KEY=sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
            Some(SecretKind::StripeLiveKey)
        );
        // Test keys are not secrets; a live key too short is not a key.
        assert_eq!(kind("sk_test_4eC39HqLyjWDarjtT1zdp7dc"), None);
        assert_eq!(kind("sk_live_4eC39HqLy"), None);
    }

    #[test]
    fn a_finding_names_place_and_kind_only() {
        let f = scan_secrets("keys/id_rsa", 7, "-----BEGIN RSA PRIVATE KEY-----")
            .expect("a private key is found");
        assert_eq!(
            f,
            SecretFinding {
                path: "keys/id_rsa".into(),
                line: 7,
                kind: SecretKind::PrivateKey,
            }
        );
        assert_eq!(
            serde_json::to_value(&f).expect("serializes"),
            serde_json::json!({"path": "keys/id_rsa", "line": 7, "kind": "private_key"})
        );
        assert_eq!(scan_secrets("a.rs", 1, "fn main() {}"), None);
    }
}
