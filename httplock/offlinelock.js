// offlinelock.js: the browser side of an edit lock, served by httplock at
// GET /offlinelock.js. An ES module, no framework, no build step.
//
//   import { editLock } from "/offlinelock.js";
//   const lock = editLock({ resource: "customers", id: "129" });
//   form.onsubmit = (e) => { /* send lock.token in the Lock-Token header */ };
//
// It takes the lock when the page opens (resuming this tab's own lock after
// a reload), keeps it alive while the page is open (slower while the tab is
// hidden, not at all once the user has been idle for idleSeconds), and when
// the page is left cuts its lease to leaveSeconds: a closed tab frees the
// record within seconds, a reloaded one takes its own lock up again (the
// token is kept in sessionStorage, which is this tab's alone). It tells the
// page what happens to the lock: another
// user's lock, this user's lock in another tab, a take-over, a request to
// edit, a lock about to run out, a record that became free. Expiry is judged
// by the server's clock only (ttlRemainingSeconds), never the browser's.
// Pages that supply no callbacks get a plain banner. The tabs of one
// browser share one event stream (eventHub, below), so that a user's
// many tabs do not use up the browser's few connections to the host.

const TOKEN_HEADER = "Lock-Token";

/**
 * editLock takes and keeps the lock of one record.
 * @param {object} o
 * @param {string} o.resource   the resource's URL segment ("customers")
 * @param {string} o.id         the record's id
 * @param {string} [o.base]     where httplock is mounted ("" for the page's origin root)
 * @param {number} [o.ttlSeconds]        the lease asked for (default: the server's)
 * @param {number} [o.renewEverySeconds] how often to renew while visible (default: a third of the lease)
 * @param {number} [o.hiddenRenewEverySeconds] while hidden (default: two thirds of the lease)
 * @param {number} [o.idleSeconds]       stop renewing after this long without input (default 1800)
 * @param {number} [o.leaveSeconds]      the lease left when the page is left (default 5)
 * @param {string} [o.reason]            why the lock is taken, shown to others
 * @param {object} [o.on]  callbacks: locked(lock), lockedByOther(problem), lockedByYou(problem),
 *   takenOver(event), requested(event), released(event), expiring(event), idle(), error(err),
 *   viewers(list): the users who have the record open, [{user, since}], this user included,
 *   kept({data, why, at}): the page's unsaved form, handed back after a take-over, a lost lock or
 *   lock.keep() (a refused save), and again after a reload
 * @param {function} [o.unsaved] returns the page's unsaved form (any JSON value), or null when there
 *   is nothing unsaved: kept in this tab's sessionStorage when the lock is lost, never sent
 * @param {boolean} [o.banner]  show the default banner for events without a callback (default true)
 * @param {number} [o.confirmSeconds] after a 423, how long to wait for the event stream to tell
 *   that lock before looking it up once (GET …/lock), so that a lock shorter than one watch
 *   interval cannot leave the page showing it (default 3)
 * @param {boolean} [o.announce] announce each change of the lock to screen readers in a hidden
 *   aria-live region (default true; false for a page whose own callbacks write to a live region)
 *
 * "Locked by someone else" has one shape, whether it comes from a 423 (lockedByOther's argument
 * after a refused lock) or from an event (a lock seen on the stream): an object with lockedBy,
 * lockedSince and lockedUntil (ISO times, to the second), generation, and lockedByYou when the
 * holder is this user in another tab; an event also has acquiredAt, expiresAt and
 * ttlRemainingSeconds, a 423 its detail.
 *
 * Renewals that fail for want of an answer (a network error, a 5xx, 408, 429) are sent again with
 * backoff while the lease lasts; error(r) is called only when the lock is lost (refused, or the
 * lease ran out). A first lock that fails so calls error(r) with a detail, and the banner offers
 * to try again. A hidden tab renews every hiddenRenewEverySeconds, counted from the last renewal;
 * a browser that freezes or throttles it further lets the lease run out, and the page is told
 * when it wakes.
 */
