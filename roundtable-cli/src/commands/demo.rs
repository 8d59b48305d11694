//! `roundtable demo`: one governed change, end to end, in a fresh temporary
//! git repository with the embedded store.
//!
//! The host registers an author, two reviewers (one with the `security`
//! role) and a task; the author claims one function (a symbol) and proposes
//! a critical change; validation fails (a hunk lies outside the claimed
//! function, no approvals yet) and the author repairs it with a second
//! revision; the reviewers approve, the security reviewer passes it, a human
//! approves; validation passes; the host applies it as one transaction,
//! shows it, and rolls it back to the exact original bytes; the audit
//! chain verifies. Every step's result is checked: the demo fails if any is
//! not what it should be.

use roundtable::apply::Transaction;
use roundtable::model::{Landing, LandingMode};
use roundtable::operations::claims::Claim;
use roundtable::operations::details::{InvalidArgumentDetails, IoDetails};
use roundtable::operations::records::Revision;
use roundtable::operations::transactions::Phase;
use roundtable::operations::validate::StageStatus;
use roundtable::policy::RoleNeed;
use roundtable::session::Session;
use roundtable::session::{
    AcquireClaim, ApplyRevision, Approve, AttachPatch, CastVote, ConfigureWorkspace,
    CreateProposal, CreateTask, GetTransaction, LandedCommit, LandingLog, ListInbox, ListPhases,
    ProposalStatus, RecordSecurityReview, RegisterAgent, RequestReview, RevertProposal, Risk,
    Rollback, TransactionDetail, Validate, ValidationReport, Verdict, VoteValue,
};
use roundtable::{Actor, Engine, EngineOptions, ErrorCode, Id, Resource, ToolError};
use serde::Serialize;
use serde_json::Value;
use std::fs;
use std::path::Path;

const LIB_RS: &str = "\
pub fn greet(name: &str) -> String {
    format!(\"Hello, {name}\")
}

pub fn shout(name: &str) -> String {
    greet(name).to_uppercase()
}
";

