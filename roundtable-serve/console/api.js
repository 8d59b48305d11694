// The console's one way to the server: the JSON API of `roundtable serve`
// under /api/v1. The session is a cookie the server set (HttpOnly: this
// script never sees it); every write carries the session's CSRF token and
// a fresh Idempotency-Key. Errors are the engine's: an ApiError holds its
// stable code, message and details as the server sent them.

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details || {};
  }
}

let csrf = null;
let onUnauthorized = () => {};

/** Called when a request comes back 401 (the session ended). */
export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

function freshKey() {
  if (globalThis.crypto && typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

async function request(method, path, body, { quiet401 = false } = {}) {
  const headers = { Accept: 'application/json' };
  const write = method !== 'GET' && method !== 'HEAD';
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (write) {
    if (csrf) headers['X-CSRF-Token'] = csrf;
    headers['Idempotency-Key'] = freshKey();
  }
  let res;
  try {
    res = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(0, 'network', 'The server could not be reached: ' + e.message, {});
  }
  const type = res.headers.get('Content-Type') || '';
  let data = null;
  if (type.includes('json')) {
    try {
      data = await res.json();
    } catch (e) {
      data = null;
    }
  }
  if (!res.ok) {
    const err = data && data.error ? data.error : {};
    const e = new ApiError(res.status, err.code || 'http_' + res.status, err.message || res.statusText || 'request failed', err.details);
    if (res.status === 401 && !quiet401) onUnauthorized(e);
    throw e;
  }
  return data;
}

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== null && v !== undefined && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? '?' + s : '';
}

const seg = encodeURIComponent;

/** The signed-in session, or null when there is none. */
export async function currentSession() {
  try {
    const s = await request('GET', '/api/v1/session', undefined, { quiet401: true });
    csrf = s.csrf;
    return s;
  } catch (e) {
    if (e.status === 401) return null;
    throw e;
  }
}

export async function signIn(token) {
  const s = await request('POST', '/api/v1/session', { token }, { quiet401: true });
  csrf = s.csrf;
  return s;
}

export async function signOut() {
  try {
    await request('DELETE', '/api/v1/session', undefined, { quiet401: true });
  } finally {
    csrf = null;
  }
}

export const get = (path, params) => request('GET', path + query(params));

export const workspaces = () => get('/api/v1/workspaces');

export function ws(name) {
  const base = '/api/v1/workspaces/' + seg(name);
  const p = (id) => base + '/proposals/' + seg(id);
  return {
    name,
    eventsUrl: (after) => base + '/events' + query({ after }),
    tools: () => get(base + '/tools'),
    call: (tool, args) => request('POST', base + '/tools/' + seg(tool), args || {}),
    inbox: (params) => get(base + '/inbox', params),
    proposals: (params) => get(base + '/proposals', params),
    proposal: (id) => get(p(id)),
    files: (id, params) => get(p(id) + '/files', params),
    diff: (id, params) => get(p(id) + '/diff', params),
    symbols: (id, params) => get(p(id) + '/symbols', params),
    interdiff: (id, from, to) => get(p(id) + '/interdiff', { from, to }),
    transactions: (params) => get(base + '/transactions', params),
    transaction: (id) => get(base + '/transactions/' + seg(id)),
    claims: (params) => get(base + '/claims', params),
    landing: () => get(base + '/landing'),
    blame: (path) => get(base + '/blame', { path }),
    agents: (params) => get(base + '/agents', params),
    landings: (agent) => get(base + '/agents/' + seg(agent) + '/landings'),
    revertAgent: (agent, args) => request('POST', base + '/agents/' + seg(agent) + '/revert', args || {}),
  };
}