export function editLock(o) {
  const base = (o.base || "") + "/" + encodeURIComponent(o.resource) + "/" + encodeURIComponent(o.id);
  const key = "offlinelock:" + base;
  const on = o.on || {};
  const record = o.resource + "/" + String(o.id);
  const hub = hubOf(o.base || "");
  const state = { token: sessionStorage.getItem(key) || "", lock: null, timer: 0, stopped: false, lastInput: Date.now(), unlisten: null, asking: false };

  // tell hands an event to the page's callback, or to the banner; its
  // text is also announced to screen readers (a live region) unless the
  // banner, itself a live region, shows it or the page says it announces
  // its own (announce: false).
  const tell = (name, arg, text, action) => {
    if (on[name]) {
      if (text && o.announce !== false) announce(text);
      return on[name](arg);
    }
    if (o.banner !== false && text) return banner(text, action);
    if (text && o.announce !== false) announce(text);
  };

  // post sends one request; a network error (the server never answered)
  // is status 0 with a detail, never a rejected promise.
  async function post(path, body, token) {
    const headers = { "Content-Type": "application/json" };
    if (token) headers[TOKEN_HEADER] = token;
    try {
      const r = await fetch(base + path, { method: "POST", headers, body: JSON.stringify(body || {}), credentials: "same-origin" });
      const text = await r.text();
      let json = null;
      try { json = text ? JSON.parse(text) : null; } catch (e) { json = null; }
      return { status: r.status, json, token: r.headers.get(TOKEN_HEADER) || "", retryAfter: Number(r.headers.get("Retry-After")) || 0 };
    } catch (e) {
      return { status: 0, json: { detail: "The server did not answer (" + e.message + ")." }, token: "", retryAfter: 0 };
    }
  }

  // transient says whether a failed request may succeed if sent again: no
  // answer, a server or proxy error, a timeout, too many requests.
  const transient = (status) => status === 0 || status >= 500 || status === 408 || status === 429;

  function hold(r) {
    state.other = null;
    if (r.token && r.token !== state.token) {
      // A new lock: a new id for it, which this tab's copies share and
      // which says "mine" over the BroadcastChannel in place of the token.
      state.tabLock = Math.random().toString(36).slice(2) + Date.now().toString(36);
      sessionStorage.setItem(key + ":id", state.tabLock);
    }
    state.token = r.token || state.token;
    state.lock = r.json;
    newest(r.json && r.json.generation);
    state.me = r.json && r.json.lockedBy;
    state.failures = 0;
    // The lease as this page's own clock runs: the server's remaining
    // seconds from the moment of its answer (never the server's clock
    // against the browser's).
    state.renewedAt = performance.now();
    state.heldUntil = state.renewedAt + ((r.json && r.json.ttlRemainingSeconds) || 0) * 1000;
    sessionStorage.setItem(key, state.token);
    schedule();
  }

  // newest notes the generation of a lock this page learnt of: the
  // record's locks only ever get newer generations.
  function newest(gen) { state.newest = Math.max(state.newest || 0, gen || 0); }

  function leaseSeconds() {
    return (state.lock && state.lock.ttlRemainingSeconds) || o.ttlSeconds || 300;
  }

  // schedule sets the next renewal a renewal interval after the last one
  // (shorter while visible, longer while hidden): a tab switch moves it
  // to that interval's end, never later and never to "now".
  function schedule(soon) {
    clearTimeout(state.timer);
    if (state.stopped || !state.token) return;
    const lease = leaseSeconds();
    const visible = document.visibilityState !== "hidden";
    let every = visible ? (o.renewEverySeconds || lease / 3) : (o.hiddenRenewEverySeconds || (lease * 2) / 3);
    if (soon === true) every = Math.min(every, 2); // a resumed lock: after the leaving page's last word
    const due = (state.renewedAt || performance.now()) + Math.max(1, every) * 1000;
    state.timer = setTimeout(renew, Math.max(0, due - performance.now()));
  }

  async function acquire() {
    const body = { ttlSeconds: o.ttlSeconds, reason: o.reason };
    const resuming = !!state.token;
    state.asking = true;
    const r = await post("/lock", body, state.token).finally(() => { state.asking = false; });
    if (transient(r.status)) {
      // Not taken, and not refused: said so, with a way to try again
      // (a kept token stays kept for that).
      return tell("error", r, "The lock could not be taken: " + ((r.json && r.json.detail) || "the server answered " + r.status + "."),
        { label: "Try again", run: () => acquire() });
    }
    if (r.status === 200 || r.status === 201) {
      hold(r);
      if (resuming) schedule(true);
      return tell("locked", state.lock, "");
    }
    state.token = "";
    sessionStorage.removeItem(key);
    // The kept token ran out and the record is free: a lock of our own
    // again (a held record is told below, as to any new lock).
    if (resuming && (r.status === 403 || (r.status === 423 && r.json && /lock-required$/.test(r.json.type || "")))) return acquire();
    if (r.status === 423 && r.json && r.json.lockedBy) {
      newest(r.json.generation);
      state.other = r.json;
      confirmLater(r.json);
    }
    if (r.status === 423 && r.json && r.json.lockedByYou) {
      state.me = r.json.lockedBy;
      return tell("lockedByYou", r.json, "You are editing this in another tab since " + clock(r.json.lockedSince) + ".",
        { label: "Edit here instead", run: () => api.takeOver("resumed in another tab") });
    }
    if (r.status === 423) {
      return tell("lockedByOther", r.json, "Locked by " + (r.json && r.json.lockedBy) + " since " + clock(r.json && r.json.lockedSince) + ".",
        { label: "Ask to edit", run: () => api.request() });
    }
    tell("error", r, "The lock could not be taken (" + r.status + ").");
  }

  async function renew() {
    if (state.stopped || !state.token) return;
    if (Date.now() - state.lastInput > (o.idleSeconds || 1800) * 1000) {
      state.stopped = true;
      return tell("idle", null, "You have been away; this record's lock will run out and others may edit it.");
    }
    const r = await post("/lock", { ttlSeconds: o.ttlSeconds }, state.token);
    if (state.stopped || !state.token) return; // ended meanwhile (a take-over told, a release)
    if (r.status === 200 || r.status === 201) return hold(r);
    if (transient(r.status)) {
      // A network blip, a proxy's 502 during a deploy, a 429: tried
      // again with backoff (1, 2, 4 … 15 s, or Retry-After) while the
      // lease lasts; the page is told only when the lock is lost.
      state.failures = (state.failures || 0) + 1;
      const wait = Math.max(r.retryAfter * 1000, Math.min(15000, 1000 * 2 ** (state.failures - 1)));
      const left = state.heldUntil - performance.now();
      if (left > 0) {
        clearTimeout(state.timer);
        state.timer = setTimeout(renew, Math.max(250, Math.min(wait, left - 500)));
        return;
      }
    }
    // Refused, or the lease ran out while the server could not be
    // reached. Refused before the stream told why: a take-over note may
    // follow (the renewal can beat the event), and is told as such.
    state.lostAt = (state.lock && state.lock.generation) || 1;
    state.token = "";
    state.stopped = true;
    sessionStorage.removeItem(key);
    keep("lost");
    tell("error", r, "Your lock on this record has ended: your changes can no longer be saved.");
  }

  // keep hands the page's unsaved form (o.unsaved()) back to it when the
  // lock is lost, taken over or a save refused, and keeps it in this
  // tab's sessionStorage, so that a reload offers it again (kept). It is
  // never sent anywhere; forgetKept() (at sign-out) and lock.forgetKept()
  // drop it.
  function keep(why) {
    const data = o.unsaved ? o.unsaved() : null;
    if (data === null || data === undefined) return;
    const kept = { data, why, at: new Date().toISOString() };
    try { sessionStorage.setItem(key + ":kept", JSON.stringify(kept)); } catch (e) { /* too large, or storage off: still handed over */ }
    tell("kept", kept, "Your unsaved changes are kept on this page.");
  }

  // lost ends this page's hold on a lock that ended or passed to someone
  // else without a take-over note.
  function lost(d, text) {
    state.lostAt = d.generation; // a take-over note may follow: told as such
    state.other = d.lockedBy ? d : null; // its end is told
    state.token = "";
    state.stopped = true;
    sessionStorage.removeItem(key);
    clearTimeout(state.timer);
    keep("lost");
    tell("error", { status: 0, json: { detail: text } }, text);
  }

  // confirmLater makes sure that a page refused by a lock learns of its
  // end: a lock shorter than one watch interval is never seen by the
  // event stream, so a lock the stream has not told within a few seconds
  // is looked up (GET …/lock): free, the page is told released; held by
  // a later lock, it is told that one.
  function confirmLater(p) {
    clearTimeout(state.check);
    const gen = p.generation || 0;
    state.check = setTimeout(async () => {
      if (state.token || !state.other || (state.seenGen || 0) >= gen) return;
      let r;
      try { r = await fetch(base + "/lock", { credentials: "same-origin" }); } catch (e) { return; }
      if (state.token || !state.other) return;
      if (r.status === 404) {
        state.other = null;
        return tell("released", { resource: o.resource, id: String(o.id) }, "This record is free now.", { label: "Edit it", run: () => acquire() });
      }
      const info = r.ok ? await r.json().catch(() => null) : null;
      if (info && info.generation !== gen) {
        watching(Object.assign({ lockedSince: since(info.acquiredAt), lockedUntil: since(info.expiresAt) }, info));
      }
    }, (o.confirmSeconds || 3) * 1000);
  }

  // watching tells a page that holds no lock who does now: this user
  // (another tab) or someone else.
  function watching(d) {
    // The lock this page gave up (release) is no other tab's: a late
    // event of it tells nothing.
    if (state.asking || (d.generation && d.generation === state.released)) return;
    const known = state.other && d.generation && state.other.generation === d.generation && state.other.lockedBy === d.lockedBy;
    state.other = known ? Object.assign({}, state.other, d) : d;
    state.seenGen = Math.max(state.seenGen || 0, d.generation || 0);
    if (known) return; // the lock the page shows already (its 423, then the stream's first event)
    if (state.me && d.lockedBy === state.me) {
      const p = Object.assign({ lockedSince: d.acquiredAt, lockedByYou: true }, d);
      return tell("lockedByYou", p, "You are editing this in another tab since " + clock(p.lockedSince) + ".",
        { label: "Edit here instead", run: () => api.takeOver("resumed in another tab") });
    }
    if (on.lockedByOther) on.lockedByOther(d);
  }

  // listen hands this record's events to the page: they come from the
  // event stream this browser's tabs share (eventHub), never a stream of
  // this page's own, so that a user's many tabs hold one of the browser's
  // few connections to the host between them.
  function listen() {
    if (typeof EventSource === "undefined") return;
    const mine = (d) => state.lock && d.generation === state.lock.generation;
    const handlers = {};
    handlers["taken-over"] = (d) => {
      if (!state.token && !(state.lostAt && d.generation >= state.lostAt)) return watching(d);
      if (mine(d)) return; // our own take-over
      state.lostAt = 0;
      state.other = d;
      state.token = "";
      state.stopped = true;
      sessionStorage.removeItem(key);
      clearTimeout(state.timer);
      tell("takenOver", d, d.by + " took over this record" + (d.reason ? " (" + d.reason + ")" : "") + ": your changes can no longer be saved.");
      keep("taken-over");
    };
    // Who else has the record open: the users of the record's pages,
    // this user's other tabs included, each once with since when.
    handlers.viewers = (d) => { if (on.viewers) on.viewers(d.viewers || []); };
    handlers.requested = (d) => { if (state.token) tell("requested", d, d.by + " asks to edit this record."); };
    handlers.released = (d) => {
      if (state.token && mine(d)) return lost(d, "Your lock on this record has ended: your changes can no longer be saved.");
      // A page told of someone else's lock (by a 423 or an event) is
      // told of its end; a stream's first event on a free record tells a
      // page that knew of no lock nothing.
      if (!state.token && state.other) {
        state.other = null;
        tell("released", d, "This record is free now.", { label: "Edit it", run: () => acquire() });
      }
    };
    handlers.expiring = (d) => { if (mine(d)) tell("expiring", d, "Your lock on this record runs out in " + d.ttlRemainingSeconds + " s."); };
    handlers.locked = (d) => {
      if (!state.token) return watching(d);
      if (state.lock && d.generation > state.lock.generation && !state.asking) {
        lost(d, d.lockedBy + " holds this record now: your changes can no longer be saved.");
      }
    };
    state.unlisten = hub.join(record, (name, d) => {
      // An event of a lock older than the newest this page knows of (a
      // stream's state read before a take-over this tab was already told
      // of by the tab that took it) is stale: it tells nothing.
      if (d.generation && d.generation < (state.newest || 0)) return;
      newest(d.generation);
      if (handlers[name]) handlers[name](d);
    });
  }

  function release() {
    if (!state.token) return;
    state.released = state.lock && state.lock.generation;
    const headers = {};
    headers[TOKEN_HEADER] = state.token;
    fetch(base + "/unlock", { method: "POST", headers, keepalive: true, credentials: "same-origin" }).catch(() => {});
    state.token = "";
    sessionStorage.removeItem(key);
  }

  // leave cuts the lease as the page goes: keepalive outlives the page
  // (sendBeacon cannot send the header). The token stays in this tab's
  // sessionStorage for a reload.
  function leave() {
    clearTimeout(state.timer);
    if (!state.token || state.stopped) return;
    const headers = { "Content-Type": "application/json" };
    headers[TOKEN_HEADER] = state.token;
    fetch(base + "/lock", { method: "POST", headers, keepalive: true, credentials: "same-origin",
      body: JSON.stringify({ ttlSeconds: o.leaveSeconds || 5 }) }).catch(() => {});
  }

  // A duplicated tab (or one opened with window.open) starts with a copy
  // of its opener's sessionStorage, the kept token too. Before a tab
  // resumes a kept token it asks this record's other tabs of the origin
  // whether one of them holds it; one that does answers, and the new tab
  // takes no part in that lock: it asks for one of its own, and the server
  // tells it "you are editing this in another tab". A reload has no such
  // tab left (its old page is gone), and resumes. The question and the
  // answer name the lock by an id of its own, kept beside the token: the
  // token never crosses the channel.
  state.tabLock = sessionStorage.getItem(key + ":id") || "";
  const channel = typeof BroadcastChannel === "undefined" ? null : new BroadcastChannel(key);
  if (channel) {
    channel.addEventListener("message", (m) => {
      if (m.data && m.data.who && state.token && m.data.who === state.tabLock && !state.stopped) channel.postMessage({ mine: state.tabLock });
    });
  }
  function heldElsewhere(token) {
    const id = state.tabLock;
    if (!channel || !token || !id) return Promise.resolve(false);
    return new Promise((resolve) => {
      const answer = (m) => {
        if (!m.data || m.data.mine !== id) return;
        clearTimeout(timer);
        channel.removeEventListener("message", answer);
        resolve(true);
      };
      const timer = setTimeout(() => { channel.removeEventListener("message", answer); resolve(false); }, 300);
      channel.addEventListener("message", answer);
      channel.postMessage({ who: id });
    });
  }

  const input = () => { state.lastInput = Date.now(); };
  for (const ev of ["keydown", "pointerdown", "input", "scroll"]) addEventListener(ev, input, { passive: true });
  document.addEventListener("visibilitychange", () => schedule());
  addEventListener("pagehide", leave);
  addEventListener("pageshow", (e) => { if (e.persisted) acquire(); }); // back from the page cache

  const api = {
    get token() { return state.token; },
    get lock() { return state.lock; },
    /** takeOver takes the lock over (policy permitting), fencing its holder. */
    async takeOver(reason) {
      state.asking = true;
      const r = await post("/lock/takeover", { reason: reason || "" }).finally(() => { state.asking = false; });
      if (r.status === 201) {
        state.stopped = false;
        hold(r);
        // This browser's other tabs of the record are told at once, as
        // the stream would tell them (never the token): a tab that held
        // the lock learns that it was taken over here, whatever its
        // stream is doing (reconnecting, reopened for another tab).
        const l = r.json || {};
        hub.tell("taken-over", { resource: o.resource, id: String(o.id), by: l.lockedBy, reason: reason || "", lockedBy: l.lockedBy,
          generation: l.generation, acquiredAt: l.acquiredAt, expiresAt: l.expiresAt, ttlRemainingSeconds: l.ttlRemainingSeconds,
          lockedSince: since(l.acquiredAt), lockedUntil: since(l.expiresAt) });
        return tell("locked", state.lock, "");
      }
      tell("error", r, (r.json && r.json.detail) || "The lock could not be taken over.");
    },
    /** request asks the holder to let this user edit; "released" says when it is free. */
    async request() {
      const r = await post("/lock/request", {});
      if (r.status !== 202) tell("error", r, (r.json && r.json.detail) || "The request could not be sent.");
      return r.status === 202;
    },
    /** retry asks for the lock again, as after a first lock that failed (error). */
    retry() { if (!state.token) return acquire(); },
    /** release gives the lock up now (after a save, or on cancel). */
    release() { state.stopped = true; clearTimeout(state.timer); release(); },
    /** keep hands the page's unsaved form back (kept) and keeps it for a reload: call it when a save is refused. */
    keep(why) { keep(why || "not-saved"); },
    /** kept is what this tab kept of the record's unsaved form ({data, why, at}), or null. */
    get kept() { try { return JSON.parse(sessionStorage.getItem(key + ":kept")); } catch (e) { return null; } },
    /** forgetKept drops it (copied, restored or discarded). */
    forgetKept() { sessionStorage.removeItem(key + ":kept"); },
    /** stop ends renewals and events without releasing. */
    stop() { state.stopped = true; clearTimeout(state.timer); if (state.unlisten) state.unlisten(); state.unlisten = null; },
  };
  listen();
  heldElsewhere(state.token).then((elsewhere) => {
    if (elsewhere) { // a duplicated tab: the lock is the other tab's
      state.token = "";
      sessionStorage.removeItem(key);
    }
    return acquire();
  }).then(() => {
    const kept = api.kept; // typing kept before a reload: offered again
    if (kept) tell("kept", kept, "Your unsaved changes from before are kept on this page.");
  });
  return api;
}

