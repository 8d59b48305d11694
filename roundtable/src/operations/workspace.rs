//! `workspace.configure` and `workspace.get`: the workspace's landing
//! setting, stored in the store so every process and front end sees the
//! same one.

use super::{Cx, Tool, ToolError};
use crate::actor::{Actor, ActorKind};
use crate::engine::Engine;
use crate::id::Id;
use crate::model::{Landing, LandingMode};
use crate::store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `workspace.configure`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "WorkspaceConfigureArgs")]
pub struct ConfigureWorkspace {
    /// How `patch.apply` lands: `{"mode": "files"}` (the default: the
    /// working tree only) or `{"mode": "git", "branch": "main", "remote":
    /// null}` (one commit per applied revision on the branch the
    /// repository's HEAD is on; with a remote, pushed to it with a lease).
    pub landing: Landing,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// Arguments of `workspace.get`.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "WorkspaceGetArgs")]
pub struct GetWorkspace {}

/// Result of `workspace.configure` and `workspace.get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceSettings {
    /// How `patch.apply` lands.
    pub landing: Landing,
}

impl super::Request for ConfigureWorkspace {
    const TOOL: &'static str = "workspace.configure";
    const DESCRIPTION: &'static str = "Set how patch.apply lands (orchestrator only): mode files (the working tree, the default) or git (one commit per applied revision on branch, which the repository's HEAD must be on, moved by compare-and-swap; the working tree and index follow, and a bare repository has neither). remote (git mode, optional): a configured remote or a path naming a bare repository on this machine; each landing is fetched onto its branch and pushed with a lease (its branch must still be where this one was), and the push is the commit point.";
    const MUTATES: bool = true;
    const IDEMPOTENT: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Orchestrator];
    type Output = WorkspaceSettings;

    store_tool!();
}

/// Why the repository at the root cannot land in git mode on `branch`
/// (pushing to `remote`), or `None` when it can.
#[cfg(feature = "git")]
fn git_refusal(
    root: &std::path::Path,
    branch: Option<&str>,
    remote: Option<&str>,
) -> Option<ToolError> {
    let Some(branch) = branch else {
        return Some(ToolError::invalid_argument(
            "landing.branch",
            "mode git needs the branch to land on",
        ));
    };
    let invalid = |reason: String| Some(ToolError::invalid_argument("landing", reason));
    let name = format!("refs/heads/{branch}");
    if !git2::Reference::is_valid_name(&name) {
        return invalid(format!("{branch:?} is not a branch name"));
    }
    let repo = match git2::Repository::open(root) {
        Ok(repo) => repo,
        Err(e) => return invalid(format!("the workspace is not a git repository: {e}")),
    };
    let at = repo.workdir().unwrap_or_else(|| repo.path());
    if at.canonicalize().ok() != root.canonicalize().ok() {
        return invalid(
            "the workspace root is not the repository's working tree (or, bare, its git directory)"
                .into(),
        );
    }
    if repo.refname_to_id(&name).is_err() {
        return invalid(format!("there is no branch {branch}"));
    }
    let head = repo.find_reference("HEAD").ok();
    let on = head
        .as_ref()
        .and_then(|h| h.symbolic_target().ok().flatten());
    if on != Some(name.as_str()) {
        return invalid(format!(
            "the repository's HEAD is on {}, not {name}",
            on.unwrap_or("a detached commit")
        ));
    }
    if let Some(remote) = remote {
        let opened = crate::landing::open_remote(&repo, remote);
        match opened {
            Err(e) => {
                let field = Some("landing.remote".to_owned());
                return Some(match e.code() {
                    crate::ErrorCode::Io => ToolError::new(
                        e.to_string(),
                        super::details::IoDetails {
                            field,
                            ..super::details::IoDetails::default()
                        },
                    ),
                    crate::ErrorCode::InvalidArgument => ToolError::new(
                        e.to_string(),
                        super::details::InvalidArgumentDetails {
                            field,
                            ..super::details::InvalidArgumentDetails::default()
                        },
                    ),
                    _ => ToolError::from(e),
                });
            }
            Ok((remote_repo, location)) if remote_repo.refname_to_id(&name).is_err() => {
                return invalid(format!("{location} has no branch {branch}"));
            }
            Ok(_) => {}
        }
    }
    None
}

