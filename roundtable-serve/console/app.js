// The review console: plain ES modules, no build step, served by
// `roundtable serve` from the files embedded in its binary. It shows what
// the API says and holds no rule of its own: who may do what is the
// engine's answer (the tools the server offers this person, proposal.status,
// and the engine's refusal when an action is tried).
//
// Routes (hash): #/ws/{ws}/inbox, #/ws/{ws}/proposals/{id},
// #/ws/{ws}/landing, #/ws/{ws}/claims, #/ws/{ws}/blame/{path},
// #/ws/{ws}/undo/{agent}.
import * as api from './api.js';
import * as live from './live.js';
import * as keys from './keys.js';
import { h } from './text.js';
import { errorBox, route } from './ui.js';
import { signinView } from './views/signin.js';
import { inboxView } from './views/inbox.js';
import { proposalView } from './views/proposal.js';
import { landingView } from './views/landing.js';
import { claimsView } from './views/claims.js';
import { blameView } from './views/blame.js';
import { undoView } from './views/undo.js';

const state = {
  session: null,
  workspaces: null,
  tools: new Map(), // workspace -> Promise<Map<name, tool>>
  view: null,
  lastWs: null,
};

const $ = (id) => document.getElementById(id);

function parse(hash) {
  const parts = hash.replace(/^#\/?/, '').split('/').filter((p) => p !== '').map((p) => {
    try {
      return decodeURIComponent(p);
    } catch (e) {
      return p;
    }
  });
  if (parts[0] !== 'ws' || parts.length < 2) return null;
  return { ws: parts[1], page: parts[2] || 'inbox', id: parts[3] || null };
}

function toolsFor(ws) {
  if (!state.tools.has(ws)) {
    const p = api.ws(ws).tools().then((r) => {
      const list = Array.isArray(r) ? r : r.tools || r.items || [];
      return new Map(list.map((t) => [t.name, t]));
    });
    p.catch(() => state.tools.delete(ws));
    state.tools.set(ws, p);
  }
  return state.tools.get(ws);
}

function dispose() {
  keys.setViewKeys({});
  if (state.view && state.view.dispose) state.view.dispose();
  state.view = null;
}

function renderHeader(r) {
  const nav = $('nav');
  const who = $('who');
  nav.replaceChildren();
  who.replaceChildren();
  if (!state.session) return;
  if (r) {
    const pages = [['inbox', 'My inbox'], ['landing', 'Landing'], ['claims', 'Claims'], ['blame', 'Blame']];
    nav.appendChild(h('ul', {}, pages.map(([page, label]) => h('li', {},
      h('a', { href: route(r.ws, page), 'aria-current': r.page === page ? 'page' : null }, label)))));
    if (state.workspaces && state.workspaces.length > 1) {
      const sel = h('select', { id: 'ws-select', 'aria-label': 'Workspace' },
        state.workspaces.map((w) => h('option', { value: w.name, selected: w.name === r.ws }, w.name)));
      sel.addEventListener('change', () => {
        location.hash = route(sel.value, 'inbox');
      });
      nav.appendChild(h('label', { class: 'ws-label', for: 'ws-select' }, 'Workspace '));
      nav.appendChild(sel);
    } else {
      nav.appendChild(h('span', { class: 'ws-name' }, 'workspace ', h('code', {}, r.ws)));
    }
  }
  const out = h('button', { type: 'button', class: 'btn btn-quiet', id: 'sign-out' }, 'Sign out');
  out.addEventListener('click', async () => {
    try {
      await api.signOut();
    } catch (e) {
      // The session is forgotten here either way.
    }
    state.session = null;
    state.tools.clear();
    live.disconnect();
    location.hash = '';
    render();
  });
  who.appendChild(h('span', { class: 'actor', id: 'actor' }, 'Signed in as ', h('strong', {}, state.session.actor)));
  who.appendChild(out);
}

async function render() {
  dispose();
  const main = $('main');
  if (!state.session) {
    renderHeader(null);
    live.disconnect();
    state.view = signinView({
      onSignedIn: (s) => {
        state.session = s;
        state.tools.clear();
        state.workspaces = null;
        render();
      },
    });
    main.replaceChildren(state.view.el);
    return;
  }
  if (!state.workspaces) {
    try {
      const r = await api.workspaces();
      state.workspaces = r.workspaces || r.items || [];
    } catch (e) {
      if (!state.session) return; // signed out by a 401
      main.replaceChildren(errorBox(e, 'Could not list the workspaces:'));
      return;
    }
  }
  let r = parse(location.hash);
  const names = state.workspaces.map((w) => w.name);
  if (!r || !names.includes(r.ws)) {
    if (names.length === 0) {
      main.replaceChildren(h('p', {}, 'This server serves no workspace.'));
      return;
    }
    const ws = r && !names.includes(r.ws) ? names[0] : state.lastWs && names.includes(state.lastWs) ? state.lastWs : names[0];
    location.replace(route(ws, 'inbox'));
    return; // hashchange renders
  }
  state.lastWs = r.ws;
  renderHeader(r);
  const wsApi = api.ws(r.ws);
  live.connect(r.ws, wsApi.eventsUrl());
  const ctx = {
    session: state.session,
    wsName: r.ws,
    ws: wsApi,
    workspace: state.workspaces.find((w) => w.name === r.ws),
    tools: () => toolsFor(r.ws),
    setKeys: keys.setViewKeys,
  };
  const views = {
    inbox: () => inboxView(ctx),
    proposals: () => (r.id ? proposalView(ctx, r.id) : inboxView(ctx)),
    landing: () => landingView(ctx),
    claims: () => claimsView(ctx),
    blame: () => blameView(ctx, r.id),
    undo: () => (r.id ? undoView(ctx, r.id) : inboxView(ctx)),
  };
  const make = views[r.page];
  if (!make) {
    main.replaceChildren(h('p', {}, 'No such page. ', h('a', { href: route(r.ws, 'inbox') }, 'Go to the inbox')));
    return;
  }
  state.view = make();
  main.replaceChildren(state.view.el);
}

function showLive(s) {
  const el = $('live-status');
  const text = { live: 'Live', connecting: 'Connecting…', reconnecting: 'Reconnecting…', closed: 'Not live' }[s] || s;
  el.className = 'live-status live-' + s;
  el.textContent = text;
}

async function boot() {
  api.setUnauthorizedHandler(() => {
    if (!state.session) return;
    state.session = null;
    state.tools.clear();
    render();
  });
  keys.install((page) => {
    const r = parse(location.hash);
    if (state.session && r) location.hash = route(r.ws, page);
  });
  live.onState(showLive);
  window.addEventListener('hashchange', render);
  try {
    state.session = await api.currentSession();
  } catch (e) {
    $('main').replaceChildren(errorBox(e, 'Could not reach the server:'));
    return;
  }
  render();
}

boot();
