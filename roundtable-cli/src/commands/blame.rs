//! `roundtable blame PATH`: who wrote each line of a file at the tip of
//! the landing branch (git landing mode) — one `provenance.blame` call.
//! Readable output is one line per source line, like `git blame`: the
//! short commit, the proposal and the author agent (or, for a line
//! roundtable did not land, `not roundtable` and git's author), the line
//! number and the line; a line roundtable did not land starts with `!`.

use crate::cli_util::{absolute, esc, open, reader, spinner, to_json_sorted, Common};
use clap::Args;
use roundtable::session::{Blame, BlameFile};
use roundtable::ToolError;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub(crate) struct BlameArgs {
    /// The file: relative to the repository root (or an absolute path
    /// inside it).
    path: PathBuf,
    #[command(flatten)]
    common: Common,
}

impl BlameArgs {
    pub(crate) fn common(&self) -> &Common {
        &self.common
    }
}

/// `path` as a repository path: an absolute path inside `root` loses the
/// root; anything else is passed on as given (the tool checks it).
fn repo_path(root: &Path, path: &Path) -> String {
    let relative = if path.is_absolute() {
        let root = absolute(root);
        let path = path
            .parent()
            .map(absolute)
            .and_then(|dir| path.file_name().map(|name| dir.join(name)))
            .unwrap_or_else(|| path.to_path_buf());
        path.strip_prefix(&root).map(Path::to_path_buf).ok()
    } else {
        None
    };
    relative
        .as_deref()
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

pub(crate) fn run(args: BlameArgs) -> Result<String, ToolError> {
    let common = &args.common;
    let engine = open(common)?;
    let host = engine.session(reader()?);
    let path = repo_path(&common.root, &args.path);
    let blame = spinner("provenance.blame", || {
        host.transactions().blame(BlameFile::new(&path))
    })?;
    if common.json {
        return to_json_sorted(&blame);
    }
    Ok(render(&blame))
}

/// The readable form: one line per source line.
fn render(blame: &Blame) -> String {
    let label = |id: &str| -> (String, String) {
        match blame.commits.iter().find(|c| c.id == id) {
            Some(c) => match &c.landing {
                Some(l) => (l.proposal_id.clone(), l.author_agent.clone()),
                None => (
                    "not roundtable".to_owned(),
                    format!("git:{}", author_name(&c.author)),
                ),
            },
            None => ("not roundtable".to_owned(), String::new()),
        }
    };
    let labels: Vec<(String, String)> = blame.ranges.iter().map(|r| label(&r.commit)).collect();
    let width = |f: fn(&(String, String)) -> usize| labels.iter().map(f).max().unwrap_or(0);
    let (wp, wa) = (
        width(|l| esc(&l.0).chars().count()),
        width(|l| esc(&l.1).chars().count()),
    );
    let wn = blame.line_count.to_string().len();
    let mut out = String::new();
    for (range, (proposal, agent)) in blame.ranges.iter().zip(&labels) {
        let mark = if range.governed { ' ' } else { '!' };
        let short = &range.commit[..range.commit.len().min(10)];
        for (n, line) in (range.start_line..).zip(&range.lines) {
            let _ = writeln!(
                out,
                "{mark}{short} {:<wp$} {:<wa$} {n:>wn$}) {}",
                esc(proposal),
                esc(agent),
                esc(line)
            );
        }
    }
    // `print` ends the output with the last line's line feed.
    out.pop();
    out
}

/// The name of `name <email>`.
fn author_name(author: &str) -> &str {
    author.split(" <").next().unwrap_or(author)
}
