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
// Pages that supply no callbacks get a plain banner.

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
 *   takenOver(event), requested(event), released(event), expiring(event), idle(), error(err)
 * @param {boolean} [o.banner]  show the default banner for events without a callback (default true)
 */
export function editLock(o) {
  const base = (o.base || "") + "/" + encodeURIComponent(o.resource) + "/" + encodeURIComponent(o.id);
  const key = "offlinelock:" + base;
  const on = o.on || {};
  const state = { token: sessionStorage.getItem(key) || "", lock: null, timer: 0, stopped: false, lastInput: Date.now(), events: null, asking: false };

  const tell = (name, arg, text, action) => {
    if (on[name]) return on[name](arg);
    if (o.banner !== false && text) banner(text, action);
  };

  async function post(path, body, token) {
    const headers = { "Content-Type": "application/json" };
    if (token) headers[TOKEN_HEADER] = token;
    const r = await fetch(base + path, { method: "POST", headers, body: JSON.stringify(body || {}), credentials: "same-origin" });
    const text = await r.text();
    let json = null;
    try { json = text ? JSON.parse(text) : null; } catch (e) { json = null; }
    return { status: r.status, json, token: r.headers.get(TOKEN_HEADER) || "" };
  }

  function hold(r) {
    state.token = r.token || state.token;
    state.lock = r.json;
    state.me = r.json && r.json.lockedBy;
    sessionStorage.setItem(key, state.token);
    schedule();
  }

  function leaseSeconds() {
    return (state.lock && state.lock.ttlRemainingSeconds) || o.ttlSeconds || 300;
  }

  function schedule(soon) {
    clearTimeout(state.timer);
    if (state.stopped || !state.token) return;
    const lease = leaseSeconds();
    const visible = document.visibilityState !== "hidden";
    let every = visible ? (o.renewEverySeconds || lease / 3) : (o.hiddenRenewEverySeconds || (lease * 2) / 3);
    if (soon) every = Math.min(every, 2); // a resumed lock: after the leaving page's last word
    state.timer = setTimeout(renew, Math.max(1, every) * 1000);
  }

  async function acquire() {
    const body = { ttlSeconds: o.ttlSeconds, reason: o.reason };
    const resuming = !!state.token;
    state.asking = true;
    const r = await post("/lock", body, state.token).finally(() => { state.asking = false; });
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
    if (r.status === 200 || r.status === 201) return hold(r);
    // Refused before the stream told why: a take-over note may follow
    // (the renewal can beat the event), and is told as such.
    state.lostAt = (state.lock && state.lock.generation) || 1;
    state.token = "";
    state.stopped = true;
    sessionStorage.removeItem(key);
    tell("error", r, "Your lock on this record has ended: your changes can no longer be saved.");
  }

  // lost ends this page's hold on a lock that ended or passed to someone
  // else without a take-over note.
  function lost(d, text) {
    state.lostAt = d.generation; // a take-over note may follow: told as such
    state.token = "";
    state.stopped = true;
    sessionStorage.removeItem(key);
    clearTimeout(state.timer);
    tell("error", { status: 0, json: { detail: text } }, text);
  }

  // watching tells a page that holds no lock who does now: this user
  // (another tab) or someone else.
  function watching(d) {
    if (state.asking) return;
    if (state.me && d.lockedBy === state.me) {
      const p = Object.assign({ lockedSince: d.acquiredAt, lockedByYou: true }, d);
      return tell("lockedByYou", p, "You are editing this in another tab since " + clock(p.lockedSince) + ".",
        { label: "Edit here instead", run: () => api.takeOver("resumed in another tab") });
    }
    if (on.lockedByOther) on.lockedByOther(d);
  }

  function listen() {
    if (typeof EventSource === "undefined") return;
    const es = new EventSource(base + "/lock/events", { withCredentials: true });
    state.events = es;
    const mine = (d) => state.lock && d.generation === state.lock.generation;
    const handle = (name, fn) => es.addEventListener(name, (m) => fn(JSON.parse(m.data)));
    handle("taken-over", (d) => {
      if (!state.token && !(state.lostAt && d.generation >= state.lostAt)) return watching(d);
      if (mine(d)) return; // our own take-over
      state.lostAt = 0;
      state.token = "";
      state.stopped = true;
      sessionStorage.removeItem(key);
      clearTimeout(state.timer);
      tell("takenOver", d, d.by + " took over this record" + (d.reason ? " (" + d.reason + ")" : "") + ": your changes can no longer be saved.");
    });
    handle("requested", (d) => { if (state.token) tell("requested", d, d.by + " asks to edit this record."); });
    handle("released", (d) => {
      if (state.token && mine(d)) return lost(d, "Your lock on this record has ended: your changes can no longer be saved.");
      if (!state.token) tell("released", d, "This record is free now.", { label: "Edit it", run: () => acquire() });
    });
    handle("expiring", (d) => { if (mine(d)) tell("expiring", d, "Your lock on this record runs out in " + d.ttlRemainingSeconds + " s."); });
    handle("locked", (d) => {
      if (!state.token) return watching(d);
      if (state.lock && d.generation > state.lock.generation && !state.asking) {
        lost(d, d.lockedBy + " holds this record now: your changes can no longer be saved.");
      }
    });
  }

  function release() {
    if (!state.token) return;
    const headers = {};
    headers[TOKEN_HEADER] = state.token;
    fetch(base + "/unlock", { method: "POST", headers, keepalive: true, credentials: "same-origin" });
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
      body: JSON.stringify({ ttlSeconds: o.leaveSeconds || 5 }) });
  }

  // A duplicated tab (or one opened with window.open) starts with a copy
  // of its opener's sessionStorage, the kept token too. Before a tab
  // resumes a kept token it asks this record's other tabs of the origin
  // whether one of them holds it; one that does answers, and the new tab
  // takes no part in that lock: it asks for one of its own, and the server
  // tells it "you are editing this in another tab". A reload has no such
  // tab left (its old page is gone), and resumes.
  const channel = typeof BroadcastChannel === "undefined" ? null : new BroadcastChannel(key);
  if (channel) {
    channel.addEventListener("message", (m) => {
      if (m.data && m.data.who && m.data.who === state.token && !state.stopped) channel.postMessage({ mine: state.token });
    });
  }
  function heldElsewhere(token) {
    if (!channel || !token) return Promise.resolve(false);
    return new Promise((resolve) => {
      const answer = (m) => {
        if (!m.data || m.data.mine !== token) return;
        clearTimeout(timer);
        channel.removeEventListener("message", answer);
        resolve(true);
      };
      const timer = setTimeout(() => { channel.removeEventListener("message", answer); resolve(false); }, 300);
      channel.addEventListener("message", answer);
      channel.postMessage({ who: token });
    });
  }

  const input = () => { state.lastInput = Date.now(); };
  for (const ev of ["keydown", "pointerdown", "input", "scroll"]) addEventListener(ev, input, { passive: true });
  document.addEventListener("visibilitychange", schedule);
  addEventListener("pagehide", leave);
  addEventListener("pageshow", (e) => { if (e.persisted) acquire(); }); // back from the page cache

  const api = {
    get token() { return state.token; },
    get lock() { return state.lock; },
    /** takeOver takes the lock over (policy permitting), fencing its holder. */
    async takeOver(reason) {
      state.asking = true;
      const r = await post("/lock/takeover", { reason: reason || "" }).finally(() => { state.asking = false; });
      if (r.status === 201) { state.stopped = false; hold(r); return tell("locked", state.lock, ""); }
      tell("error", r, (r.json && r.json.detail) || "The lock could not be taken over.");
    },
    /** request asks the holder to let this user edit; "released" says when it is free. */
    async request() {
      const r = await post("/lock/request", {});
      if (r.status !== 202) tell("error", r, (r.json && r.json.detail) || "The request could not be sent.");
      return r.status === 202;
    },
    /** release gives the lock up now (after a save, or on cancel). */
    release() { state.stopped = true; clearTimeout(state.timer); release(); },
    /** stop ends renewals and events without releasing. */
    stop() { state.stopped = true; clearTimeout(state.timer); if (state.events) state.events.close(); },
  };
  listen();
  heldElsewhere(state.token).then((elsewhere) => {
    if (elsewhere) { // a duplicated tab: the lock is the other tab's
      state.token = "";
      sessionStorage.removeItem(key);
    }
    acquire();
  });
  return api;
}

function clock(iso) {
  if (!iso) return "?";
  const d = new Date(iso);
  return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

function banner(text, action) {
  let el = document.getElementById("offlinelock-banner");
  if (!el) {
    el = document.createElement("div");
    el.id = "offlinelock-banner";
    el.setAttribute("role", "status");
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
