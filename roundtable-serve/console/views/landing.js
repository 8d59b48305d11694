// Landing: what landed (the landing log with its trailers, the
// transactions), the audit chain's state, the landing queue; rollback and
// revert, which the engine turns into governed work (transaction.rollback,
// proposal.revert). Live: fetched again on events.
import * as live from '../live.js';
import { h, pre, fill } from '../text.js';
import { errorBox, badge, section, table, empty, when, actorText, route } from '../ui.js';

function part(x, key) {
  if (x === null || x === undefined) return null;
  if (x.error) return { error: x.error };
  return x[key] !== undefined ? x[key] : x;
}

export function landingView(ctx) {
  const chainBox = h('div', { id: 'chain' });
  const logBox = h('div', { id: 'landing-log' });
  const queueBox = h('div', { id: 'queue' });
  const txBox = h('div', { id: 'transactions' });
  const msg = h('div');
  const el = h('div', { class: 'page' },
    h('h1', { tabindex: '-1' }, 'Landing'), msg,
    section('Audit chain', chainBox),
    section('Landed', logBox),
    section('Transactions', txBox),
    section('Queue', queueBox));
  let tools = new Map();
  ctx.tools().then((t) => {
    tools = t;
  }, () => {});

  function renderChain(c) {
    if (!c) return fill(chainBox, empty('Not reported.'));
    if (c.error) return fill(chainBox, errorBox(c.error));
    const ok = c.valid !== undefined ? c.valid : c.ok;
    fill(chainBox,
      h('p', { id: 'chain-state' }, ok ? h('span', { class: 'badge badge-satisfied' }, 'intact') : h('span', { class: 'badge badge-unsatisfied' }, 'broken'),
        ' · ', String(c.checked ?? '?'), ' events checked · head ', h('code', { class: 'digest' }, c.head_digest || c.head || '?'),
        ' at seq ', String(c.last_seq ?? '?')),
      !ok ? h('p', { class: 'error' }, 'First invalid event: ', String(c.first_invalid_seq ?? '?'), ' — ', c.reason || '') : null,
      (c.unrecorded || []).length ? h('p', { class: 'error' }, 'Records without their event: ', c.unrecorded.map((u) => u.kind + ' ' + u.id).join(', ')) : null);
  }

  function renderLog(log) {
    if (!log) {
      return fill(logBox, empty(ctx.workspace && ctx.workspace.landing === 'files'
        ? 'This workspace lands changes as files, not git commits: what landed is in the transactions below.'
        : 'The landing log is not available to you.'));
    }
    if (log.error) return fill(logBox, errorBox(log.error));
    const commits = log.commits || [];
    fill(logBox,
      log.branch ? h('p', {}, 'Branch ', h('code', {}, log.branch)) : null,
      commits.length ? h('ol', { class: 'commits' }, commits.map((c) => h('li', { class: 'commit' },
        h('p', {}, h('code', { class: 'digest' }, (c.id || '').slice(0, 12)), ' ', h('strong', {}, c.summary || ''), ' — ', c.author || ''),
        (c.trailers || []).length ? h('dl', { class: 'trailers' }, c.trailers.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])) : null))) : empty('Nothing landed yet.'));
  }

  function renderQueue(q) {
    if (!q) {
      return fill(queueBox, tools.has('queue.list') ? empty('No queue report.')
        : h('p', { class: 'why-not' }, 'The queue is not available to ', h('strong', {}, ctx.session.actor),
          ': the server does not offer ', h('code', {}, 'queue.list'), ' to this account.'));
    }
    if (q.error) return fill(queueBox, errorBox(q.error));
    const entries = q.entries || q.items || [];
    fill(queueBox, entries.length ? table(entries, [
      ['Entry', (e) => h('code', {}, e.id)],
      ['Proposal', (e) => h('a', { href: route(ctx.wsName, 'proposals', e.proposal_id) }, e.proposal_id)],
      ['Lane', (e) => (e.lane === undefined || e.lane === null ? '—' : String(e.lane))],
      ['Status', (e) => badge(e.status)],
      ['State', (e) => (e.speculative || e.state ? h('code', {}, JSON.stringify(e.speculative || e.state)) : '—')],
      ['Returned because', (e) => (e.return_reason ? String(typeof e.return_reason === 'object' ? JSON.stringify(e.return_reason) : e.return_reason) : '—')],
      ['Enqueued', (e) => when(e.enqueued_at)],
    ]) : empty('The queue is empty.'));
  }

  // One note per tool this person is not offered, above the list; each
  // disabled button points at it (aria-describedby).
  function whyNotId(tool) {
    return 'why-not-' + tool.replace(/[^a-z]+/g, '-');
  }

  function whyNotNotes() {
    const missing = ['transaction.rollback', 'proposal.revert'].filter((t) => !tools.has(t));
    return missing.map((t) => h('p', { class: 'why-not', id: whyNotId(t) },
      t === 'transaction.rollback' ? 'Roll back' : 'Revert as a proposal', ' is not available to ', h('strong', {}, ctx.session.actor),
      ': the server does not offer ', h('code', {}, t), ' to this account.'));
  }

  function actionButton(label, tool, args, out, idBase) {
    const b = h('button', { type: 'button', class: 'btn btn-danger', id: idBase }, label);
    if (!tools.has(tool)) {
      b.disabled = true;
      b.setAttribute('aria-describedby', whyNotId(tool));
      return [b];
    }
    b.addEventListener('click', async () => {
      b.disabled = true;
      fill(out);
      try {
        const r = await ctx.ws.call(tool, args);
        const made = (r && (r.proposal || r.transaction)) || {};
        fill(out, h('p', { class: 'ok', role: 'status' }, 'Done: ', h('code', {}, tool), ' → ',
          r && r.proposal ? h('a', { href: route(ctx.wsName, 'proposals', made.id) }, made.id) : h('code', {}, made.id || '')));
      } catch (e) {
        fill(out, errorBox(e, 'Refused:'));
      } finally {
        b.disabled = false;
      }
    });
    return [b];
  }

  async function details(tx, box) {
    fill(box, h('p', { class: 'muted' }, 'Loading…'));
    try {
      const d = await ctx.ws.transaction(tx.id);
      const files = d.files || [];
      const phases = d.phases ? list(d.phases) : [];
      const commit = d.commit || null; // the git commit it landed as (git mode)
      const trailers = d.trailers || (commit && commit.trailers) || [];
      fill(box,
        files.length ? table(files, [['Path', (f) => f.path], ['Operation', (f) => f.operation], ['Before', (f) => h('code', { class: 'digest' }, f.before_digest || '—')], ['After', (f) => h('code', { class: 'digest' }, f.after_digest || '—')]], 'Files') : empty('No file.'),
        phases.length ? table(phases, [['Phase', (p) => p.phase || p.name || '?'], ['Status', (p) => (p.status ? badge(p.status) : '—')], ['At', (p) => when(p.at || p.created_at)], ['Detail', (p) => (p.detail ? JSON.stringify(p.detail) : '—')]], 'Phases') : null,
        commit ? h('p', { class: 'tx-commit' }, 'Landed as commit ', h('code', { class: 'digest' }, commit.id || '?'), ' ', h('strong', {}, commit.summary || '')) : null,
        trailers.length ? h('dl', { class: 'trailers' }, trailers.map((t) => (Array.isArray(t) ? [h('dt', {}, t[0]), h('dd', {}, t[1])] : [h('dt', {}, t.key || '?'), h('dd', {}, t.value || '')]))) : null,
        d.transaction && d.transaction.error ? pre(JSON.stringify(d.transaction.error, null, 2)) : null);
    } catch (e) {
      fill(box, errorBox(e));
    }
  }

  function list(x) {
    return Array.isArray(x) ? x : (x && (x.phases || x.items)) || [];
  }

  let txCursor = null;
  let txs = [];
  function renderTx() {
    if (!txs.length) return fill(txBox, empty('No transaction yet.'));
    const rows = txs.map((t) => {
      const out = h('div', { class: 'action-result' });
      const more = h('div', { class: 'tx-details' });
      const show = h('button', { type: 'button', class: 'btn btn-quiet' }, 'Details');
      show.addEventListener('click', () => details(t, more));
      const buttons = [show, ' '];
      if (t.status === 'applied') {
        buttons.push(...actionButton('Roll back', 'transaction.rollback', { transaction_id: t.id }, out, 'rollback-' + t.id));
        if (t.kind === 'apply') buttons.push(' ', ...actionButton('Revert as a proposal', 'proposal.revert', { proposal_id: t.proposal_id }, out, 'revert-' + t.id));
      }
      return h('li', { class: 'tx', 'data-transaction': t.id },
        h('p', {}, h('code', {}, t.id), ' ', badge(t.kind), ' ', badge(t.status), ' · ',
          h('a', { href: route(ctx.wsName, 'proposals', t.proposal_id) }, t.proposal_id), ' revision ', String(t.revision),
          ' · by ', actorText(t.actor), ' · ', when(t.created_at), ' · ', String(t.file_count ?? '?'), ' files',
          t.rollback_of ? [' · rolls back ', h('code', {}, t.rollback_of)] : null),
        h('div', { class: 'buttons' }, buttons), out, more);
    });
    const moreBtn = txCursor ? h('button', { type: 'button', class: 'btn' }, 'More') : null;
    if (moreBtn) moreBtn.addEventListener('click', () => loadTx(true));
    fill(txBox, whyNotNotes(), h('ul', { class: 'txs' }, rows), moreBtn);
  }

  async function loadTx(append) {
    try {
      const r = await ctx.ws.transactions(append && txCursor ? { cursor: txCursor } : {});
      const page = r.items || r.transactions || [];
      txs = append ? txs.concat(page) : page;
      txCursor = r.next_cursor || null;
      renderTx();
    } catch (e) {
      fill(txBox, errorBox(e, 'Could not list the transactions:'));
    }
  }

  async function load() {
    try {
      const r = await ctx.ws.landing();
      fill(msg);
      await ctx.tools().then((t) => {
        tools = t;
      }, () => {});
      renderChain(part(r.chain, 'chain'));
      renderLog(part(r.log, 'log'));
      renderQueue(part(r.queue, 'queue'));
    } catch (e) {
      fill(msg, errorBox(e, 'Could not load the landing report:'));
    }
    await loadTx(false);
  }

  const unsubscribe = live.subscribe(() => load());
  load();
  return { el, dispose: unsubscribe };
}
