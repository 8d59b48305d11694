// One proposal: what it is, who acts next, each policy requirement with
// pass/fail and why, the evidence, the diff (files loaded as they scroll
// into view), the interdiff since the revision this reviewer last voted
// on, and the actions. Everything comes from GET .../proposals/{id}
// (proposal.get, proposal.status, votes, checks, claims, …); whether an
// action is offered is the server's list of this person's tools, and a
// refused action shows the engine's code and message.
import * as live from '../live.js';
import { h, pre, fill } from '../text.js';
import { errorBox, badge, section, table, empty, when, actorText, labelledTextarea, route, notAvailable, disableWithReason } from '../ui.js';
import { hunk } from '../diff.js';
import { takeUndoReport, undoReport } from './undo.js';

const MODE_KEY = 'roundtable.diff-mode';
const FILE_PAGE = 100;
const PARALLEL = 4;

function list(x, ...keys) {
  if (Array.isArray(x)) return x;
  if (!x || typeof x !== 'object') return [];
  for (const k of [...keys, 'items']) if (Array.isArray(x[k])) return x[k];
  return [];
}

function normalize(ov) {
  const got = ov.proposal || {};
  const status = ov.status || {};
  const p = got.proposal || status.proposal || got;
  return {
    p,
    got,
    status,
    revision: ov.revision || null, // the latest revision's record (its note_md: what changed in it)
    revisions: list(ov.revisions).length ? list(ov.revisions) : list(got.revisions),
    votes: list(ov.votes, 'votes'),
    checks: list(ov.checks, 'test_results'),
    claims: list(ov.claims, 'claims'),
    carried: list(ov.carried_evidence),
    secrets: list(ov.secret_findings, 'findings'),
    loose: ov.loose_match,
    requirements: (status.validation && status.validation.policy && status.validation.policy.requirements) || [],
    stages: (status.validation && status.validation.stages) || [],
    byRequirement: status.by_requirement || [],
    next: status.next || [],
  };
}

// The actions a person may try, each one engine tool. `requirements`
// names the policy requirements the action serves (to show who the
// engine says can satisfy them); it decides nothing.
const GROUPS = [
  {
    key: 'vote', tool: 'vote.cast', title: 'Review vote', label: 'Reason for your vote',
    buttons: [['approve', 'Approve'], ['revise', 'Request changes'], ['reject', 'Reject']],
    args: (pid, rev, v, text) => ({ proposal_id: pid, revision: rev, vote: v, reason_md: text }),
    requirements: (r) => r === 'approvals' || r.startsWith('role:'),
  },
  {
    key: 'human', tool: 'human.approve', title: 'Human approval', label: 'Reason for your approval',
    buttons: [['approve', 'Approve as a person']],
    args: (pid, rev, v, text) => ({ proposal_id: pid, revision: rev, note_md: text }),
    requirements: (r) => r === 'human_approval',
  },
  {
    key: 'security', tool: 'security.review', title: 'Security review', label: 'Security notes',
    buttons: [['pass', 'Security review: pass'], ['fail', 'Security review: fail']],
    args: (pid, rev, v, text) => ({ proposal_id: pid, revision: rev, verdict: v, note_md: text }),
    requirements: (r) => r === 'security_review' || r === 'secrets',
  },
  {
    key: 'decision', tool: 'decision.record', title: 'Decision or comment', label: 'Comment or reason',
    buttons: [['accept', 'Record: accept'], ['defer', 'Comment (decide later)']],
    args: (pid, rev, v, text) => ({ proposal_id: pid, revision: rev, decision: v, reason_md: text }),
    requirements: () => false,
  },
  {
    key: 'reject', tool: 'patch.reject', title: 'Reject the proposal', label: 'Why it is rejected',
    buttons: [['reject', 'Reject proposal']],
    args: (pid, rev, v, text) => ({ proposal_id: pid, reason_md: text }),
    requirements: () => false,
  },
  {
    key: 'apply', tool: 'patch.apply', title: 'Apply', label: null,
    buttons: [['apply', 'Apply this revision']],
    args: (pid, rev) => ({ proposal_id: pid, revision: rev }),
    requirements: () => false,
  },
];