// The event stream a browser's tabs share. Each open edit page used to
// hold an event stream of its own, and so one of the few connections a
// browser keeps to a host over HTTP/1.1 (six in Chromium): with seven
// tabs, renewals waited behind the streams and locks ran out. Now one tab
// of the browser, the leader, holds one stream (GET …/lock/events?watch=…)
// for the records of all its tabs, and hands each event to the others
// over a BroadcastChannel; the leader is chosen with the Web Locks API
// (navigator.locks), so that when it closes the next tab in line takes
// the stream up at once. Tabs say which records they show ("want"), again
// every 10 s, and "bye" when they go; a tab not heard from in 35 s no
// longer counts. The leader says it is alive every 10 s; a visible tab
// that has not heard from it in 25 s (a frozen leader) takes the lead.
// Every stream starts with the state of each of its records, as the
// database has it, and the leader opens a new one
// whenever a tab comes or goes (keeping the old one for a moment, so that
// no event falls between the two) and when a new leader takes over: every
// tab is told its records' state then, whatever it missed. Only events
// cross the channel: no token, no session. Without Web Locks (a page that
// is not a secure context, an old browser) each page is its own leader.
const EVENT_NAMES = ["locked", "released", "taken-over", "expiring", "requested", "viewers"];
const WANT_EVERY = 10000; // how often a tab says which records it shows
const WANT_GONE = 35000; // a tab not heard from for this long no longer counts
const LEADER_GONE = 25000; // a leader not heard from for this long is taken over
const hubs = new Map(); // one hub per place httplock is mounted