/// A build without the `git` feature lands in files mode only: mode git
/// is refused, as a `postgres://` store is in a build without `postgres`.
#[cfg(not(feature = "git"))]
fn git_refusal(
    _root: &std::path::Path,
    _branch: Option<&str>,
    _remote: Option<&str>,
) -> Option<ToolError> {
    Some(ToolError::invalid_argument(
        "landing.mode",
        format!(
            "{}: mode git cannot be used (mode files can)",
            crate::landing::NO_GIT
        ),
    ))
}

/// A build without the `git` feature cannot serve a workspace whose
/// stored landing mode is git: [`crate::Engine::open`] refuses it
/// (`invalid_argument`, field `landing.mode`) before recovery or any call,
/// rather than land its changes as files. The store is read, not written.
#[cfg(not(feature = "git"))]
pub(crate) fn refuse_git_mode(store: &store::Store) -> Result<(), ToolError> {
    let landing = store.read(|tx| Ok::<_, ToolError>(store::settings::landing(tx)?))?;
    if landing.mode != LandingMode::Git {
        return Ok(());
    }
    Err(ToolError::invalid_argument(
        "landing.mode",
        format!(
            "{}: this workspace lands in git mode (on {}); open it with a build that has git, \
             or set mode files there",
            crate::landing::NO_GIT,
            landing.branch.as_deref().unwrap_or("no branch")
        ),
    ))
}

impl Tool for ConfigureWorkspace {
    type Prep = ();

    keyed!();

    fn prepare(engine: &Engine, _: &Actor, args: &ConfigureWorkspace) -> Result<(), ToolError> {
        let l = &args.landing;
        match (l.mode, &l.branch) {
            (LandingMode::Files, _) if l.remote.is_some() => Err(ToolError::invalid_argument(
                "landing.remote",
                "is only for mode git",
            )),
            (LandingMode::Files, None) if engine.workspace().is_bare() => {
                Err(ToolError::invalid_argument(
                    "landing.mode",
                    "the workspace is a bare repository: it has no working tree to land files in, only mode git",
                ))
            }
            (LandingMode::Files, None) => Ok(()),
            (LandingMode::Files, Some(_)) => Err(ToolError::invalid_argument(
                "landing.branch",
                "is only for mode git",
            )),
            (LandingMode::Git, b) => {
                git_refusal(engine.root(), b.as_deref(), l.remote.as_deref()).map_or(Ok(()), Err)
            }
        }
    }

    fn run(cx: &Cx<'_>, args: ConfigureWorkspace, (): ()) -> Result<WorkspaceSettings, ToolError> {
        let before = store::settings::landing(cx.tx)?;
        if before != args.landing {
            store::settings::set_landing(cx.tx, &args.landing, cx.now)?;
            cx.event(
                "landing",
                None,
                crate::model::WorkspaceConfiguredData {
                    landing: args.landing.clone(),
                    was: before,
                },
            )?;
        }
        Ok(WorkspaceSettings {
            landing: args.landing,
        })
    }
}

impl super::Request for GetWorkspace {
    const TOOL: &'static str = "workspace.get";
    const DESCRIPTION: &'static str =
        "The workspace's settings: how patch.apply lands (mode files or git, the branch).";
    const MUTATES: bool = false;
    type Output = WorkspaceSettings;

    store_tool!();
}

impl Tool for GetWorkspace {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, _: GetWorkspace, (): ()) -> Result<WorkspaceSettings, ToolError> {
        Ok(WorkspaceSettings {
            landing: store::settings::landing(cx.tx)?,
        })
    }
}
