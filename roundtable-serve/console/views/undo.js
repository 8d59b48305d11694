// "Undo this agent's work…": pick a point among what the agent landed (its
// applied proposals, each with the time it landed and its title), an agent
// to author the undo, and whether to disable the agent too; the page says
// what will happen, then asks proposal.revert_agent (POST
// .../agents/{id}/revert) as the signed-in person. The engine makes one
// governed proposal that reverts those landings; it is reviewed and landed
// like any change. The console then opens that proposal and shows what the
// tool reported: what it reverts and where it left later work as it is
// (conflicts). A person the engine refuses sees its reason beside the
// disabled button.
import { h, fill } from '../text.js';
import { errorBox, section, empty, route, notAvailable, disableWithReason } from '../ui.js';

/** A landing time to the millisecond: an agent's landings are often seconds apart. */
function exact(ts) {
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? String(ts || '—') : d.toISOString().replace('T', ' ');
}

// The last undo this page made, for the proposal page to show once.
let lastUndo = null;

/** The report of the undo that made proposal `id`, once (null otherwise). */
export function takeUndoReport(id) {
  if (!lastUndo || !lastUndo.proposal || lastUndo.proposal.id !== id) return null;
  const r = lastUndo;
  lastUndo = null;
  return r;
}

/** What proposal.revert_agent reported: what it reverts, and its conflicts. */
export function undoReport(ctx, r) {
  const reverted = r.reverted || [];
  const conflicts = r.conflicts || [];
  return h('section', { class: 'panel undo-report', 'aria-labelledby': 'undo-report-title' },
    h('h2', { id: 'undo-report-title' }, 'The undo you asked for'),
    h('p', {}, 'This proposal reverts ', String(reverted.length), reverted.length === 1 ? ' landing' : ' landings',
      r.disabled ? '; the agent was disabled.' : '.', ' It lands only after review, like any change.'),
    reverted.length ? h('ul', { id: 'undo-reverted' }, reverted.map((l) => h('li', {},
      h('a', { href: route(ctx.wsName, 'proposals', l.proposal_id) }, l.proposal_id), ' revision ', String(l.revision ?? '?'),
      ', landed ', exact(l.landed_at)))) : null,
    conflicts.length
      ? [h('h3', {}, 'Conflicts: kept as they are now'),
        h('ul', { id: 'undo-conflicts', class: 'undo-conflicts' }, conflicts.map((c) => h('li', { class: 'undo-conflict' },
          h('code', {}, c.path), ' line ', String(c.line), c.lines ? [' (', String(c.lines), c.lines === 1 ? ' line)' : ' lines)'] : ' (deleted since)',
          ': the change of ', h('a', { href: route(ctx.wsName, 'proposals', c.proposal_id) }, c.proposal_id),
          ' is not undone there — edited later by ',
          (c.later || []).map((x, i) => [i ? ', ' : '', h('strong', {}, x.agent_id), ' (', h('a', { href: route(ctx.wsName, 'proposals', x.proposal_id) }, x.proposal_id), ')'])
          )))]
      : h('p', { id: 'undo-conflicts-none' }, 'No conflict: every reverted line is undone.'));
}

