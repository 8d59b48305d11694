// Small building blocks the views share. All text goes through text.js.
import { h } from './text.js';

/** An error box with the engine's code and message (role=alert). */
export function errorBox(err, prefix) {
  const code = err && err.code ? err.code : 'error';
  const message = err && err.message ? err.message : String(err);
  const box = h('div', { class: 'error', role: 'alert' },
    prefix ? h('span', { class: 'error-prefix' }, prefix + ' ') : null,
    h('code', { class: 'error-code' }, code), ' ',
    h('span', { class: 'error-message' }, message));
  const details = err && err.details && Object.keys(err.details).length ? err.details : null;
  if (details) box.appendChild(h('details', {}, h('summary', {}, 'details'), h('pre', { class: 'text', multiline: true }, JSON.stringify(details, null, 2))));
  return box;
}

export function section(title, ...children) {
  const id = 'sec-' + title.toLowerCase().replace(/[^a-z0-9]+/g, '-');
  return h('section', { class: 'panel', 'aria-labelledby': id }, h('h2', { id }, title), ...children);
}

export function empty(text) {
  return h('p', { class: 'muted' }, text);
}

/** A badge for a status value: class "badge badge-<value>". */
export function badge(value, label) {
  const v = String(value ?? 'unknown');
  return h('span', { class: ['badge', 'badge-' + v.replace(/[^a-z_]/g, '')] }, label ? label + ': ' + v : v);
}


/** A table: columns [[header, (row) => node|string]]. */
export function table(rows, columns, caption) {
  return h('table', { class: 'grid' },
    caption ? h('caption', {}, caption) : null,
    h('thead', {}, h('tr', {}, columns.map(([name]) => h('th', { scope: 'col' }, name)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, columns.map(([, f]) => h('td', {}, f(r)))))));
}

export function when(ts) {
  if (!ts) return '—';
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return String(ts);
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function actorText(a) {
  if (!a) return '—';
  if (typeof a === 'string') return a;
  return (a.kind || '?') + ':' + (a.id || '?');
}

let uniq = 0;
function nextId(prefix) {
  uniq += 1;
  return prefix + '-' + uniq;
}

/** A labelled textarea; returns [wrapper, textarea]. */
export function labelledTextarea(label, name, placeholder) {
  const id = nextId(name);
  const ta = h('textarea', { id, name, rows: '3', placeholder: placeholder || '' });
  return [h('div', { class: 'field' }, h('label', { for: id }, label), ta), ta];
}


export function route(ws, ...parts) {
  return '#/ws/' + encodeURIComponent(ws) + (parts.length ? '/' + parts.map(encodeURIComponent).join('/') : '');
}

/** The reason an action is not available to `actor`, in the engine's words (`why`). */
export function notAvailable(actor, ...why) {
  return h('span', {}, 'Not available to ', h('strong', {}, actor), ': ', ...why);
}

/**
 * Disable `controls` and show why in `whyNot` (the element their
 * aria-describedby names): after the engine refused this person, or when
 * the server does not offer the tool.
 */
export function disableWithReason(whyNot, controls, ...why) {
  for (const c of controls) if (c) c.disabled = true;
  whyNot.hidden = false;
  whyNot.replaceChildren(...why);
}
