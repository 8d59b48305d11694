// Keyboard shortcuts. Global: `g i` inbox, `g l` landing, `g c` claims,
// `?` help. A view adds its own (j/k files, n/p hunks, a approve, c
// request changes) with setViewKeys. Keys typed into a field are the
// field's, except Escape.
import { h } from './text.js';

let viewKeys = {};
let pendingG = 0;
let helpEl = null;
let lastFocus = null;
let nav = () => {};

export const HELP = [
  ['j / k', 'next / previous file'],
  ['n / p', 'next / previous hunk'],
  ['a', 'approve: opens the reason box'],
  ['c', 'request changes or comment: opens the reason box'],
  ['u', 'unified or side-by-side diff'],
  ['g i', 'my inbox'],
  ['g l', 'landing'],
  ['g c', 'claims'],
  ['?', 'this help'],
  ['Esc', 'close this help, leave a field'],
];

export function setViewKeys(keys) {
  viewKeys = keys || {};
}

function typing(target) {
  if (!target || !target.tagName) return false;
  const t = target.tagName;
  return t === 'INPUT' || t === 'TEXTAREA' || t === 'SELECT' || target.isContentEditable;
}

export function showHelp() {
  if (helpEl) return;
  lastFocus = document.activeElement;
  const close = h('button', { type: 'button', class: 'btn' }, 'Close');
  close.addEventListener('click', hideHelp);
  helpEl = h('div', { class: 'overlay', role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': 'help-title' },
    h('div', { class: 'overlay-box' },
      h('h2', { id: 'help-title' }, 'Keyboard shortcuts'),
      h('table', { class: 'grid keys' },
        h('tbody', {}, HELP.map(([k, what]) => h('tr', {}, h('th', { scope: 'row' }, h('kbd', {}, k)), h('td', {}, what))))),
      close));
  document.body.appendChild(helpEl);
  close.focus();
}

export function hideHelp() {
  if (!helpEl) return;
  helpEl.remove();
  helpEl = null;
  if (lastFocus && lastFocus.focus) lastFocus.focus();
}


/** Install the handler; `go(page)` navigates to 'inbox' | 'landing' | 'claims'. */
export function install(go) {
  nav = go;
  document.addEventListener('keydown', (e) => {
    if (helpEl && e.key === 'Tab') {
      // The help is modal: its one control keeps the focus.
      e.preventDefault();
      helpEl.querySelector('button').focus();
      return;
    }
    if (e.key === 'Escape') {
      if (helpEl) {
        e.preventDefault();
        hideHelp();
      } else if (typing(e.target)) {
        e.target.blur();
      }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target) || helpEl) return;
    if (pendingG && Date.now() - pendingG < 1500) {
      pendingG = 0;
      const page = { i: 'inbox', l: 'landing', c: 'claims' }[e.key];
      if (page) {
        e.preventDefault();
        nav(page);
      }
      return;
    }
    if (e.key === 'g') {
      pendingG = Date.now();
      return;
    }
    if (e.key === '?') {
      e.preventDefault();
      showHelp();
      return;
    }
    const fn = viewKeys[e.key];
    if (fn) {
      e.preventDefault();
      fn(e);
    }
  });
}
