//! Issue 36 item 4: `proposal.revert_agent` undoes one agent's landed work
//! since a point in time as one governed proposal, keeping every other
//! agent's lines, and reports (never clobbers) the stretches others edited
//! since.

use super::git_landing::git_world;
use super::landing::git;
use super::tools::{id, str_of, World};
use roundtable::{Actor, Digest, ErrorCode};
use serde_json::{json, Value};
use std::collections::BTreeSet;

const AGENTS: [&str; 5] = ["a", "b", "c", "d", "e"];
const FILES: [&str; 2] = ["f0.txt", "f1.txt"];
const SLOTS: usize = 40;

/// One line of the scripted ground truth: its text and who wrote it.
#[derive(Debug, Clone, PartialEq)]
struct Line {
    text: String,
    owner: String,
    /// The landing that wrote it (`None`: the initial content).
    landing: Option<usize>,
}

/// A slot line, and after it the insertion point between its two spacers.
#[derive(Debug, Clone)]
struct Slot {
    /// Every write of the slot line, oldest first (the first is the base).
    history: Vec<Line>,
    /// The line inserted between the spacers, and its later edits.
    inserted: Vec<Line>,
}

fn initial(f: usize) -> Vec<Slot> {
    (0..SLOTS)
        .map(|i| Slot {
            history: vec![Line {
                text: format!("f{f} s{i} base"),
                owner: "base".into(),
                landing: None,
            }],
            inserted: Vec::new(),
        })
        .collect()
}

/// A file's text from its slots, `pick` choosing each slot's line and
/// inserted line (`None`: absent).
fn render(f: usize, slots: &[Slot], pick: &dyn Fn(&Slot) -> (Line, Option<Line>)) -> Vec<Line> {
    let spacer = |text: String| Line {
        text,
        owner: "base".into(),
        landing: None,
    };
    let mut out = Vec::new();
    for (i, s) in slots.iter().enumerate() {
        let (line, inserted) = pick(s);
        out.push(line);
        out.push(spacer(format!("f{f} gA{i}")));
        if let Some(l) = inserted {
            out.push(l);
        }
        out.push(spacer(format!("f{f} gB{i}")));
    }
    out
}

fn now_of(s: &Slot) -> (Line, Option<Line>) {
    (
        s.history.last().expect("a line").clone(),
        s.inserted.last().cloned(),
    )
}

fn text(lines: &[Line]) -> String {
    lines.iter().map(|l| format!("{}\n", l.text)).collect()
}

/// An edit plan replacing the whole of `path` (`old` → `new`).
fn whole_file(path: &str, old: &str, new: &str) -> Value {
    let lines: Vec<&str> = old.lines().collect();
    let last = lines.len() - 1;
    json!({
        "path": path,
        "kind": "modify",
        "precondition": {"expectedDigest": Digest::of(old.as_bytes()).to_string()},
        "edits": [{
            "range": {"start": {"line": 0, "char": 0},
                      "end": {"line": last, "char": lines[last].len()}},
            "coordinateSystem": "utf8",
            "newText": new.trim_end_matches('\n'),
        }]
    })
}

fn read(w: &World, path: &str) -> String {
    std::fs::read_to_string(w.dir.path().join(path)).expect("read")
}

/// `pid` claimed, reviewed by bob and applied by the host; the applied
/// transaction.
fn land(w: &World, author: &Actor, changes: Vec<Value>, title: &str) -> (String, Value) {
    for c in &changes {
        w.ok(
            "claim.acquire",
            json!({"resource_id": format!("file:{}", str_of(&c["path"])), "type": "write", "ttl_s": 3600}),
            author,
        );
    }
    let made = w.ok(
        "proposal.create",
        json!({"task_id": "t1", "title": title, "summary_md": "Scripted.",
               "edit_plan": {"documentChanges": changes}}),
        author,
    );
    let pid = str_of(&made["proposal"]["id"]);
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        author,
    );
    w.ok(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    let out = w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    (pid, out["transaction"].clone())
}

/// A small deterministic generator.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % n
    }
}