// Who the engine names for a `next` item: its agents, then the people the
// policy's [people] table names (absent: any person).
function whoCan(next) {
  return [...(next.candidates || []), ...(next.people || []).map((p) => 'human:' + p)];
}

const STATUS_WORD = { satisfied: 'pass', unsatisfied: 'fail', not_applicable: 'not needed' };

export function proposalView(ctx, id) {
  let ov = null;
  let latest = null;
  let selectedRevision = null; // null: the latest
  let mode = localStorage.getItem(MODE_KEY) === 'split' ? 'split' : 'unified';
  let disposed = false;

  const head = h('div', { class: 'prop-head', id: 'prop-head' }, h('p', { class: 'muted' }, 'Loading…'));
  const msg = h('div', { id: 'prop-message' });
  const policyBox = h('div', { id: 'policy' });
  const evidenceBox = h('div', { id: 'evidence' });
  const actionsBox = h('div', { class: 'actions', id: 'actions' });
  const interdiffBox = h('div', { id: 'interdiff' });
  const filesBox = h('div', { class: 'files', id: 'files' });
  const diffBar = h('div', { class: 'diff-bar' });

  // What proposal.revert_agent reported, when this person just made this
  // proposal with "Undo this agent's work…" (reverted landings, conflicts).
  const made = takeUndoReport(id);
  const undoBox = h('div', { id: 'undo-report' }, made ? undoReport(ctx, made) : null);
  let landed = false; // the proposal landed: its files can be blamed at the tip
  const el = h('div', { class: 'page proposal-page' },
    head, msg, undoBox,
    h('div', { class: 'columns' },
      h('div', { class: 'col-main' },
        section('Policy', policyBox),
        section('Changes', diffBar, filesBox),
        section('Since your last vote', interdiffBox),
        section('Evidence and history', evidenceBox)),
      h('aside', { class: 'col-side', 'aria-label': 'Actions' }, h('h2', {}, 'Actions'), actionsBox)));

  // ---- actions ----
  const groups = new Map();
  function buildActions() {
    for (const g of GROUPS) {
      const resultEl = h('div', { class: 'action-result', id: 'result-' + g.key, 'aria-live': 'polite' });
      const reasonId = 'why-not-' + g.key;
      const whyNot = h('p', { class: 'why-not', id: reasonId, hidden: true });
      const hint = h('p', { class: 'who-can', id: 'who-can-' + g.key });
      let textarea = null;
      let field = null;
      if (g.label) [field, textarea] = labelledTextarea(g.label, 'text-' + g.key);
      if (textarea) textarea.id = 'text-' + g.key;
      if (field) field.querySelector('label').setAttribute('for', 'text-' + g.key);
      const buttons = g.buttons.map(([value, label]) => {
        const b = h('button', { type: 'button', class: ['btn', value === 'approve' || value === 'pass' || value === 'accept' || value === 'apply' ? 'btn-primary' : value === 'defer' ? '' : 'btn-danger'], id: 'act-' + g.key + '-' + value, 'aria-describedby': reasonId }, label);
        b.addEventListener('click', () => act(g, value, label, textarea, resultEl, buttons));
        return b;
      });
      const fs = h('fieldset', { class: 'action', id: 'action-' + g.key },
        h('legend', {}, g.title), hint, field, h('div', { class: 'buttons' }, buttons), whyNot, resultEl);
      groups.set(g.key, { g, fs, textarea, buttons, whyNot, hint, resultEl });
      actionsBox.appendChild(fs);
    }
    ctx.tools().then((tools) => {
      for (const grp of groups.values()) {
        if (tools.has(grp.g.tool)) continue;
        unavailable(grp, 'Not available to ', h('strong', {}, ctx.session.actor), ': the server does not offer ',
          h('code', {}, grp.g.tool), ' to this account.');
      }
    }, (e) => {
      actionsBox.prepend(errorBox(e, 'Could not read which actions you may take:'));
    });
  }

  async function act(g, value, label, textarea, resultEl, buttons) {
    if (!ov) return;
    const text = textarea && textarea.value.trim() ? textarea.value : null;
    resultEl.replaceChildren();
    for (const b of buttons) b.disabled = true;
    let forbidden = false;
    try {
      const out = await ctx.ws.call(g.tool, g.args(id, latest, value, text));
      if (textarea) textarea.value = '';
      resultEl.replaceChildren(h('p', { class: 'ok', role: 'status' }, 'Done: ', label, ' — ', h('code', {}, g.tool), describe(out)));
      await load();
    } catch (e) {
      resultEl.replaceChildren(errorBox(e, 'Refused:'));
      forbidden = e && e.code === 'forbidden';
      // The engine said this person may not: the buttons stay disabled and
      // say why (their aria-describedby), in the engine's own words.
      if (forbidden) unavailable(groups.get(g.key), notAvailable(ctx.session.actor, e.message));
    } finally {
      if (!forbidden) for (const b of buttons) b.disabled = false;
    }
  }

  function unavailable({ fs, buttons, textarea, whyNot }, ...why) {
    disableWithReason(whyNot, [...buttons, textarea], ...why);
    fs.classList.add('unavailable');
    actionsBox.appendChild(fs); // what this person can do comes first
  }

  function describe(out) {
    if (!out || typeof out !== 'object') return '';
    const rec = out.vote || out.security_review || out.approval || out.decision || out.transaction || out.proposal;
    return rec && rec.id ? ' (' + rec.id + ')' : '';
  }

  function updateHints(n) {
    for (const { g, hint } of groups.values()) {
      const needs = n.byRequirement.filter((b) => g.requirements(String(b.requirement || '')));
      hint.replaceChildren(...needs.map((b) => {
        const nx = b.next || {};
        const can = whoCan(nx);
        const who = can.length ? ' (can: ' + can.join(', ') + ')' : nx.people ? ' (no one named can)' : '';
        return h('span', { class: 'need' }, 'Needed: ', h('code', {}, b.requirement), ' by ', nx.actor || '?', who, nx.why ? ' — ' : '', nx.why || '');
      }));
    }
  }

  function focusAction(keys) {
    for (const k of keys) {
      const grp = groups.get(k);
      if (grp && grp.textarea && !grp.textarea.disabled) {
        grp.fs.scrollIntoView({ block: 'center' });
        grp.textarea.focus();
        return;
      }
    }
    const grp = groups.get(keys[0]);
    if (grp) {
      grp.fs.scrollIntoView({ block: 'center' });
      grp.buttons[0].focus();
    }
  }

  // ---- header, policy, evidence ----
  function renderHead(n) {
    const p = n.p;
    const revs = n.revisions.length || p.latest_revision;
    fill(head,
      h('p', { class: 'crumbs' }, h('a', { href: route(ctx.wsName, 'inbox') }, 'My inbox'), ' › ', h('code', {}, p.id || id)),
      h('h1', { id: 'prop-title', tabindex: '-1' }, p.title || '(untitled)'),
      h('p', { class: 'meta', id: 'prop-meta' },
        'by ', h('strong', {}, p.author || '?'),
        p.author ? [' (', h('a', { href: route(ctx.wsName, 'undo', p.author), class: 'undo-link', id: 'undo-author' }, 'Undo this agent\u2019s work…'), ')'] : null,
        ' · ',
        badge(p.risk, 'risk'), ' ', h('span', { id: 'prop-status' }, badge(p.status)), ' · revision ',
        String(p.latest_revision ?? '?'), ' of ', String(revs ?? '?'), ' · task ', h('code', {}, p.task_id || '?'),
        ' · updated ', when(p.updated_at),
        p.reverts ? [' · reverts ', h('a', { href: route(ctx.wsName, 'proposals', p.reverts) }, p.reverts)] : null),
      h('div', { class: 'summary', id: 'prop-summary' }, pre(p.summary_md || '')),
      n.revision && n.revision.note_md
        ? h('div', { class: 'summary', id: 'revision-note' }, h('h2', {}, 'What changed in revision ', String(n.revision.number ?? '')), pre(n.revision.note_md))
        : null,
      nextBox(n));
  }

  function nextBox(n) {
    const flags = [];
    if (n.status.can_land) flags.push(h('span', { class: 'badge badge-satisfied' }, 'can land'));
    if (n.status.stale) flags.push(h('span', { class: 'badge badge-unsatisfied' }, 'stale: the files changed since this revision'));
    if (n.status.applying) flags.push(h('span', { class: 'badge' }, 'applying: ', n.status.applying));
    const items = n.next.map((x) => h('li', {}, h('strong', {}, x.actor || '?'), ': ', x.action || '', whoCan(x).length ? ' (' + whoCan(x).join(', ') + ')' : '', x.why ? ' — ' + x.why : ''));
    return h('div', { class: 'next', id: 'prop-next' },
      h('h2', {}, 'Who acts next'), flags.length ? h('p', {}, flags) : null,
      items.length ? h('ul', {}, items) : empty('Nobody: the proposal is closed or waits on nothing.'));
  }

  let stagesOpen = false;
  function renderPolicy(n) {
    if (!n.status.validation) {
      policyBox.replaceChildren(empty(n.status.applying ? 'It is being applied: no report until the transaction ends.' : 'No report: the proposal is closed.'));
      return;
    }
    const v = n.status.validation;
    const reqRows = n.requirements.map((r) => {
      const word = STATUS_WORD[r.status] || r.status;
      const by = n.byRequirement.find((b) => b.requirement === r.id);
      return h('tr', { class: 'req req-' + r.status, 'data-requirement': r.id },
        h('th', { scope: 'row' }, h('code', {}, r.id)),
        h('td', {}, h('span', { class: ['badge', 'badge-' + r.status] }, word)),
        h('td', {},
          r.missing ? h('p', { class: 'missing' }, r.missing) : null,
          (r.reasons || []).length ? h('ul', { class: 'reasons' }, r.reasons.map((x) => h('li', {}, x))) : null,
          (r.paths || []).length ? h('p', { class: 'muted' }, 'paths: ', r.paths.join(', ')) : null,
          (r.carried || []).length ? h('p', { class: 'muted' }, 'carried: ', r.carried.map((c) => c.evidence + ' from revision ' + c.revision + ' by rule ' + c.rule).join('; ')) : null),
        h('td', {}, (r.evidence || []).length ? r.evidence.map((e) => h('code', { class: 'ev' }, e)) : '—'),
        h('td', {}, by && by.next ? [by.next.actor || '', whoCan(by.next).length ? ': ' + whoCan(by.next).join(', ') : ''] : '—'));
    });
    const stageRows = n.stages.map((s) => h('tr', { class: 'stage stage-' + s.status },
      h('th', { scope: 'row' }, s.name),
      h('td', {}, h('span', { class: ['badge', 'badge-' + s.status] }, s.status)),
      h('td', {}, (s.reasons || []).map((x) => h('p', {}, typeof x === 'object' && x ? x.message || JSON.stringify(x) : String(x))))));
    fill(policyBox,
      h('p', {}, 'Revision ', String(v.revision), ' ', v.valid ? h('span', { class: 'badge badge-satisfied' }, 'valid') : h('span', { class: 'badge badge-unsatisfied' }, 'not valid yet'),
        ' · policy ', v.policy_version === null || v.policy_version === undefined ? 'built-in default' : 'version ' + v.policy_version),
      h('table', { class: 'grid', id: 'requirements' },
        h('caption', {}, 'Requirements'),
        h('thead', {}, h('tr', {}, ['Requirement', 'Result', 'Why', 'Evidence', 'Who can'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, reqRows)),
      h('details', { class: 'stages', id: 'stages-box', open: stagesOpen },
        h('summary', {}, 'Validation stages: ', String(n.stages.filter((x) => x.status === 'failed').length), ' failed of ', String(n.stages.length)),
        h('table', { class: 'grid', id: 'stages' },
          h('thead', {}, h('tr', {}, ['Stage', 'Result', 'Why'].map((c) => h('th', { scope: 'col' }, c)))),
          h('tbody', {}, stageRows))));
    policyBox.querySelector('details').addEventListener('toggle', (e) => {
      stagesOpen = e.target.open;
    });
  }

  function renderEvidence(n) {
    const carried = n.carried.length ? n.carried : n.requirements.flatMap((r) => (r.carried || []).map((c) => ({ ...c, requirement: r.id })));
    const secrets = n.secrets.length ? n.secrets : n.requirements.flatMap((r) => r.findings || []);
    // Where each hunk of an agent-format change matched, per file: [{path, matches: [{hunk, line, rung}]}].
    const loose = list(n.loose).flatMap((f) => (Array.isArray(f.matches) ? f.matches.map((m) => ({ path: f.path, ...m })) : [f]));
    fill(evidenceBox,
      h('h3', {}, 'Votes'),
      n.votes.length ? table(n.votes, [
        ['Reviewer', (v) => v.agent_id || actorText(v.voter || v.actor)],
        ['Vote', (v) => badge(v.vote)],
        ['Revision', (v) => String(v.revision)],
        ['Reason', (v) => (v.reason_md ? pre(v.reason_md) : '—')],
        ['When', (v) => when(v.created_at)],
      ]) : empty('No votes.'),
      h('h3', {}, 'Checks'),
      n.checks.length ? table(n.checks, [
        ['Check', (t) => t.name],
        ['Result', (t) => badge(t.status)],
        ['Revision', (t) => String(t.revision)],
        ['Duration', (t) => (t.duration_ms === null || t.duration_ms === undefined ? '—' : t.duration_ms + ' ms')],
        ['Output', (t) => (t.note_md || t.output ? pre(t.note_md || t.output, 'text check-output') : '—')],
      ]) : empty('No check results.'),
      h('h3', {}, 'Carried evidence'),
      carried.length ? table(carried, [
        ['Evidence', (c) => h('code', {}, c.evidence || c.id || '?')],
        ['From revision', (c) => String(c.revision ?? '?')],
        ['Rule that carried it', (c) => h('code', {}, c.rule || '?')],
        ['Requirement', (c) => c.requirement || '—'],
      ]) : empty('Nothing carried from an earlier revision.'),
      h('h3', {}, 'Secret-scan findings'),
      secrets.length ? table(secrets, [
        ['File', (s) => s.path],
        ['Line', (s) => String(s.line)],
        ['Kind', (s) => h('code', {}, s.kind)],
      ]) : empty('No secret found in added lines.'),
      h('h3', {}, 'Match rungs'),
      loose.length ? table(loose, [
        ['File', (m) => m.path || m.file || '—'],
        ['Hunk', (m) => String(m.hunk ?? '—')],
        ['Line', (m) => String(m.line ?? '—')],
        ['Rung', (m) => h('code', {}, m.rung || '?')],
      ]) : empty('No agent-format hunk (a unified diff or an edit plan applies exactly).'),
      h('h3', {}, 'Claims covering its paths'),
      n.claims.length ? table(n.claims, [
        ['Holder', (c) => c.agent_id || c.holder || '?'],
        ['Resource', (c) => h('code', {}, c.resource_id || c.resource || '?')],
        ['Type', (c) => c.type || '?'],
        ['Status', (c) => badge(c.status)],
        ['Until', (c) => when(c.expires_at || c.until)],
      ]) : empty('No claim covers its paths.'),
      h('h3', {}, 'Revisions'),
      n.revisions.length ? table(n.revisions, [
        ['Revision', (r) => String(r.number)],
        ['Format', (r) => r.format || '?'],
        ['Created', (r) => when(r.created_at)],
        ['Changeset', (r) => h('code', { class: 'digest' }, r.changeset_digest || r.digest || '')],
      ]) : empty('No revision.'));
  }

  // ---- interdiff ----
  function myLastVoted(n) {
    const me = ctx.session.actor.replace(/^[a-z]+:/, '');
    const mine = n.votes.filter((v) => v.agent_id === me || actorText(v.voter || v.actor) === ctx.session.actor);
    return mine.length ? Math.max(...mine.map((v) => v.revision)) : null;
  }

  let interFrom = null;
  let interTo = null;
  function renderInterdiff(n) {
    const nums = n.revisions.map((r) => r.number).filter((x) => typeof x === 'number').sort((a, b) => a - b);
    if (nums.length < 2) {
      interdiffBox.replaceChildren(empty('Only one revision: nothing to compare.'));
      return;
    }
    const voted = myLastVoted(n);
    if (interTo === null || !nums.includes(interTo)) interTo = nums[nums.length - 1];
    if (interFrom === null || !nums.includes(interFrom)) interFrom = voted !== null && voted < interTo ? voted : nums[nums.length - 2];
    const fromSel = h('select', { id: 'inter-from' }, nums.map((x) => h('option', { value: String(x), selected: x === interFrom }, String(x))));
    const toSel = h('select', { id: 'inter-to' }, nums.map((x) => h('option', { value: String(x), selected: x === interTo }, String(x))));
    const out = h('div', { class: 'interdiff-out' });
    const reload = async () => {
      interFrom = Number(fromSel.value);
      interTo = Number(toSel.value);
      out.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
      try {
        const c = await ctx.ws.interdiff(id, interFrom, interTo);
        const files = c.files || [];
        out.replaceChildren(c.identical ? empty('The two revisions make the same change.') :
          h('div', {}, files.map((f) => h('div', { class: 'inter-file' },
            h('h4', {}, h('code', {}, f.path), ' ', badge(f.status)),
            (f.removed_hunks || []).map((x) => pre(x, 'text inter-removed')),
            (f.added_hunks || []).map((x) => pre(x, 'text inter-added'))))));
      } catch (e) {
        out.replaceChildren(errorBox(e, 'Could not compare:'));
      }
    };
    fromSel.addEventListener('change', reload);
    toSel.addEventListener('change', reload);
    fill(interdiffBox,
      h('p', { class: 'muted' }, voted !== null ? 'You last voted on revision ' + voted + '.' : 'You have not voted on this proposal: comparing the last two revisions.'),
      h('div', { class: 'inline-fields' },
        h('label', { for: 'inter-from' }, 'From revision '), fromSel, ' ',
        h('label', { for: 'inter-to' }, 'to revision '), toSel),
      out);
    reload();
  }

  // ---- files and diff, loaded as they come into view ----
  let fileCursor = null;
  let filesDone = false;
  let filesGen = 0;
  let fileEls = [];
  let fileIndex = -1;
  let hunkIndex = -1;
  const hunkCache = new Map(); // path -> hunks
  let firstHunkMarked = false;
  let queue = [];
  let running = 0;
  const sentinel = h('div', { class: 'sentinel', 'aria-hidden': 'true' });
  const fileObserver = new IntersectionObserver((entries) => {
    for (const e of entries) {
      if (e.isIntersecting) {
        fileObserver.unobserve(e.target);
        enqueue(e.target);
      }
    }
  }, { rootMargin: '1000px 0px' });
  const pageObserver = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) loadFiles();
  }, { rootMargin: '1200px 0px' });

  // null: the latest (the server's default), so the file list can load
  // before the overview has said which revision that is.
  function revisionParam() {
    return selectedRevision;
  }

  function resetFiles() {
    filesGen += 1;
    fileObserver.disconnect();
    pageObserver.disconnect();
    queue = [];
    fileCursor = null;
    filesDone = false;
    fileEls = [];
    fileIndex = -1;
    hunkIndex = -1;
    hunkCache.clear();
    filesBox.replaceChildren(sentinel);
    pageObserver.observe(sentinel);
  }

  let loadingFiles = false;
  async function loadFiles() {
    if (loadingFiles || filesDone || disposed) return;
    loadingFiles = true;
    const gen = filesGen;
    try {
      const r = await ctx.ws.files(id, { revision: revisionParam(), limit: FILE_PAGE, cursor: fileCursor });
      if (gen !== filesGen) return;
      for (const f of r.items || r.files || []) {
        const sec = fileSection(f);
        filesBox.insertBefore(sec, sentinel);
        fileEls.push(sec);
        fileObserver.observe(sec);
      }
      fileCursor = r.next_cursor || null;
      filesDone = !fileCursor;
      if (filesDone && fileEls.length === 0) filesBox.insertBefore(empty('This revision changes no file.'), sentinel);
      if (filesDone) pageObserver.unobserve(sentinel);
      else {
        // The sentinel may still be in view: observe again to be told.
        pageObserver.unobserve(sentinel);
        pageObserver.observe(sentinel);
      }
    } catch (e) {
      if (gen === filesGen) filesBox.insertBefore(errorBox(e, 'Could not list the files:'), sentinel);
      filesDone = true;
    } finally {
      loadingFiles = false;
    }
  }

  function fileSection(f) {
    const path = f.path || f.new_path || f.old_path || '?';
    const stats = [];
    if (f.binary) stats.push(h('span', { class: 'badge' }, 'binary'));
    if (f.added !== undefined && f.added !== null) stats.push(h('span', { class: 'added' }, '+' + f.added));
    if (f.removed !== undefined && f.removed !== null) stats.push(h('span', { class: 'removed' }, '−' + f.removed));
    if (f.mode) stats.push(h('span', { class: 'muted file-mode' }, 'mode ', String(f.mode)));
    const body = h('div', { class: 'file-body' }, h('p', { class: 'muted' }, 'Loads when it comes into view…'));
    // Who wrote each line of the file now: shown once the proposal landed
    // (a deleted file has no lines at the tip).
    const deleted = (f.status || f.operation) === 'deleted' || (f.old_path && !f.new_path);
    const blame = deleted ? null : h('a', { class: 'blame-link', href: route(ctx.wsName, 'blame', path), hidden: !landed, 'aria-label': 'Blame ' + path + ' at the branch tip' }, 'Blame');
    const sec = h('section', { class: 'file', tabindex: '-1', 'data-path': path, 'aria-label': 'File ' + path },
      h('h3', { class: 'file-head' },
        h('code', { class: 'file-path' }, path),
        f.old_path && f.old_path !== path ? [' ← ', h('code', {}, f.old_path)] : null,
        ' ', badge(f.status || f.operation), ' ', stats, blame ? [' ', blame] : null),
      body);
    sec._body = body;
    sec._path = path;
    return sec;
  }

  function enqueue(sec) {
    queue.push(sec);
    pump();
  }

  function pump() {
    while (running < PARALLEL && queue.length) {
      const sec = queue.shift();
      running += 1;
      const gen = filesGen;
      loadHunks(sec, gen).finally(() => {
        running -= 1;
        pump();
      });
    }
  }

  async function loadHunks(sec, gen) {
    try {
      const r = await ctx.ws.diff(id, { revision: revisionParam(), path: sec._path });
      if (gen !== filesGen) return;
      let hunks = r.hunks;
      if (!hunks) {
        const item = list(r, 'files').find((x) => x.path === sec._path);
        hunks = item ? item.hunks : [];
      }
      hunkCache.set(sec._path, hunks || []);
      drawFile(sec);
    } catch (e) {
      if (gen === filesGen) sec._body.replaceChildren(errorBox(e, 'Could not load this file\'s diff:'));
    }
  }

  function drawFile(sec) {
    const hunks = hunkCache.get(sec._path);
    if (!hunks) return;
    sec._body.replaceChildren(...(hunks.length ? hunks.map((x) => hunk(x, mode)) : [empty('No text hunk (a binary, mode-only or empty change).')]));
    if (hunks.length && !firstHunkMarked) {
      // For measuring the first screen from outside (bench/console_bench.py).
      firstHunkMarked = true;
      performance.mark('roundtable:first-hunk');
    }
  }

  function setMode(m) {
    mode = m;
    localStorage.setItem(MODE_KEY, m);
    toggle.setAttribute('aria-pressed', m === 'split' ? 'true' : 'false');
    toggle.textContent = m === 'split' ? 'Side by side: on' : 'Side by side: off';
    for (const sec of fileEls) drawFile(sec);
  }

  const revSelect = h('select', { id: 'diff-revision' });
  revSelect.addEventListener('change', () => {
    selectedRevision = revSelect.value === 'latest' ? null : Number(revSelect.value);
    resetFiles();
  });
  const toggle = h('button', { type: 'button', class: 'btn', id: 'diff-mode', 'aria-pressed': 'false' }, '');
  toggle.addEventListener('click', () => setMode(mode === 'split' ? 'unified' : 'split'));
  diffBar.append(h('label', { for: 'diff-revision' }, 'Revision '), revSelect, ' ', toggle,
    h('span', { class: 'muted keys-hint' }, ' j/k files · n/p hunks · u toggles · ? help'));
  setMode(mode);

  function fillRevisions(n) {
    const nums = n.revisions.map((r) => r.number).filter((x) => typeof x === 'number').sort((a, b) => b - a);
    const want = selectedRevision === null ? 'latest' : String(selectedRevision);
    revSelect.replaceChildren(h('option', { value: 'latest' }, 'latest (' + latest + ')'), ...nums.map((x) => h('option', { value: String(x) }, String(x))));
    revSelect.value = want;
  }

  function moveFile(d) {
    if (!fileEls.length) return;
    fileIndex = Math.max(0, Math.min(fileEls.length - 1, fileIndex + d));
    const sec = fileEls[fileIndex];
    sec.scrollIntoView({ block: 'start' });
    sec.focus({ preventScroll: true });
    if (d > 0 && fileIndex >= fileEls.length - 3) loadFiles();
  }

  function moveHunk(d) {
    const all = [...filesBox.querySelectorAll('.hunk')];
    if (!all.length) return;
    const cur = all.indexOf(document.activeElement);
    hunkIndex = Math.max(0, Math.min(all.length - 1, (cur >= 0 ? cur : hunkIndex) + d));
    const el = all[hunkIndex];
    el.scrollIntoView({ block: 'start' });
    el.focus({ preventScroll: true });
    const sec = el.closest('.file');
    if (sec) fileIndex = fileEls.indexOf(sec);
  }

  ctx.setKeys({
    j: () => moveFile(1),
    k: () => moveFile(-1),
    n: () => moveHunk(1),
    p: () => moveHunk(-1),
    u: () => setMode(mode === 'split' ? 'unified' : 'split'),
    a: () => focusAction(['vote', 'human']),
    c: () => focusAction(['vote', 'decision']),
  });

  // ---- loading ----
  let loadGen = 0;
  async function load() {
    const gen = ++loadGen;
    try {
      const raw = await ctx.ws.proposal(id);
      if (gen !== loadGen || disposed) return;
      ov = normalize(raw);
      const before = latest;
      latest = ov.p.latest_revision ?? (ov.revisions.length ? Math.max(...ov.revisions.map((r) => r.number)) : 1);
      msg.replaceChildren();
      landed = ov.p.status === 'applied';
      for (const a of filesBox.querySelectorAll('a.blame-link')) a.hidden = !landed;
      renderHead(ov);
      renderPolicy(ov);
      renderEvidence(ov);
      updateHints(ov);
      fillRevisions(ov);
      if (before === null) {
        renderInterdiff(ov);
      } else if (before !== latest) {
        renderInterdiff(ov);
        if (selectedRevision === null) resetFiles();
      }
    } catch (e) {
      if (gen === loadGen) msg.replaceChildren(errorBox(e, 'Could not load the proposal:'));
    }
  }

  buildActions();
  // The files start loading at once, beside the overview (which can take
  // longer on a large change: it validates the revision).
  resetFiles();
  const unsubscribe = live.subscribe(() => load(), {
    filter: (ev) => !ev.data || !ev.data.proposal_id || ev.data.proposal_id === id,
  });
  load();

  return {
    el,
    dispose() {
      disposed = true;
      unsubscribe();
      fileObserver.disconnect();
      pageObserver.disconnect();
    },
  };
}
