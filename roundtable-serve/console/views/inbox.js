// My inbox: what waits on the signed-in person in this workspace
// (GET .../inbox: the engine's inbox.list for this actor), newest first.
// Live: the list is fetched again when the workspace's event stream
// reports anything; there is no timer.
import * as live from '../live.js';
import { h } from '../text.js';
import { errorBox, badge, route, table, when } from '../ui.js';

const ACTION = {
  vote: 'Review and vote',
  security_review: 'Security review',
  human_approval: 'Approve as a person',
  run_check: 'Run a check',
  run_queue_check: 'Run a queue check',
  fix_check: 'A required check failed',
  apply: 'Apply',
  request_review: 'Ask for review',
  rebase_or_attach: 'Rebase or attach a revision',
  answer_votes: 'Answer the blocking votes',
  claim: 'Claim what it touches',
  wait: 'Wait',
};

function updated(item) {
  const p = item.proposal || {};
  return p.updated_at || p.created_at || '';
}

function itemEl(ctx, item) {
  const p = item.proposal || {};
  const title = h('a', { href: route(ctx.wsName, 'proposals', p.id || ''), class: 'item-title' }, p.title || p.id || '(untitled)');
  return h('li', { class: 'inbox-item', 'data-proposal': p.id || '' },
    h('div', { class: 'item-line' }, title, ' ', badge(p.risk, 'risk'), ' ', badge(p.status)),
    h('div', { class: 'item-line' },
      h('strong', { class: 'item-action' }, ACTION[item.action] || item.action || ''),
      ' (asked of: ', h('span', {}, item.role || '?'), ')',
      ' · revision ', String(item.revision ?? p.latest_revision ?? '?'),
      ' · by ', h('span', {}, p.author || '?'),
      ' · ', h('code', {}, p.id || ''),
      ' · updated ', when(updated(item))),
    item.why ? h('p', { class: 'item-why' }, item.why) : null);
}

export function inboxView(ctx) {
  const list = h('ul', { class: 'inbox', id: 'inbox-list', 'aria-live': 'polite' });
  const msg = h('div');
  const more = h('button', { type: 'button', class: 'btn', hidden: true }, 'More');
  const open = h('div', { id: 'open-proposals' });
  const el = h('div', { class: 'page' },
    h('h1', { tabindex: '-1' }, 'My inbox'),
    h('p', { class: 'muted' }, 'What waits on you in ', h('code', {}, ctx.wsName), '. It updates as agents and people act.'),
    msg, list, more,
    h('h2', { class: 'spaced' }, 'In review'),
    h('p', { class: 'muted' }, 'Every proposal in review; who acts next is on its page.'),
    open);
  let cursor = null;
  let items = [];
  let generation = 0;

  function draw() {
    const sorted = [...items].sort((a, b) => (updated(b) > updated(a) ? 1 : updated(b) < updated(a) ? -1 : 0));
    list.replaceChildren(...sorted.map((i) => itemEl(ctx, i)));
    if (sorted.length === 0) list.appendChild(h('li', { class: 'muted' }, 'Nothing waits on you.'));
    more.hidden = !cursor;
  }

  // A page of the inbox examines a number of open proposals and lists
  // what waits on this person among them, so it can hold few items, or
  // none, and still have a next page: follow pages until there is a
  // screenful or a few pages were read.
  const WANT = 20;
  const MAX_PAGES = 5;
  async function load(append) {
    const gen = ++generation;
    try {
      let got = [];
      let next = append ? cursor : null;
      for (let pages = 0; pages < MAX_PAGES; pages++) {
        const r = await ctx.ws.inbox(next ? { cursor: next } : {});
        if (gen !== generation) return; // a newer load is under way
        got = got.concat(r.items || []);
        next = r.next_cursor || null;
        if (!next || got.length >= WANT) break;
      }
      items = append ? items.concat(got) : got;
      cursor = next;
      msg.replaceChildren();
      draw();
    } catch (e) {
      if (gen === generation) msg.replaceChildren(errorBox(e, 'Could not load the inbox:'));
    }
  }

  async function loadOpen() {
    try {
      const r = await ctx.ws.proposals({ status: 'in_review', limit: 50 });
      const rows = r.items || [];
      open.replaceChildren(rows.length ? table(rows, [
        ['Proposal', (p) => h('a', { href: route(ctx.wsName, 'proposals', p.proposal_id || '') }, p.title || p.proposal_id || '')],
        ['Author', (p) => p.author || '?'],
        ['Risk', (p) => badge(p.risk)],
        ['Revision', (p) => String(p.revision ?? '?')],
        ['Updated', (p) => when(p.updated_at)],
      ]) : h('p', { class: 'muted' }, 'No proposal is in review.'));
    } catch (e) {
      open.replaceChildren(errorBox(e, 'Could not list the proposals:'));
    }
  }

  more.addEventListener('click', () => load(true));
  // The inbox follows every event (a vote or a check can change what waits
  // on this person); the list of proposals in review only changes with a
  // proposal's own events.
  const unsubscribe = live.subscribe(() => load(false));
  const unsubscribeOpen = live.subscribe(() => loadOpen(), { filter: (ev) => !ev.kind || ev.kind.startsWith('proposal.') });
  load(false);
  loadOpen();
  return {
    el,
    dispose() {
      unsubscribe();
      unsubscribeOpen();
    },
  };
}