/// What the script produced: the ground truth, the landings, and the two
/// scripted conflicts (file, slot, whether on the inserted line, c's
/// proposal, the later proposal).
struct Scripted {
    files: Vec<Vec<Slot>>,
    proposals: Vec<String>,
    /// `finished_at` of c's third landing.
    since: String,
    conflicts: Vec<(usize, usize, bool, String, String)>,
}

const C_THIRD: usize = 12; // landings 2, 7, 12…: c's third is landing 12

fn c_late(l: &Line) -> bool {
    l.owner == "c" && l.landing.is_some_and(|n| n >= C_THIRD)
}

/// 5 agents × 10 landings, round robin, each changing one slot line of one
/// shared file and inserting one line into the other. c's lines from its
/// third landing on are never touched by others, except twice: d edits a
/// slot line c wrote (landing 38), e edits a line c inserted (landing 44).
fn script(w: &World) -> Scripted {
    let actors: Vec<Actor> = AGENTS.iter().map(|a| w.agent(a, &["author"])).collect();
    let mut files = vec![initial(0), initial(1)];
    for (f, path) in FILES.iter().enumerate() {
        let body = text(&render(f, &files[f], &now_of));
        std::fs::write(w.dir.path().join(path), &body).expect("write");
    }
    commit_if_git(w);
    let mut rng = Lcg(36);
    let mut used_inserts: BTreeSet<(usize, usize)> = BTreeSet::new();
    let mut c_slots: Vec<(usize, usize, String)> = Vec::new(); // c-late slot writes
    let mut c_inserts: Vec<(usize, usize, String)> = Vec::new(); // c-late insertions
    let mut proposals: Vec<String> = Vec::new();
    let mut conflicts = Vec::new();
    let mut since = String::new();
    for n in 0..50 {
        let who = AGENTS[n % 5];
        let line = |text: String| Line {
            text,
            owner: who.into(),
            landing: Some(n),
        };
        let before: Vec<String> = (0..2)
            .map(|f| text(&render(f, &files[f], &now_of)))
            .collect();
        // The slot line this landing changes.
        let (sf, si) = if n == 38 {
            let (f, i, _) = c_slots[1].clone();
            (f, i)
        } else {
            let f = n % 2;
            loop {
                let i = rng.below(SLOTS);
                let s = &files[f][i];
                let late_c = s.history.iter().any(c_late);
                if !late_c {
                    break (f, i);
                }
            }
        };
        files[sf][si]
            .history
            .push(line(format!("f{sf} s{si} by {who} at {n}")));
        if who == "c" && n >= C_THIRD {
            c_slots.push((sf, si, String::new()));
        }
        // The inserted line: a new one, or (landing 44) e's edit of one c
        // inserted.
        let (jf, ji) = if n == 44 {
            let (f, i, _) = c_inserts[2].clone();
            (f, i)
        } else {
            let f = (n + 1) % 2;
            loop {
                let i = rng.below(SLOTS);
                if used_inserts.insert((f, i)) {
                    break (f, i);
                }
            }
        };
        files[jf][ji]
            .inserted
            .push(line(format!("f{jf} n{ji} by {who} at {n}")));
        if who == "c" && n >= C_THIRD {
            c_inserts.push((jf, ji, String::new()));
        }
        let changes: Vec<Value> = (0..2)
            .filter_map(|f| {
                let after = text(&render(f, &files[f], &now_of));
                (after != before[f]).then(|| whole_file(FILES[f], &before[f], &after))
            })
            .collect();
        let (pid, tx) = land(w, &actors[n % 5], changes, &format!("landing {n}"));
        for (f, path) in FILES.iter().enumerate() {
            assert_eq!(read(w, path), text(&render(f, &files[f], &now_of)));
        }
        if n == C_THIRD {
            since = str_of(&tx["finished_at"]);
        }
        if n == 38 {
            let (f, i, _) = c_slots[1];
            let c_landing = files[f][i].history[files[f][i].history.len() - 2]
                .landing
                .expect("c's");
            conflicts.push((f, i, false, proposals[c_landing].clone(), pid.clone()));
        }
        if n == 44 {
            let (f, i, _) = c_inserts[2];
            let c_landing = files[f][i].inserted[0].landing.expect("c's");
            conflicts.push((f, i, true, proposals[c_landing].clone(), pid.clone()));
        }
        proposals.push(pid);
    }
    Scripted {
        files,
        proposals,
        since,
        conflicts,
    }
}

