// The edit page's script (examples/editor): the lock of one customer, its
// events, and the save. Served as a file, as the page's CSP requires.
import { editLock } from "/offlinelock.js";
// The page's data, from its body (no inline script: the page runs under a
// Content-Security-Policy that allows only the application's own files).
const page = document.body.dataset;
const me = page.me, id = page.id, admin = page.admin === "true";
const $ = (x) => document.getElementById(x);
const say = (x, text) => { $(x).textContent = text; };
const at = (iso) => iso ? new Date(iso).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) : "?";
const buttons = (...list) => {
  for (const b of document.querySelectorAll("#actions button")) b.remove();
  for (const [bid, label, run] of list) {
    const b = document.createElement("button");
    b.type = "button"; b.id = bid; b.textContent = label; b.onclick = run;
    $("actions").append(b);
  }
};
const initial = { name: $("name").value, credit: $("credit").value };
const form = () => ({ name: $("name").value, credit: $("credit").value });
// The unsaved form, which the client keeps when the lock is lost or taken
// over, or a save refused: null when nothing was changed.
const unsaved = () => { const f = form(); return f.name !== initial.name || f.credit !== initial.credit ? f : null; };
const showKept = (k) => {
  const d = k.data, text = "Your unsaved changes: name \u201c" + d.name + "\u201d, credit " + d.credit + ".";
  say("kept", text);
  const acts = $("keptactions");
  acts.replaceChildren();
  const add = (bid, label, run) => { const b = document.createElement("button"); b.type = "button"; b.id = bid; b.textContent = label; b.onclick = run; acts.append(b); };
  add("copykept", "Copy my changes", () => navigator.clipboard && navigator.clipboard.writeText(text).catch(() => {}));
  add("restorekept", "Put my changes back", () => { $("name").value = d.name; $("credit").value = d.credit; });
  add("discardkept", "Discard them", () => { lock.forgetKept(); $("keptbox").hidden = true; });
  $("keptbox").hidden = false;
};
const lock = editLock({ resource: "customers", id, ttlSeconds: Number(page.ttl), renewEverySeconds: Number(page.renew), announce: false, unsaved, on: {
  kept: showKept,
  locked: () => { buttons(); say("lockstate", "You are editing customer " + id + "."); },
  lockedByOther: (p) => {
    say("lockstate", "Locked by " + p.lockedBy + " since " + at(p.lockedSince || p.acquiredAt) + ".");
    buttons(["ask", "Ask to edit", async () => { if (await lock.request()) say("notice", "Asked " + p.lockedBy + "; you will be told when it is free."); }],
      ...(admin ? [["takeover", "Take over", () => lock.takeOver($("reason").value)]] : []));
  },
  lockedByYou: (p) => {
    say("lockstate", "You are editing this in another tab since " + at(p.lockedSince) + ".");
    buttons(["here", "Edit here instead", () => lock.takeOver("moved to another tab")]);
  },
  takenOver: (e) => {
    buttons();
    say("lockstate", (e.by === me ? "You took this over in another tab" : e.by + " took over this customer") +
      (e.reason ? " (" + e.reason + ")" : "") + ": your changes can no longer be saved.");
  },
  requested: (e) => say("notice", e.by + " asks to edit this customer."),
  viewers: (list) => {
    const others = list.map((v) => v.user).filter((u) => u !== me);
    say("viewers", others.length ? others.join(", ") + (others.length > 1 ? " are" : " is") + " also viewing." : "");
  },
  released: () => { say("lockstate", "Customer " + id + " is free now."); buttons(["take", "Edit it", () => location.reload()]); },
  expiring: (e) => say("notice", "Your lock runs out in " + e.ttlRemainingSeconds + " s."),
  idle: () => say("notice", "You have been away: your lock will run out."),
  error: (r) => {
    say("status", (r.json && r.json.detail) || "The lock could not be kept (" + r.status + ").");
    if (!lock.lock) { // the first lock failed: not left at "Taking the lock…"
      say("lockstate", "Not editing: the lock could not be taken.");
      buttons(["retry", "Try again", () => { say("status", ""); say("lockstate", "Taking the lock…"); lock.retry(); }]);
    }
  },
} });
$("edit").onsubmit = async (ev) => {
  ev.preventDefault();
  const headers = { "Content-Type": "application/json" };
  if (lock.token) headers["Lock-Token"] = lock.token;
  const r = await fetch("/customers/" + id, { method: "PATCH", headers, credentials: "same-origin",
    body: JSON.stringify({ name: $("name").value, credit: Number($("credit").value) }) });
  if (r.ok) { lock.forgetKept(); initial.name = $("name").value; initial.credit = $("credit").value; return say("status", "Saved."); }
  const p = await r.json().catch(() => ({}));
  say("status", "Not saved: " + (p.detail || r.status));
  lock.keep("not-saved");
};
