// Blame: each line of a file at the tip of the landing branch, grouped by
// the commit it comes from, with what governed that commit — the proposal,
// its author agent, the task and the evidence that let it land — or, for a
// commit roundtable did not land, that it was not governed and who made it.
// Everything is provenance.blame's answer (GET .../blame?path=); the
// console decides nothing. From a governed group, "Undo this agent's
// work…" opens the undo page for its author.
import { h, fill } from '../text.js';
import { errorBox, section, empty, when, route } from '../ui.js';

const EVIDENCE = {
  vote: 'approving vote',
  security_review: 'security review',
  human_approval: 'human approval',
  check: 'check',
};

const NOT_GOVERNED = {
  no_transaction: 'plain git commit',
  unknown_transaction: 'its trailers name a transaction roundtable does not have',
  other_commit: 'its trailers name a transaction that landed another commit',
  not_landed: 'its trailers name a transaction that did not land',
};

/** `name <email>` → `name`. */
function personName(author) {
  const s = String(author || '');
  const i = s.indexOf(' <');
  return i > 0 ? s.slice(0, i) : s || '?';
}

function evidenceItem(e) {
  return h('li', { class: 'evidence-item', 'data-kind': e.kind },
    EVIDENCE[e.kind] || String(e.kind), ' by ', h('strong', {}, e.by || '?'),
    e.check ? [' — ', h('code', {}, e.check)] : null,
    ' (revision ', String(e.revision ?? '?'), ')');
}

/** The header of one group of lines: its commit and what governed it. */
function groupMeta(ctx, range, commit) {
  const short = String(range.commit || '').slice(0, 10);
  const c = commit || {};
  if (!range.governed || !c.landing) {
    const why = c.not_governed || 'no_transaction';
    return h('div', { class: 'blame-meta not-governed' },
      h('p', {},
        h('code', { class: 'digest' }, short), ' ',
        h('span', { class: 'badge badge-unsatisfied' }, 'not governed'), ' ',
        h('strong', { class: 'blame-why' }, 'not governed: ', NOT_GOVERNED[why] || why, ' by ', personName(c.author)),
        c.summary ? [' — ', h('span', { class: 'blame-summary' }, c.summary)] : null,
        ' · ', when(c.author_time ? new Date(c.author_time * 1000).toISOString() : null)));
  }
  const l = c.landing;
  const evidence = l.evidence || [];
  return h('div', { class: 'blame-meta governed' },
    h('p', {},
      h('code', { class: 'digest' }, short), ' ',
      h('a', { class: 'blame-proposal', href: route(ctx.wsName, 'proposals', l.proposal_id) }, l.proposal_id),
      l.kind === 'rollback' ? [' ', h('span', { class: 'badge' }, 'rollback')] : null,
      ' by agent ', h('strong', { class: 'blame-agent' }, l.author_agent || '?'),
      ' · task ', h('code', { class: 'blame-task' }, l.task_id || '?'),
      c.summary ? [' — ', h('span', { class: 'blame-summary' }, c.summary)] : null,
      ' · ', h('a', { class: 'undo-link', href: route(ctx.wsName, 'undo', l.author_agent || '') }, 'Undo this agent\u2019s work…')),
    evidence.length
      ? h('ul', { class: 'blame-evidence', 'aria-label': 'What let ' + l.proposal_id + ' land' }, evidence.map(evidenceItem))
      : h('p', { class: 'muted' }, 'No evidence recorded.'));
}

function group(ctx, range, commit) {
  const lines = range.lines || [];
  const rows = lines.map((text, i) => {
    const n = (range.start_line || 1) + i;
    return h('tr', { class: 'blame-line', 'data-line': String(n) },
      h('th', { scope: 'row', class: 'ln' }, String(n)),
      h('td', { class: 'code' }, h('code', {}, text)));
  });
  const label = range.start_line === range.end_line
    ? 'Line ' + range.start_line
    : 'Lines ' + range.start_line + ' to ' + range.end_line;
  return h('section', {
    class: ['blame-group', range.governed ? 'is-governed' : 'is-not-governed'],
    'data-commit': range.commit,
    'data-governed': range.governed ? 'true' : 'false',
    'aria-label': label,
  },
  groupMeta(ctx, range, commit),
  h('table', { class: 'blame-code' }, h('caption', { class: 'visually-hidden' }, label), h('tbody', {}, rows)));
}

export function blameView(ctx, path) {
  const input = h('input', { id: 'blame-path', name: 'path', type: 'text', value: path || '', placeholder: 'src/lib.rs', autocomplete: 'off', spellcheck: 'false' });
  const form = h('form', { class: 'blame-form', id: 'blame-form' },
    h('label', { for: 'blame-path' }, 'File path at the branch tip'), ' ', input, ' ',
    h('button', { type: 'submit', class: 'btn', id: 'blame-go' }, 'Show blame'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const p = input.value.trim();
    if (p) location.hash = route(ctx.wsName, 'blame', p);
  });
  const out = h('div', { id: 'blame', 'aria-live': 'polite' });
  const el = h('div', { class: 'page blame-page' },
    h('h1', { tabindex: '-1' }, 'Blame'),
    h('p', { class: 'muted' }, 'Who wrote each line of a file as it is at the tip of the landing branch, and what let it land.'),
    form,
    section('Lines', out));

  async function load() {
    if (!path) return fill(out, empty('Name a file to see who wrote each of its lines.'));
    fill(out, h('p', { class: 'muted' }, 'Loading…'));
    try {
      const b = await ctx.ws.blame(path);
      const commits = new Map((b.commits || []).map((c) => [c.id, c]));
      const ranges = b.ranges || [];
      fill(out,
        h('p', { id: 'blame-head' }, h('code', { class: 'file-path' }, b.path || path), ' at ',
          h('code', { class: 'digest' }, String(b.commit || '').slice(0, 12)), ' on ', h('code', {}, b.branch || '?'),
          ' · ', String(b.line_count ?? '?'), ' lines'),
        ranges.length ? h('div', { class: 'blame-groups' }, ranges.map((r) => group(ctx, r, commits.get(r.commit)))) : empty('The file is empty.'));
    } catch (e) {
      fill(out, errorBox(e, 'Could not blame ' + path + ':'));
    }
  }

  load();
  return { el };
}