/// The author's first revision: it changes `greet` (which it claimed) but
/// also appends a function outside it.
const FIRST_PATCH: &str = "\
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,7 +1,11 @@
 pub fn greet(name: &str) -> String {
-    format!(\"Hello, {name}\")
+    format!(\"Hello, {name}!\")
 }
 
 pub fn shout(name: &str) -> String {
     greet(name).to_uppercase()
 }
+
+pub fn farewell(name: &str) -> String {
+    format!(\"Goodbye, {name}\")
+}
";

/// What `--serve` leaves for a person to review: a second function.
const WAITING_PATCH: &str = "\
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -5,3 +5,7 @@
 pub fn shout(name: &str) -> String {
     greet(name).to_uppercase()
 }
+
+pub fn farewell(name: &str) -> String {
+    format!(\"Goodbye, {name}\")
+}
";

/// The repair: only the claimed function changes.
const SECOND_PATCH: &str = "\
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,3 +1,3 @@
 pub fn greet(name: &str) -> String {
-    format!(\"Hello, {name}\")
+    format!(\"Hello, {name}!\")
 }
";

fn fail(what: impl Into<String>) -> ToolError {
    let what = what.into();
    ToolError::new(
        format!("demo check failed: {what}"),
        IoDetails {
            step: Some(what.to_string()),
            ..IoDetails::default()
        },
    )
}

fn verify(ok: bool, what: &str) -> Result<(), ToolError> {
    if ok {
        Ok(())
    } else {
        Err(fail(what))
    }
}

fn io(e: std::io::Error) -> ToolError {
    ToolError::new(e.to_string(), IoDetails::default())
}

fn id(s: &str) -> Result<Id, ToolError> {
    Id::new(s).map_err(|e| ToolError::new(e.to_string(), InvalidArgumentDetails::default()))
}

fn resource(spelled: &str) -> Result<Resource, ToolError> {
    spelled.parse().map_err(|e: roundtable::ResourceError| {
        ToolError::new(e.to_string(), InvalidArgumentDetails::default())
    })
}

/// Whether the report's stage `name` has `status`.
fn stage_is(report: &ValidationReport, name: &str, status: StageStatus) -> bool {
    report
        .stages
        .iter()
        .any(|s| s.name == name && s.status == status)
}

/// Strings as a JSON array (`["bob","sam"]`), the way the lines show lists.
fn list(items: &[String]) -> String {
    Value::from(items.to_vec()).to_string()
}

/// A readable one-line summary of a validation report.
fn report_line(report: &ValidationReport) -> String {
    if report.valid {
        return "valid: every gate passes".into();
    }
    let failed: Vec<String> = report
        .stages
        .iter()
        .filter(|s| s.status == StageStatus::Failed)
        .map(|s| {
            // A stage's reasons are JSON objects (so typed in core), each
            // with a `message`.
            let first = s
                .reasons
                .iter()
                .find_map(|r| r.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("");
            format!("{} ({first})", s.name)
        })
        .collect();
    format!("not valid — {}", failed.join("; "))
}

/// What a step records in the demo's result, beside its name.
#[derive(Serialize)]
#[serde(untagged)]
enum StepData {
    Register {
        agents: [&'static str; 3],
        human: &'static str,
    },
    Claim {
        claim: Claim,
    },
    Propose {
        proposal: String,
        revision: Revision,
    },
    Report {
        report: ValidationReport,
    },
    Revise {
        revision: Revision,
        report: ValidationReport,
    },
    Review {
        review_plan: Vec<RoleNeed>,
    },
    Transaction {
        transaction: Transaction,
    },
    Show {
        transaction: TransactionDetail,
        phases: Vec<Phase>,
    },
    Audit {
        events: u64,
        head_digest: String,
    },
    Log {
        commits: Vec<LandedCommit>,
    },
    Waiting {
        proposal: String,
        waits_on: &'static str,
    },
}

/// One step of the demo's result: its name and what it recorded.
#[derive(Serialize)]
struct Step {
    step: &'static str,
    #[serde(flatten)]
    data: StepData,
}

/// The demo's result (`roundtable demo --json`).
#[derive(Serialize)]
struct Demo {
    ok: bool,
    /// Where the repository is kept (`--keep`), else `null`.
    root: Option<String>,
    /// Whether it is a git repository.
    git: bool,
    /// Whether changes landed as git commits (`--git`).
    landing_git: bool,
    steps: Vec<Step>,
}

/// Set up a git repository with one commit, if git is installed.
fn git_init(root: &Path) -> bool {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    git(&["init", "-q"])
        && fs::write(root.join(".git/info/exclude"), ".roundtable/\n").is_ok()
        && git(&["add", "-A"])
        && git(&[
            "-c",
            "user.name=roundtable demo",
            "-c",
            "user.email=demo@example.invalid",
            "commit",
            "-qm",
            "initial",
        ])
}

/// `roundtable demo`: the readable steps as they happen and a last line,
/// or (`json`) one JSON document with every step's data.
pub(crate) fn command(keep: bool, json: bool, git: bool) -> Result<String, ToolError> {
    if json {
        return crate::cli_util::to_json_sorted(&run(keep, git, false, &mut |_| {})?);
    }
    let result = run(keep, git, false, &mut |line| crate::cli_util::print(line))?;
    Ok(match result.root {
        Some(root) => format!("ok: every step checked; the repository is kept at {root}"),
        None => "ok: every step checked".to_owned(),
    })
}

/// `roundtable demo --serve ADDR`: the demo, then one more change left
/// waiting for carol, and the review console on the kept repository
/// (`roundtable serve`) with a fresh tokens file beside its store; returns
/// only on an error.
pub(crate) fn serve(git: bool, listen: std::net::SocketAddr) -> Result<(), ToolError> {
    let result = run(true, git, true, &mut |line| crate::cli_util::print(line))?;
    let root = result
        .root
        .ok_or_else(|| fail("the repository is kept for the console"))?;
    let root = std::path::PathBuf::from(root);
    let (carol, host) = (mint()?, mint()?);
    let tokens = root.join(".roundtable/console-tokens");
    write_private(
        &tokens,
        &format!("# roundtable demo --serve\n{carol} human:carol\n{host} orchestrator:host\n"),
    )?;
    crate::cli_util::print(&format!(
        "console: sign in as human:carol with {carol} (the orchestrator's token, for the API: {host}); tokens in {}",
        tokens.display()
    ));
    super::serve::serve_one(listen, tokens, "demo", root)
}

/// A fresh bearer token.
fn mint() -> Result<String, ToolError> {
    roundtable_serve::mint_token().map_err(io)
}

/// Write `text` to `path`, readable by its owner only (it holds tokens).
fn write_private(path: &Path, text: &str) -> Result<(), ToolError> {
    use std::io::Write as _;
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)
}

/// Run the demo (`land_commits`: in git landing mode, the change and its
/// revert each land as a commit; `leave_waiting`: one more change is left
/// waiting on carol at the end); `say` receives each readable line as it
/// happens.
fn run(
    keep: bool,
    land_commits: bool,
    leave_waiting: bool,
    say: &mut dyn FnMut(&str),
) -> Result<Demo, ToolError> {
    let dir = tempfile::Builder::new()
        .prefix("roundtable-demo-")
        .tempdir()
        .map_err(io)?;
    let root = dir.path();
    fs::create_dir(root.join("src")).map_err(io)?;
    fs::write(root.join("src/lib.rs"), LIB_RS).map_err(io)?;
    fs::write(root.join("README.md"), "demo project\n").map_err(io)?;
    let git = git_init(root);
    say(&format!(
        "roundtable demo: one governed change in {} ({})",
        root.display(),
        if git {
            "a fresh git repository"
        } else {
            "git is not installed: a plain directory"
        }
    ));
    let mut rec = Recorder {
        steps: Vec::new(),
        say,
    };

    let engine = Engine::open(root, EngineOptions::default())?;
    let cast = register(&engine, root, git, land_commits, &mut rec)?;
    claim(&cast, &mut rec)?;
    let pid = propose_and_revise(&cast, &mut rec)?;
    review_and_approve(&cast, &pid, &mut rec)?;
    let tid = apply_and_show(&cast, root, &pid, &mut rec)?;
    if land_commits {
        revert_and_log(&cast, root, &pid, &mut rec)?;
    } else {
        roll_back(&cast, root, &tid, &mut rec)?;
    }
    audit(&cast, &mut rec)?;
    if leave_waiting {
        wait_on_carol(&cast, &mut rec)?;
    }

    drop(cast);
    drop(engine);
    let location = if keep {
        Some(dir.keep().display().to_string())
    } else {
        None
    };
    Ok(Demo {
        ok: true,
        root: location,
        git,
        landing_git: land_commits,
        steps: rec.steps,
    })
}

/// The demo's steps so far; each is said as it is recorded.
struct Recorder<'s> {
    steps: Vec<Step>,
    say: &'s mut dyn FnMut(&str),
}

impl Recorder<'_> {
    /// Record step `name`, saying `line`, numbered.
    fn step(&mut self, name: &'static str, line: String, data: StepData) {
        (self.say)(&format!("{:>2}. {name:<9} {line}", self.steps.len() + 1));
        self.steps.push(Step { step: name, data });
    }
}

/// The demo's actors: the host (an orchestrator), the author alice, the
/// reviewers bob and sam (security), and carol, a human.
struct Cast<'e> {
    host: Session<'e>,
    alice: Session<'e>,
    bob: Session<'e>,
    sam: Session<'e>,
    carol: Session<'e>,
}

/// The host registers the agents and the task (and, for `land_commits`,
/// configures git landing on the repository's branch).
fn register<'e>(
    engine: &'e Engine,
    root: &Path,
    git: bool,
    land_commits: bool,
    rec: &mut Recorder<'_>,
) -> Result<Cast<'e>, ToolError> {
    let cast = Cast {
        host: engine.session(Actor::orchestrator(id("host")?)),
        alice: engine.session(Actor::agent(id("alice")?)),
        bob: engine.session(Actor::agent(id("bob")?)),
        sam: engine.session(Actor::agent(id("sam")?)),
        carol: engine.session(Actor::human(id("carol")?)),
    };
    let host = &cast.host;
    host.setup()
        .register_agent(RegisterAgent::new("alice").roles(["author"]))?;
    host.setup()
        .register_agent(RegisterAgent::new("bob").roles(["reviewer"]))?;
    host.setup()
        .register_agent(RegisterAgent::new("sam").roles(["reviewer", "security"]))?;
    host.setup().create_task(CreateTask::new(
        "excited-greeting",
        "Greet with more enthusiasm",
    ))?;
    if land_commits {
        verify(git, "--git needs git to make the repository")?;
        host.setup()
            .configure_workspace(ConfigureWorkspace::new(Landing {
                mode: LandingMode::Git,
                branch: Some(branch_of(root)?),
                remote: None,
            }))?;
    }
    rec.step(
        "register",
        "author alice; reviewers bob and sam (security); human carol approves; task excited-greeting".into(),
        StepData::Register {
            agents: ["alice", "bob", "sam"],
            human: "carol",
        },
    );
    Ok(cast)
}

/// A symbol claim: alice may change `greet`, nothing else; bob's
/// overlapping claim on the whole file is refused.
fn claim(cast: &Cast<'_>, rec: &mut Recorder<'_>) -> Result<(), ToolError> {
    let claim = cast
        .alice
        .claims()
        .acquire(
            AcquireClaim::write(resource("symbol:src/lib.rs#greet")?, 900)
                .task_id("excited-greeting"),
        )?
        .claim;
    let clash = cast
        .bob
        .claims()
        .acquire(AcquireClaim::write(resource("file:src/lib.rs")?, 900))
        .err()
        .map(|e| e.code());
    verify(
        clash == Some(ErrorCode::Conflict),
        "an overlapping write claim is refused",
    )?;
    let span = claim
        .span
        .ok_or_else(|| fail("a symbol claim has a line span"))?;
    rec.step(
        "claim",
        format!(
            "alice holds symbol:src/lib.rs#greet (lines {}-{}), fencing token {}; bob's claim on the whole file is refused (conflict)",
            span.start, span.end, claim.token
        ),
        StepData::Claim { claim },
    );
    Ok(())
}

/// alice proposes revision 1, which validation finds not covered by her
/// claim, then revision 2, which is; the proposal's id.
fn propose_and_revise(cast: &Cast<'_>, rec: &mut Recorder<'_>) -> Result<String, ToolError> {
    let (host, alice) = (&cast.host, &cast.alice);
    let created = alice.proposals().create(
        CreateProposal::patch(
            "excited-greeting",
            "Greet with an exclamation mark",
            "`greet` ends with `!`.",
            FIRST_PATCH,
        )
        .risk(Risk::Critical)
        .resources(["symbol:src/lib.rs#greet"]),
    )?;
    let pid = created.proposal.id;
    rec.step(
        "propose",
        format!("{pid} revision 1 (risk critical): modifies src/lib.rs"),
        StepData::Propose {
            proposal: pid.clone(),
            revision: created.revision,
        },
    );

    let first = host.validation().validate(Validate::new(&pid))?;
    verify(
        !first.valid && stage_is(&first, "coverage", StageStatus::Failed),
        "revision 1 is not covered by the claim",
    )?;
    rec.step(
        "validate",
        report_line(&first),
        StepData::Report { report: first },
    );

    let revised = alice.proposals().attach_patch(
        AttachPatch::patch(&pid, 1, SECOND_PATCH).note_md("Only `greet` changes now."),
    )?;
    verify(revised.revision.number == 2, "revision 2")?;
    let second = host.validation().validate(Validate::new(&pid))?;
    verify(
        stage_is(&second, "coverage", StageStatus::Passed),
        "revision 2 is covered",
    )?;
    rec.step(
        "revise",
        format!("revision 2 changes only greet; {}", report_line(&second)),
        StepData::Revise {
            revision: revised.revision,
            report: second,
        },
    );
    Ok(pid)
}

/// alice asks for review (the plan names who may satisfy each
/// requirement); she may not vote herself; bob and sam approve, sam passes
/// the security review, carol approves; validation passes.
fn review_and_approve(cast: &Cast<'_>, pid: &str, rec: &mut Recorder<'_>) -> Result<(), ToolError> {
    let Cast {
        host,
        alice,
        bob,
        sam,
        carol,
    } = cast;
    let requested = alice.proposals().request_review(RequestReview::new(pid))?;
    let plan: Vec<String> = requested
        .review_plan
        .iter()
        .map(|n| format!("{} ← {}", n.requirement, list(&n.candidates)))
        .collect();
    rec.step(
        "review",
        format!("review plan: {}", plan.join("; ")),
        StepData::Review {
            review_plan: requested.review_plan,
        },
    );

    let own = alice
        .evidence()
        .vote(CastVote::approve(pid, 2))
        .err()
        .map(|e| e.code());
    verify(own == Some(ErrorCode::Forbidden), "the author cannot vote")?;
    bob.evidence()
        .vote(CastVote::approve(pid, 2).reason("Reads well."))?;
    sam.evidence().vote(
        CastVote::new(pid, 2, VoteValue::ApproveWithNotes)
            .reason("Fine; no input reaches the format string."),
    )?;
    sam.evidence().security_review(
        RecordSecurityReview::new(pid, 2, Verdict::Pass).note_md("No security impact."),
    )?;
    carol
        .evidence()
        .approve(Approve::new(pid, 2).note_md("Ship it."))?;
    let ready = host.validation().validate(Validate::new(pid))?;
    verify(ready.valid, "valid once approved")?;
    rec.step(
        "approve",
        format!("bob and sam approve revision 2, sam passes the security review, carol approves as a human; {}", report_line(&ready)),
        StepData::Report { report: ready },
    );
    Ok(())
}

/// The host applies revision 2 as one transaction and shows it (its file
/// and phases); the transaction's id.
fn apply_and_show(
    cast: &Cast<'_>,
    root: &Path,
    pid: &str,
    rec: &mut Recorder<'_>,
) -> Result<String, ToolError> {
    let host = &cast.host;
    let applied = host.transactions().apply(ApplyRevision::new(pid, 2))?;
    let tid = applied.transaction.id.clone();
    let after = fs::read_to_string(root.join("src/lib.rs")).map_err(io)?;
    verify(
        after.contains("Hello, {name}!") && applied.proposal.status == ProposalStatus::Applied,
        "the change landed",
    )?;
    rec.step(
        "apply",
        format!(
            "transaction {tid}: {} ({} file), proposal applied, claims released: {}",
            applied.transaction.status.as_str(),
            applied.transaction.file_count,
            list(&applied.released_claims)
        ),
        StepData::Transaction {
            transaction: applied.transaction,
        },
    );

    let shown = host.transactions().get(GetTransaction::new(&tid))?;
    let phases = host.transactions().phases(ListPhases::new(&tid))?.phases;
    let names: Vec<&str> = phases.iter().map(|p| p.phase.as_str()).collect();
    let file = shown
        .files
        .first()
        .ok_or_else(|| fail("the transaction journals src/lib.rs"))?;
    let line = format!(
        "{}: {} {} → {}; phases {}",
        file.path,
        file.operation,
        spell(file.before_digest.as_ref()),
        spell(file.after_digest.as_ref()),
        names.join(" → ")
    );
    rec.step(
        "show",
        line,
        StepData::Show {
            transaction: shown,
            phases,
        },
    );
    Ok(tid)
}

/// In git landing mode: the revert is a proposal of its own, governed like
/// any other, and lands as a second commit; the branch's log shows both.
fn revert_and_log(
    cast: &Cast<'_>,
    root: &Path,
    pid: &str,
    rec: &mut Recorder<'_>,
) -> Result<(), ToolError> {
    let Cast {
        host,
        alice,
        bob,
        sam,
        carol,
    } = cast;
    alice.claims().acquire(AcquireClaim::write(
        resource("symbol:src/lib.rs#greet")?,
        900,
    ))?;
    let revert = alice.proposals().revert(RevertProposal::new(pid))?;
    let rid = revert.proposal.id;
    alice.proposals().request_review(RequestReview::new(&rid))?;
    bob.evidence()
        .vote(CastVote::approve(&rid, 1).reason("Back to the old greeting."))?;
    sam.evidence().security_review(
        RecordSecurityReview::new(&rid, 1, Verdict::Pass).note_md("No security impact."),
    )?;
    carol
        .evidence()
        .approve(Approve::new(&rid, 1).note_md("Revert it."))?;
    let reverted = host.transactions().apply(ApplyRevision::new(&rid, 1))?;
    let restored = fs::read_to_string(root.join("src/lib.rs")).map_err(io)?;
    verify(restored == LIB_RS, "the revert restored the original bytes")?;
    rec.step(
        "revert",
        format!(
            "{rid} reverts {pid}: approved, landed as transaction {}",
            reverted.transaction.id
        ),
        StepData::Transaction {
            transaction: reverted.transaction,
        },
    );
    let commits = host
        .transactions()
        .landed(LandingLog::new().limit(10))?
        .commits;
    verify(
        commits.len() == 2,
        "two commits landed: the change and its revert",
    )?;
    let lines: Vec<String> = commits
        .iter()
        .map(|c| {
            let proposal = c
                .trailers
                .iter()
                .find(|(k, _)| k == "Roundtable-Proposal")
                .map_or("", |(_, v)| v.as_str());
            format!(
                "{} {} ({proposal}, {} trailers)",
                &c.id[..12],
                c.summary,
                c.trailers.len()
            )
        })
        .collect();
    rec.step("log", lines.join("; "), StepData::Log { commits });
    Ok(())
}

/// In working-tree mode: the host rolls transaction `tid` back to the
/// original bytes.
fn roll_back(
    cast: &Cast<'_>,
    root: &Path,
    tid: &str,
    rec: &mut Recorder<'_>,
) -> Result<(), ToolError> {
    let rolled = cast.host.transactions().rollback(Rollback::new(tid))?;
    let restored = fs::read_to_string(root.join("src/lib.rs")).map_err(io)?;
    verify(
        restored == LIB_RS,
        "the rollback restored the original bytes",
    )?;
    rec.step(
        "rollback",
        format!(
            "transaction {} restored src/lib.rs byte for byte; {tid} is rolled_back",
            rolled.transaction.id
        ),
        StepData::Transaction {
            transaction: rolled.transaction,
        },
    );
    Ok(())
}

/// The audit log's hash chain verifies.
fn audit(cast: &Cast<'_>, rec: &mut Recorder<'_>) -> Result<(), ToolError> {
    let chain = cast.host.events().verify()?;
    verify(chain.valid, "the audit log verifies")?;
    rec.step(
        "audit",
        format!(
            "{} events, hash chain valid, head {}",
            chain.checked, chain.head_digest
        ),
        StepData::Audit {
            events: chain.checked,
            head_digest: chain.head_digest,
        },
    );
    Ok(())
}

/// alice proposes `farewell` (critical); bob and sam approve, sam passes
/// the security review: it waits on carol's human approval, in her inbox.
fn wait_on_carol(cast: &Cast<'_>, rec: &mut Recorder<'_>) -> Result<(), ToolError> {
    let Cast {
        host,
        alice,
        bob,
        sam,
        carol,
    } = cast;
    host.setup()
        .create_task(CreateTask::new("say-goodbye", "Say goodbye too"))?;
    alice.claims().acquire(
        AcquireClaim::write(resource("file:src/lib.rs")?, 86_400).task_id("say-goodbye"),
    )?;
    let pid = alice
        .proposals()
        .create(
            CreateProposal::patch(
                "say-goodbye",
                "Add farewell",
                "`farewell` says goodbye the way `greet` says hello.",
                WAITING_PATCH,
            )
            .risk(Risk::Critical)
            .resources(["file:src/lib.rs"]),
        )?
        .proposal
        .id;
    alice.proposals().request_review(RequestReview::new(&pid))?;
    bob.evidence()
        .vote(CastVote::approve(&pid, 1).reason("Same shape as greet."))?;
    sam.evidence()
        .vote(CastVote::approve(&pid, 1).reason("No input reaches anything but format!."))?;
    sam.evidence().security_review(
        RecordSecurityReview::new(&pid, 1, Verdict::Pass).note_md("No security impact."),
    )?;
    let inbox = carol.proposals().inbox(ListInbox::all())?;
    verify(
        inbox.items.iter().any(|i| i.proposal.id == pid),
        "the change waits in carol's inbox",
    )?;
    rec.step(
        "waiting",
        format!("{pid} (farewell) is approved and security-reviewed; it waits on carol's human approval"),
        StepData::Waiting {
            proposal: pid,
            waits_on: "human:carol",
        },
    );
    Ok(())
}

/// The branch the fresh repository's HEAD is on (git's default, which
/// `init.defaultBranch` may change).
fn branch_of(root: &Path) -> Result<String, ToolError> {
    let head = fs::read_to_string(root.join(".git/HEAD")).map_err(io)?;
    head.trim()
        .strip_prefix("ref: refs/heads/")
        .map(str::to_owned)
        .ok_or_else(|| fail("the fresh repository's HEAD names a branch"))
}

/// A journaled digest, or `absent`.
fn spell(digest: Option<&roundtable::Digest>) -> String {
    digest.map_or_else(|| "absent".to_owned(), ToString::to_string)
}
