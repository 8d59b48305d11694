// The one way a string from the API reaches the page. Everything an agent
// wrote (titles, summaries, reasons, paths, diff lines, check output) goes
// through here: text nodes only, never markup. Characters a reader could
// not see, or that reorder what they see, are shown as visible markers:
//
//   C0 controls and DEL   -> the Control Pictures glyph (ESC -> "␛")
//   C1 controls           -> "⟨U+0085⟩"
//   bidi controls         -> "⟨U+202E⟩" (U+202A-U+202E, U+2066-U+2069,
//                             U+200E, U+200F, U+061C)
//
// each in a <span class="mark-ctl"> or <span class="mark-bidi">, and the
// element holding them gets the class "has-hidden" and a title saying so.

const BIDI = new Set([0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
  0x2066, 0x2067, 0x2068, 0x2069]);

const WARNING = 'Holds control or bidirectional-override characters, shown as markers';

function hex(cp) {
  return 'U+' + cp.toString(16).toUpperCase().padStart(4, '0');
}

// What a code point shows as, or null when it is shown as itself.
// `keep` lists the controls kept as they are (newline and tab in
// multi-line text).
function marker(cp, keep) {
  if (keep.has(cp)) return null;
  if (cp < 0x20) return ['mark-ctl', String.fromCodePoint(0x2400 + cp)];
  if (cp === 0x7f) return ['mark-ctl', '\u2421'];
  if (cp >= 0x80 && cp <= 0x9f) return ['mark-ctl', '\u27e8' + hex(cp) + '\u27e9'];
  if (BIDI.has(cp)) return ['mark-bidi', '\u27e8' + hex(cp) + '\u27e9'];
  return null;
}

const KEEP_NONE = new Set();
const KEEP_LINES = new Set([0x0a, 0x09]);

/**
 * Append `value` to `el` as text. Returns true when a marker was needed
 * (then `el` is flagged). Options: `multiline` keeps newlines and tabs.
 */
export function appendText(el, value, opts = {}) {
  const s = value === null || value === undefined ? '' : String(value);
  const keep = opts.multiline ? KEEP_LINES : KEEP_NONE;
  let run = '';
  let marked = false;
  for (const ch of s) {
    const m = marker(ch.codePointAt(0), keep);
    if (!m) {
      run += ch;
      continue;
    }
    if (run) {
      el.appendChild(document.createTextNode(run));
      run = '';
    }
    const span = document.createElement('span');
    span.className = m[0];
    span.textContent = m[1];
    span.title = m[0] === 'mark-bidi' ? 'bidirectional control ' + m[1] : 'control character ' + hex(ch.codePointAt(0));
    el.appendChild(span);
    marked = true;
  }
  if (run) el.appendChild(document.createTextNode(run));
  if (marked) flag(el);
  return marked;
}

/** Replace the content of `el` with `value` as text. */
export function setText(el, value, opts) {
  el.replaceChildren();
  return appendText(el, value, opts);
}

/** Mark `el` as holding hidden characters (a class and a title). */
export function flag(el) {
  el.classList.add('has-hidden');
  if (!el.title) el.title = WARNING;
}


const FORBIDDEN_ATTR = /^(on|style$|srcdoc$|formaction$)/i;

/**
 * Build an element: h('div', {class: 'x', 'aria-label': 'y'}, child, ...).
 * Children are nodes, strings (shown through appendText), arrays of
 * children, or null/false (skipped). Attribute values are set with
 * setAttribute; event-handler and style attributes are refused, and href
 * must be a same-document fragment or a path of this server.
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (FORBIDDEN_ATTR.test(k)) throw new Error('refused attribute ' + k);
    if (k === 'class') {
      el.className = Array.isArray(v) ? v.filter(Boolean).join(' ') : v;
    } else if (k === 'href') {
      const s = String(v);
      if (!(s.startsWith('#') || (s.startsWith('/') && !s.startsWith('//')))) throw new Error('refused href');
      el.setAttribute('href', s);
    } else if (k === 'multiline') {
      // handled with the children
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  add(el, children, { multiline: Boolean(attrs && attrs.multiline) });
  return el;
}

function add(el, children, opts) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) add(el, c, opts);
    else if (c instanceof Node) el.appendChild(c);
    else appendText(el, c, opts);
  }
}

/** Replace the children of `el` with `children` (as h() takes them: null and false skipped). */
export function fill(el, ...children) {
  el.replaceChildren();
  add(el, children, {});
  return el;
}

/** Multi-line text in a <pre> (check output, reasons, summaries). */
export function pre(value, cls) {
  return h('pre', { class: cls || 'text', multiline: true }, value === null || value === undefined ? '' : String(value));
}
