// Claims: who holds which files, directories and symbols, until when
// (GET .../claims: claim.list). Live: fetched again on claim events.
import * as live from '../live.js';
import { h } from '../text.js';
import { errorBox, badge, table, empty, when } from '../ui.js';

export function claimsView(ctx) {
  const box = h('div', { id: 'claims' });
  const more = h('button', { type: 'button', class: 'btn', hidden: true }, 'More');
  const el = h('div', { class: 'page' }, h('h1', { tabindex: '-1' }, 'Claims'),
    h('p', { class: 'muted' }, 'Who holds what in ', h('code', {}, ctx.wsName), ', and until when.'), box, more);
  let cursor = null;
  let items = [];

  function draw() {
    box.replaceChildren(items.length ? table(items, [
      ['Holder', (c) => c.agent_id || c.holder || '?'],
      ['Resource', (c) => h('code', {}, c.resource_id || c.resource || '?')],
      ['Lines', (c) => (c.span ? (c.span.start ?? '?') + '–' + (c.span.end ?? '?') : '—')],
      ['Type', (c) => c.type || '?'],
      ['Status', (c) => badge(c.status)],
      ['Until', (c) => when(c.expires_at || c.until)],
      ['Task', (c) => c.task_id || '—'],
    ], 'Claims') : empty('Nobody holds a claim.'));
    more.hidden = !cursor;
  }

  async function load(append) {
    try {
      const r = await ctx.ws.claims(append && cursor ? { cursor } : {});
      const page = r.items || r.claims || [];
      items = append ? items.concat(page) : page;
      cursor = r.next_cursor || null;
      draw();
    } catch (e) {
      box.replaceChildren(errorBox(e, 'Could not list the claims:'));
    }
  }
  more.addEventListener('click', () => load(true));
  const unsubscribe = live.subscribe(() => load(false), { filter: (ev) => !ev.kind || ev.kind.startsWith('claim.') || ev.kind.startsWith('transaction.') || ev.kind.startsWith('proposal.') });
  load(false);
  return { el, dispose: unsubscribe };
}