function hubOf(base) {
  if (!hubs.has(base)) hubs.set(base, eventHub(base));
  return hubs.get(base);
}

function eventHub(base) {
  const tab = Math.random().toString(36).slice(2) + Date.now().toString(36);
  const mine = new Map(); // "resource/id" -> this tab's handlers
  const wants = new Map(); // another tab -> { records, at }, as the leader knows them
  const name = "offlinelock-events:" + base;
  const channel = typeof BroadcastChannel === "undefined" ? null : new BroadcastChannel(name);
  const hub = { leader: false, es: null, old: null, url: "", timer: 0 };
  const records = () => [...mine.keys()].sort();
  const post = (m) => { if (channel) channel.postMessage(m); };
  const want = () => { if (mine.size || hub.wanted) post({ t: "want", tab, records: records() }); hub.wanted = mine.size > 0; };
  const dispatch = (event, d) => {
    const handlers = d && mine.get(d.resource + "/" + d.id);
    if (handlers) for (const h of [...handlers]) h(event, d);
  };

  // union is the records of every tab heard from lately, this one's too.
  function union() {
    const all = new Set(mine.keys());
    for (const [other, w] of wants) {
      if (Date.now() - w.at > WANT_GONE) wants.delete(other);
      else for (const r of w.records) all.add(r);
    }
    return [...all].sort();
  }

  // reopen opens the stream anew shortly (gathering the changes of the
  // next 100 ms): always when told (a tab came, and must hear its
  // records' state), otherwise only when the records changed.
  function reopen(always) {
    if (!hub.leader) return;
    hub.always = hub.always || always;
    clearTimeout(hub.timer);
    // A leader without a stream opens one at once (a new page, a new
    // leader); one with a stream waits 100 ms for other tabs' changes.
    hub.timer = setTimeout(() => { open(hub.always); hub.always = false; }, hub.es ? 100 : 0);
  }

  function open(always) {
    const list = union();
    const url = list.length ? base + "/lock/events?" + list.map((r) => "watch=" + encodeURIComponent(r)).join("&") : "";
    if (!always && url === hub.url && (!url || hub.es.readyState !== EventSource.CLOSED)) return;
    // At most two streams at once: the one before the last is closed now.
    if (hub.old) hub.old.close();
    const old = hub.es;
    hub.old = old;
    hub.url = url;
    hub.es = url ? new EventSource(url, { withCredentials: true }) : null;
    if (hub.es) listenTo(hub.es);
    if (!old) return;
    if (!hub.es) return old.close();
    // The old stream is closed once the new one has opened (its watches
    // are in place) and a moment more, so that an event the old one was
    // about to tell is not lost between them; at most 5 s after.
    const close = () => { old.close(); if (hub.old === old) hub.old = null; };
    setTimeout(close, 5000);
    hub.es.addEventListener("open", () => setTimeout(close, 2500), { once: true });
  }

  function listenTo(es) {
    for (const event of EVENT_NAMES) {
      es.addEventListener(event, (m) => {
        let d;
        try { d = JSON.parse(m.data); } catch (e) { return; }
        dispatch(event, d);
        post({ t: "event", event, d });
      });
    }
  }

  function lead() {
    hub.leader = true;
    post({ t: "roll" }); // every tab says what it shows
    reopen(true);
  }

  if (channel) {
    channel.addEventListener("message", (m) => {
      const x = m.data || {};
      if (x.t === "event" || x.t === "beat") hub.heard = Date.now(); // the leader is alive
      if (x.t === "event") return dispatch(x.event, x.d);
      if (x.t === "roll") return want();
      if (x.t === "bye") { wants.delete(x.tab); return reopen(false); }
      if (x.t !== "want" || !Array.isArray(x.records)) return;
      const was = wants.get(x.tab);
      wants.set(x.tab, { records: x.records, at: Date.now() });
      if (!was || was.records.join("\n") !== x.records.join("\n")) reopen(true);
    });
  }
  // The leader's lock is held until this page is left (or put in the
  // back/forward cache, where it would hold the lock and tell nothing):
  // the next tab in line leads then. A visible tab that shows records and
  // has heard nothing from a leader for LEADER_GONE (a frozen leader, a
  // phone's background tab) takes the lock from it (steal): the frozen
  // tab, when it wakes, stops its stream and gets in line again.
  const locks = channel && typeof navigator !== "undefined" && navigator.locks;
  function queue(steal) {
    if (hub.queued) hub.queued.abort(); // one request in line per tab
    const line = new AbortController();
    hub.queued = steal ? null : line;
    let granted = false;
    navigator.locks.request(name, steal ? { steal: true } : { signal: line.signal }, () => new Promise((resign) => {
      granted = true;
      hub.queued = null;
      hub.resign = resign;
      lead();
    })).catch(() => {
      if (!granted || !hub.leader) return; // a request taken out of line
      stepDown(); // another tab took the lock: it leads now
      queue(false);
    });
  }
  function stepDown() {
    clearTimeout(hub.timer);
    for (const es of [hub.es, hub.old]) if (es) es.close();
    Object.assign(hub, { leader: false, es: null, old: null, url: "" });
  }
  if (locks) queue(false);
  else lead();
  hub.heard = Date.now();
  setInterval(() => {
    want();
    reopen(false);
    if (hub.leader) return post({ t: "beat" });
    if (locks && mine.size && document.visibilityState === "visible" && Date.now() - hub.heard > LEADER_GONE) {
      hub.heard = Date.now();
      queue(true);
    }
  }, WANT_EVERY);
  addEventListener("pagehide", () => {
    post({ t: "bye", tab });
    if (!locks || !hub.leader) return;
    stepDown();
    hub.resign();
  });
  addEventListener("pageshow", (e) => {
    if (!e.persisted) return;
    want();
    if (locks) queue(false);
  });
  document.addEventListener("resume", () => want()); // a frozen tab thawed

  return {
    // join hands the events of record ("resource/id") to handler until
    // the function it returns is called.
    join(record, handler) {
      if (!mine.has(record)) mine.set(record, new Set());
      mine.get(record).add(handler);
      want();
      reopen(true);
      return () => {
        const handlers = mine.get(record);
        if (!handlers || !handlers.delete(handler) || handlers.size) return;
        mine.delete(record);
        want();
        reopen(false);
      };
    },
    // tell hands an event to this browser's tabs, this one's too, as
    // the stream would.
    tell(event, d) {
      dispatch(event, d);
      post({ t: "event", event, d });
    },
  };
}