/// Commit the initial files in git mode (the branch must hold them).
fn commit_if_git(w: &World) {
    let d = w.dir.path();
    if d.join(".git").exists() {
        git(d, &["add", "--", FILES[0], FILES[1]]);
        git(d, &["commit", "-q", "-m", "shared files"]);
    }
}

/// What undoing c since its third landing must leave: every slot and
/// inserted line c wrote from then on goes back to what it replaced,
/// except where another agent edited it since (kept as it is now).
fn expected(f: usize, slots: &[Slot]) -> Vec<Line> {
    render(f, slots, &|s: &Slot| {
        let h = &s.history;
        let line = match h.iter().position(c_late) {
            // Edited by someone after c: kept.
            Some(p) if p + 1 < h.len() => h.last().expect("a line").clone(),
            Some(p) => h[p - 1].clone(),
            None => h.last().expect("a line").clone(),
        };
        let inserted = match s.inserted.first() {
            Some(first) if c_late(first) && s.inserted.len() == 1 => None,
            _ => s.inserted.last().cloned(),
        };
        (line, inserted)
    })
}

/// Store `document` as a draft and activate it (as the orchestrator).
fn activate_policy(w: &World, document: &str) {
    let set = w.ok("policy.set", json!({"document": document}), &w.host);
    let version = set["policy"]["version"].as_u64().expect("a version");
    w.ok("policy.activate", json!({"version": version}), &w.host);
}

