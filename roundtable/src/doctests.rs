//! The Rust snippets of README.md and of the book (`docs/src/`), compiled
//! and run as doctests by `cargo test -p roundtable --doc`, so a
//! snippet that no longer builds or whose assertions fail breaks the
//! build. One item per markdown file that holds a ```` ```rust ```` block;
//! `scripts/check-links` fails when such a file is missing here.

#[doc = include_str!("../../README.md")]
pub struct Readme;

#[doc = include_str!("../../docs/src/guides/rust.md")]
pub struct GuideRust;

#[doc = include_str!("../../docs/src/guides/landing-queue.md")]
pub struct GuideLandingQueue;
