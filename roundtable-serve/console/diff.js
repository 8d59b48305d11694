// Rendering one file's hunks as the server sends them
// (GET .../proposals/{id}/diff?path=): each line with its kind, old and new
// line numbers, text, and syntax classes as UTF-8 byte ranges into the
// text. Every piece of text goes through text.js; a class only picks a
// CSS class from a fixed list.
import { h, appendText } from './text.js';

const SYNTAX = new Set(['kw', 'str', 'com', 'num', 'fn', 'ty']);
const encoder = new TextEncoder();

// Split `text` into [piece, class|null] runs from byte-range classes.
// Ranges are UTF-8 byte offsets; a range that does not fall on character
// boundaries, overlaps an earlier one or runs past the end is ignored
// rather than guessed at.
export function runs(text, classes) {
  if (!Array.isArray(classes) || classes.length === 0) return [[text, null]];
  // byte offset -> UTF-16 index, at every character boundary
  const at = new Map();
  let byte = 0;
  let idx = 0;
  for (const ch of text) {
    at.set(byte, idx);
    byte += encoder.encode(ch).length;
    idx += ch.length;
  }
  at.set(byte, idx);
  const sorted = classes
    .filter((c) => Array.isArray(c) && c.length === 3 && SYNTAX.has(c[2]))
    .map(([s, e, k]) => [Number(s), Number(e), k])
    .sort((a, b) => a[0] - b[0]);
  const out = [];
  let pos = 0;
  for (const [s, e, k] of sorted) {
    const si = at.get(s);
    const ei = at.get(e);
    if (si === undefined || ei === undefined || si < pos || ei <= si) continue;
    if (si > pos) out.push([text.slice(pos, si), null]);
    out.push([text.slice(si, ei), k]);
    pos = ei;
  }
  if (pos < text.length) out.push([text.slice(pos), null]);
  return out;
}

function code(line) {
  const el = h('span', { class: 'code' });
  for (const [piece, cls] of runs(String(line.text ?? ''), line.classes)) {
    if (cls) {
      const span = h('span', { class: 'syn-' + cls });
      appendText(span, piece);
      el.appendChild(span);
    } else {
      appendText(el, piece);
    }
  }
  if (el.querySelector('.mark-ctl, .mark-bidi')) el.classList.add('has-hidden');
  return el;
}

const SIGN = { add: '+', del: '-', context: ' ' };
const KIND = { add: 'line-add', del: 'line-del', context: 'line-ctx' };

function num(n) {
  return h('span', { class: 'ln', 'aria-hidden': 'true' }, n === null || n === undefined ? '' : String(n));
}

function unifiedRow(line) {
  const kind = KIND[line.kind] ? line.kind : 'context';
  return h('div', { class: ['row', KIND[kind]] },
    num(line.old_no), num(line.new_no),
    h('span', { class: 'sign', 'aria-hidden': 'true' }, SIGN[kind]),
    code(line));
}

function half(line, side) {
  if (!line) return h('div', { class: ['half', 'half-empty'] }, num(null), h('span', { class: 'code' }));
  const kind = KIND[line.kind] ? line.kind : 'context';
  return h('div', { class: ['half', KIND[kind]] }, num(side === 'old' ? line.old_no : line.new_no), code(line));
}

// Side by side: context lines on both sides; a run of deletions paired
// with the run of additions that follows it, row by row.
function splitRows(lines) {
  const rows = [];
  let i = 0;
  while (i < lines.length) {
    const l = lines[i];
    if (l.kind === 'del' || l.kind === 'add') {
      const dels = [];
      const adds = [];
      while (i < lines.length && lines[i].kind === 'del') dels.push(lines[i++]);
      while (i < lines.length && lines[i].kind === 'add') adds.push(lines[i++]);
      for (let j = 0; j < Math.max(dels.length, adds.length); j++) {
        rows.push(h('div', { class: 'row split' }, half(dels[j], 'old'), half(adds[j], 'new')));
      }
    } else {
      rows.push(h('div', { class: 'row split' }, half(l, 'old'), half(l, 'new')));
      i++;
    }
  }
  return rows;
}

// The symbols a hunk changes, as the server lists them (`symbols`:
// {name, kind, change}, innermost first), or the one `symbol` it names.
function symbolLabel(hk) {
  const list = Array.isArray(hk.symbols) && hk.symbols.length ? hk.symbols : hk.symbol ? [hk.symbol] : [];
  if (!list.length) return h('span', { class: 'hunk-symbol muted' }, 'no symbol changed');
  return h('span', { class: 'hunk-symbol' }, list.length > 1 ? 'symbols ' : 'symbol ',
    list.map((sy, i) => [i ? ', ' : '', typeof sy === 'string' ? h('code', {}, sy)
      : [h('code', {}, sy.name || '?'), ' (', [sy.kind, sy.change].filter(Boolean).join(', '), ')']]));
}

/** One hunk: its header, the symbols it changes, the claims covering it, its lines. */
export function hunk(hk, mode) {
  const label = h('div', { class: 'hunk-head' },
    h('code', { class: 'hunk-range' }, hk.header || ''),
    symbolLabel(hk),
    claimsOf(hk).length
      ? h('span', { class: 'hunk-claim' }, claimsOf(hk).length > 1 ? 'claims ' : 'claim ',
        claimsOf(hk).map((c, i) => [i ? ', ' : '', h('code', {}, typeof c === 'string' ? c : claimText(c))]))
      : h('span', { class: 'hunk-claim muted' }, 'no claim covers it'));
  const lines = Array.isArray(hk.lines) ? hk.lines : [];
  const body = h('div', { class: ['hunk-lines', mode === 'split' ? 'split-mode' : 'unified-mode'] },
    mode === 'split' ? splitRows(lines) : lines.map(unifiedRow));
  return h('section', { class: 'hunk', tabindex: '-1' }, label, body);
}

// The active claims covering a hunk: `claims` (a list), or one `claim`.
function claimsOf(hk) {
  if (Array.isArray(hk.claims)) return hk.claims;
  return hk.claim ? [hk.claim] : [];
}

function claimText(c) {
  const parts = [c.resource_id || c.resource, c.agent_id || c.holder, c.until || c.expires_at ? 'until ' + (c.until || c.expires_at) : null].filter(Boolean);
  return parts.length ? parts.join(' · ') : JSON.stringify(c);
}