export function undoView(ctx, agent) {
  const head = h('h1', { tabindex: '-1' }, 'Undo the work of ', h('code', {}, agent || '?'));
  const box = h('div', { id: 'undo' }, h('p', { class: 'muted' }, 'Loading…'));
  const el = h('div', { class: 'page undo-page' }, head, section('What to undo', box));

  function render(landings, agents, offered) {
    if (!landings.length) {
      return fill(box, empty('Nothing ' + agent + ' landed is applied now: there is nothing to undo.'));
    }
    // Since: one of its landings, oldest first; the undo takes that one and
    // every later one of this agent.
    const radios = [];
    const since = h('fieldset', { class: 'action', id: 'undo-since' },
      h('legend', {}, 'Undo what ', agent, ' landed since'),
      h('ol', { class: 'undo-landings' }, landings.map((l, i) => {
        const id = 'since-' + i;
        const r = h('input', { type: 'radio', name: 'since', id, value: String(i), checked: i === 0 });
        radios.push(r);
        return h('li', { 'data-proposal': l.proposal_id },
          r, ' ', h('label', { for: id }, exact(l.landed_at), ' — ', h('strong', {}, l.title || '(untitled)'), ' (', l.proposal_id, ')'));
      })));
    const others = agents.filter((a) => a.id !== agent && a.enabled !== false);
    const authors = others.filter((a) => (a.roles || []).includes('author'));
    const pick = (authors.length ? authors : others);
    const author = h('select', { id: 'undo-author', name: 'author' },
      pick.map((a) => h('option', { value: a.id }, a.id + (a.display_name ? ' — ' + a.display_name : ''))));
    const authorField = h('div', { class: 'field' },
      h('label', { for: 'undo-author' }, 'Agent that authors the undo proposal (it claims, revises and answers review like any author)'), author);
    const disable = h('input', { type: 'checkbox', id: 'undo-disable', name: 'disable' });
    const disableField = h('p', {}, disable, ' ',
      h('label', { for: 'undo-disable' }, 'Also disable ', h('code', {}, agent), ' (in the same step: every tool call it makes is refused from then on)'));
    const plan = h('div', { id: 'undo-plan', class: 'undo-plan', 'aria-live': 'polite' });
    const whyNot = h('p', { class: 'why-not', id: 'why-not-undo', hidden: true });
    const go = h('button', { type: 'button', class: 'btn btn-danger', id: 'undo-go', 'aria-describedby': 'undo-plan why-not-undo' }, 'Propose the undo');
    const result = h('div', { class: 'action-result', id: 'undo-result', 'aria-live': 'polite' });

    function chosen() {
      const r = radios.find((x) => x.checked);
      return r ? landings[Number(r.value)] : null;
    }

    function explain() {
      const from = chosen();
      const count = from ? landings.filter((l) => l.landed_at >= from.landed_at).length : 0;
      fill(plan,
        h('p', {}, 'This makes ', h('strong', {}, 'one governed proposal'), ' that reverts the ', String(count),
          count === 1 ? ' landing' : ' landings', ' of ', h('code', {}, agent), ' since ', from ? exact(from.landed_at) : '—',
          ', authored by ', h('code', {}, author.value || '?'), '. Nothing changes on the branch now: the proposal must be reviewed and landed like any change.'),
        h('p', {}, 'Work other agents did later on the same lines is kept as it is and listed as a conflict for the reviewer.'),
        disable.checked ? h('p', { class: 'why-not' }, h('code', {}, agent), ' is also disabled.') : null);
    }
    for (const r of radios) r.addEventListener('change', explain);
    author.addEventListener('change', explain);
    disable.addEventListener('change', explain);

    const controls = [go, author, disable, ...radios];
    if (!offered) {
      disableWithReason(whyNot, controls, notAvailable(ctx.session.actor, 'the server does not offer ', h('code', {}, 'proposal.revert_agent'), ' to this account.'));
    } else if (!pick.length) {
      disableWithReason(whyNot, [go], 'No other enabled agent can author the undo proposal.');
    }

    go.addEventListener('click', async () => {
      const from = chosen();
      if (!from) return;
      go.disabled = true;
      fill(result, h('p', { class: 'muted' }, 'Asking…'));
      let forbidden = false;
      try {
        const r = await ctx.ws.revertAgent(agent, { since: from.landed_at, author_agent_id: author.value, disable: disable.checked });
        lastUndo = r;
        fill(result, h('p', { class: 'ok', role: 'status' }, 'Proposed: ', h('a', { href: route(ctx.wsName, 'proposals', r.proposal.id) }, r.proposal.id)));
        location.hash = route(ctx.wsName, 'proposals', r.proposal.id);
      } catch (e) {
        fill(result, errorBox(e, 'Refused:'));
        // The engine said this person may not: the controls stay disabled
        // and say why (aria-describedby), in the engine's own words.
        forbidden = e && e.code === 'forbidden';
        if (forbidden) disableWithReason(whyNot, controls, notAvailable(ctx.session.actor, e.message));
      } finally {
        if (!forbidden && offered) go.disabled = !pick.length;
      }
    });

    explain();
    fill(box, since, authorField, disableField, plan, h('div', { class: 'buttons' }, go), whyNot, result);
  }

  async function load() {
    try {
      const [l, a, tools] = await Promise.all([ctx.ws.landings(agent), ctx.ws.agents({ enabled: true }), ctx.tools()]);
      render(l.landings || [], a.agents || [], tools.has('proposal.revert_agent'));
    } catch (e) {
      fill(box, errorBox(e, 'Could not read what ' + agent + ' landed:'));
    }
  }

  load();
  return { el };
}