/**
 * forgetKept drops the unsaved forms every record's lock kept in this tab
 * (lock.keep, a take-over, a lost lock): call it at sign-out.
 */
export function forgetKept() {
  for (let i = sessionStorage.length - 1; i >= 0; i--) {
    const k = sessionStorage.key(i);
    if (k && k.startsWith("offlinelock:") && k.endsWith(":kept")) sessionStorage.removeItem(k);
  }
}

// since is an ISO time to the second, as a 423 gives lockedSince.
function since(t) { return t && t.replace(/\.\d+Z$/, "Z"); }

function clock(iso) {
  if (!iso) return "?";
  const d = new Date(iso);
  return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

// announce says text to screen readers through a visually hidden live
// region (styled through the CSSOM, which a strict style-src allows).
function announce(text) {
  let el = document.getElementById("offlinelock-live");
  if (!el) {
    el = document.createElement("div");
    el.id = "offlinelock-live";
    el.setAttribute("role", "status");
    el.setAttribute("aria-live", "polite");
    Object.assign(el.style, { position: "absolute", width: "1px", height: "1px", overflow: "hidden", clip: "rect(0 0 0 0)", whiteSpace: "nowrap" });
    document.body.append(el);
  }
  el.textContent = text;
}

function banner(text, action) {
  let el = document.getElementById("offlinelock-banner");
  if (!el) {
    el = document.createElement("div");
    el.id = "offlinelock-banner";
    el.setAttribute("role", "status");
    el.setAttribute("aria-live", "polite");
    el.style.cssText = "position:sticky;top:0;z-index:1000;padding:.6em 1em;background:#fff3cd;color:#533f03;border-bottom:1px solid #e0c36a;font:14px system-ui,sans-serif";
    document.body.prepend(el);
  }
  el.textContent = text + " ";
  if (action) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = action.label;
    b.onclick = action.run;
    el.append(b);
  }
}
