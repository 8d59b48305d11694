// Live updates: one EventSource per workspace on its event stream
// (/api/v1/workspaces/{ws}/events). The console does not poll: a view
// subscribes and re-fetches what it shows when an event arrives. The
// server names each event (`event: <kind>`), which EventSource delivers
// only to listeners of that name, so a listener is added for every event
// kind the engine records, and `message` covers an unnamed event.
// EventSource reconnects by itself and resumes with Last-Event-ID.

const KINDS = [
  'workspace.configured', 'agent.registered', 'agent.updated', 'task.created',
  'proposal.created', 'proposal.revised', 'proposal.review_requested', 'proposal.withdrawn',
  'proposal.rejected', 'proposal.applied', 'proposal.stale', 'proposal.rolled_back',
  'vote.cast', 'decision.recorded', 'security.reviewed', 'human.approval_requested',
  'human.approved', 'test.recorded', 'claim.acquired', 'claim.renewed', 'claim.released',
  'claim.expired', 'policy.drafted', 'policy.activated', 'transaction.started',
  'transaction.applied', 'transaction.failed', 'transaction.recovered', 'transaction.rolled_back',
  'queue.enqueued', 'queue.removed', 'queue.checked', 'queue.check_requested', 'queue.landed',
  'queue.returned',
];

let current = null; // { ws, source, subscribers: Set, state }
const stateListeners = new Set();

function setState(state) {
  if (!current) return;
  current.state = state;
  for (const fn of stateListeners) fn(state);
}

/** Follow `state` changes ('connecting', 'live', 'reconnecting'). */
export function onState(fn) {
  stateListeners.add(fn);
  if (current) fn(current.state);
  return () => stateListeners.delete(fn);
}

function deliver(kind, ev) {
  let data = null;
  try {
    data = ev.data ? JSON.parse(ev.data) : null;
  } catch (e) {
    data = null;
  }
  const event = { kind: (data && data.kind) || kind, seq: ev.lastEventId, data };
  for (const fn of [...current.subscribers]) {
    try {
      fn(event);
    } catch (e) {
      console.warn('live subscriber failed', e);
    }
  }
}

/** Open (or keep) the stream of workspace `ws`, with `url` its address. */
export function connect(ws, url) {
  if (current && current.ws === ws) return;
  disconnect();
  const source = new EventSource(url, { withCredentials: true });
  current = { ws, source, subscribers: new Set(), state: 'connecting' };
  setState('connecting');
  source.onopen = () => setState('live');
  source.onerror = () => setState(source.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting');
  source.onmessage = (ev) => deliver('message', ev);
  for (const kind of KINDS) source.addEventListener(kind, (ev) => deliver(kind, ev));
}

export function disconnect() {
  if (current) {
    current.source.close();
    current = null;
    for (const fn of stateListeners) fn('closed');
  }
}

/**
 * Call `fn(event)` for each event `filter` keeps, debounced: a burst of events (a vote
 * writes one, an apply several) gives one call after `wait` ms, with the
 * last event. Returns the unsubscribe function.
 */
export function subscribe(fn, { filter = null, wait = 120 } = {}) {
  if (!current) return () => {};
  let timer = null;
  let last = null;
  const sub = (event) => {
    if (filter && !filter(event)) return;
    last = event;
    if (timer) return;
    timer = setTimeout(() => {
      timer = null;
      fn(last);
    }, wait);
  };
  const mine = current;
  mine.subscribers.add(sub);
  return () => {
    mine.subscribers.delete(sub);
    if (timer) clearTimeout(timer);
  };
}