fn undo_agent_c(w: World, git_mode: bool) {
    activate_policy(
        &w,
        "version = 1\n[human_approval]\nreverts = true\n[people]\nrevert = [\"olga\"]\n",
    );
    let s = script(&w);
    // c's landings from its third on: 12, 17, …, 47.
    let reverted: Vec<String> = (C_THIRD..50)
        .filter(|n| n % 5 == 2)
        .rev()
        .map(|n| s.proposals[n].clone())
        .collect();
    assert_eq!(reverted.len(), 8);
    // c's late lines in the files now: 8 slot lines and 8 inserted ones,
    // less the two others edited since.
    let late: usize = (0..2)
        .map(|f| {
            render(f, &s.files[f], &now_of)
                .iter()
                .filter(|l| c_late(l))
                .count()
        })
        .sum();
    assert_eq!(late, 14);

    // A person holding the revert role asks; alice authors the undo.
    let made = w.ok(
        "proposal.revert_agent",
        json!({"agent_id": "c", "since": s.since, "author_agent_id": "alice"}),
        &Actor::human(id("olga")),
    );
    let got: Vec<String> = made["reverted"]
        .as_array()
        .expect("reverted")
        .iter()
        .map(|r| str_of(&r["proposal_id"]))
        .collect();
    assert_eq!(got, reverted);
    let rid = str_of(&made["proposal"]["id"]);
    assert_eq!(made["proposal"]["author"], "alice");
    assert_eq!(made["proposal"]["reverts"], reverted[0].as_str());
    assert_eq!(made["proposal"]["risk"], "normal");
    assert_eq!(made["disabled"], false);
    // Both scripted conflicts, placed in the current files, each naming
    // c's proposal and the later one that built on it.
    let conflicts = made["conflicts"].as_array().expect("conflicts");
    assert_eq!(conflicts.len(), 2, "{conflicts:#?}");
    let summary = str_of(&made["proposal"]["summary_md"]);
    for (f, i, inserted, c_pid, later_pid) in &s.conflicts {
        let now = render(*f, &s.files[*f], &now_of);
        let wanted = if *inserted {
            s.files[*f][*i]
                .inserted
                .last()
                .expect("a line")
                .text
                .clone()
        } else {
            s.files[*f][*i].history.last().expect("a line").text.clone()
        };
        let line = now
            .iter()
            .position(|l| l.text == wanted)
            .expect("in the file")
            + 1;
        let c = conflicts
            .iter()
            .find(|c| c["path"] == FILES[*f] && c["proposal_id"] == c_pid.as_str())
            .unwrap_or_else(|| panic!("no conflict for {c_pid} in {conflicts:#?}"));
        let (start, lines) = (
            c["line"].as_u64().expect("line") as usize,
            c["lines"].as_u64().expect("lines") as usize,
        );
        assert!(
            start <= line && line < start + lines,
            "line {line} not in {c}"
        );
        assert!(
            c["later"]
                .as_array()
                .expect("later")
                .iter()
                .any(|l| l["proposal_id"] == later_pid.as_str()),
            "{c}"
        );
        assert!(
            summary.contains(&format!("`{}` lines {start}", FILES[*f])),
            "{summary}"
        );
        assert!(summary.contains(c_pid.as_str()), "{summary}");
    }
    // Proposing wrote nothing.
    for (f, path) in FILES.iter().enumerate() {
        assert_eq!(read(&w, path), text(&render(f, &s.files[f], &now_of)));
    }

    // Governed like any change: claims, a vote, and (reverts = true) a
    // person's approval before it lands.
    for path in FILES {
        w.ok(
            "claim.acquire",
            json!({"resource_id": format!("file:{path}"), "type": "write", "ttl_s": 3600}),
            &w.author,
        );
    }
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": rid}),
        &w.author,
    );
    w.ok(
        "vote.cast",
        json!({"proposal_id": rid, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    w.refused(
        "patch.apply",
        json!({"proposal_id": rid, "revision": 1}),
        &w.host,
        ErrorCode::ValidationFailed,
    );
    w.ok(
        "human.approve",
        json!({"proposal_id": rid, "revision": 1}),
        &Actor::human(id("hana")),
    );
    w.ok(
        "patch.apply",
        json!({"proposal_id": rid, "revision": 1}),
        &w.host,
    );

    // Line by line against the ground truth: every other agent's line is
    // there, c's from its third landing are gone, but for the two
    // stretches others built on.
    for (f, path) in FILES.iter().enumerate() {
        let want = expected(f, &s.files[f]);
        let body = read(&w, path);
        let have: Vec<&str> = body.lines().collect();
        assert_eq!(have.len(), want.len(), "{path}");
        for (k, (h, l)) in have.iter().zip(&want).enumerate() {
            assert_eq!(*h, l.text, "{path} line {}", k + 1);
            if c_late(l) {
                panic!("{path} line {}: c's late line {h} survived", k + 1);
            }
        }
        // Every line any other agent wrote and nobody replaced is there.
        for slot in &s.files[f] {
            let (line, inserted) = now_of(slot);
            for l in std::iter::once(line).chain(inserted) {
                if l.owner != "c" && l.owner != "base" {
                    assert!(have.contains(&l.text.as_str()), "{path}: {} lost", l.text);
                }
            }
        }
    }
    if git_mode {
        git(w.dir.path(), &["fsck", "--strict"]);
        let log = git(w.dir.path(), &["log", "--format=%s", "-1"]);
        assert!(log.contains("Undo the work of c"), "{log}");
    }
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn undoing_one_agent_in_git_mode_keeps_every_other_agents_lines() {
    undo_agent_c(git_world(&[]), true);
}

#[test]
fn undoing_one_agent_in_files_mode_keeps_every_other_agents_lines() {
    undo_agent_c(World::new(), false);
}

#[test]
fn refusals_change_nothing_and_disable_freezes_the_agent() {
    let w = World::new();
    activate_policy(&w, "version = 1\n[people]\nrevert = [\"olga\"]\n");
    let c = w.agent("c", &["author"]);
    w.agent("quiet", &["author"]);
    std::fs::write(w.dir.path().join("f.txt"), "one\ntwo\nthree\n").expect("write");
    let (pid, tx) = land(
        &w,
        &c,
        vec![whole_file(
            "f.txt",
            "one\ntwo\nthree\n",
            "one\nTWO\nthree\n",
        )],
        "c's change",
    );
    let since = str_of(&tx["finished_at"]);
    let args = json!({"agent_id": "c", "since": since, "author_agent_id": "alice"});
    let e = w.refused(
        "proposal.revert_agent",
        args.clone(),
        &w.author,
        ErrorCode::Forbidden,
    );
    assert_eq!(e.details()["reason"], "wrong_kind");
    let e = w.refused(
        "proposal.revert_agent",
        args.clone(),
        &Actor::human(id("hana")),
        ErrorCode::Forbidden,
    );
    assert_eq!(e.details()["reason"], "missing_role");
    assert_eq!(e.details()["required_role"], "revert");
    let e = w.refused(
        "proposal.revert_agent",
        json!({"agent_id": "zed", "since": since, "author_agent_id": "alice"}),
        &w.host,
        ErrorCode::NotFound,
    );
    assert_eq!(e.details()["kind"], "agent");
    let e = w.refused(
        "proposal.revert_agent",
        json!({"agent_id": "quiet", "since": since, "author_agent_id": "alice"}),
        &w.host,
        ErrorCode::PreconditionFailed,
    );
    assert_eq!(e.details()["reason"], "nothing_to_revert");
    w.refused(
        "proposal.revert_agent",
        json!({"agent_id": "c", "since": "2999-01-01T00:00:00.000Z", "author_agent_id": "alice"}),
        &w.host,
        ErrorCode::PreconditionFailed,
    );
    let e = w.refused(
        "proposal.revert_agent",
        json!({"agent_id": "c", "since": since, "author_agent_id": "c"}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(e.details()["field"], "author_agent_id");
    w.refused(
        "proposal.revert_agent",
        json!({"agent_id": "c", "since": "yesterday", "author_agent_id": "alice"}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    w.refused(
        "proposal.revert_agent",
        json!({"agent_id": "c", "since": since, "author_agent_id": "nobody"}),
        &w.host,
        ErrorCode::NotFound,
    );

    // The orchestrator undoes c and disables it in the same transaction.
    let mut args = args;
    args["disable"] = json!(true);
    let made = w.ok("proposal.revert_agent", args, &w.host);
    assert_eq!(made["disabled"], true);
    assert_eq!(made["reverted"][0]["proposal_id"], pid.as_str());
    assert!(made["conflicts"].as_array().expect("conflicts").is_empty());
    let agent = w.ok("agent.get", json!({"agent_id": "c"}), &w.host);
    assert_eq!(agent["agent"]["enabled"], false);
    let rid = str_of(&made["proposal"]["id"]);
    let author = Actor::agent(id("alice"));
    w.ok(
        "claim.acquire",
        json!({"resource_id": "file:f.txt", "type": "write", "ttl_s": 3600}),
        &author,
    );
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": rid}),
        &author,
    );
    w.ok(
        "vote.cast",
        json!({"proposal_id": rid, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    w.ok(
        "patch.apply",
        json!({"proposal_id": rid, "revision": 1}),
        &w.host,
    );
    assert_eq!(read(&w, "f.txt"), "one\ntwo\nthree\n");
    // Undone: nothing left to revert (its inverse is in the files), the
    // same through the typed API.
    w.refused(
        "proposal.revert_agent",
        json!({"agent_id": "c", "since": since, "author_agent_id": "alice"}),
        &w.host,
        ErrorCode::PreconditionFailed,
    );
    let at: roundtable::clock::Timestamp = serde_json::from_value(json!(since)).expect("a time");
    let e = w
        .engine
        .session(w.host.clone())
        .proposals()
        .revert_agent(roundtable::session::RevertAgent::new("c", at, "alice").disable(true))
        .expect_err("nothing to revert");
    assert_eq!(e.code(), ErrorCode::PreconditionFailed);
    assert_eq!(e.details()["reason"], "nothing_to_revert");
}
