// The autosave page's script (examples/editor): the recipe for pages that
// autosave or lock on the first change. The lock is taken at the first
// keystroke, not when the page opens; every save names the version the
// page loaded, so that a change made by someone else between the load and
// that keystroke (which no lock covered) is refused (409), not
// overwritten: the page keeps the typing and says to reload.
import { editLock } from "/offlinelock.js";
const page = document.body.dataset;
const id = page.id;
let version = Number(page.version);
const $ = (x) => document.getElementById(x);
const say = (x, text) => { $(x).textContent = text; };
const form = () => ({ name: $("name").value, credit: Number($("credit").value) });
let lock = null, timer = 0, saving = false, again = false, refused = false;

// start takes the lock: called at the first change.
function start() {
  lock = editLock({ resource: "customers", id, ttlSeconds: Number(page.ttl), renewEverySeconds: Number(page.renew),
    announce: false, unsaved: form, on: {
      locked: () => { say("lockstate", "You are editing customer " + id + "; changes are saved as you type."); save(); },
      lockedByOther: (p) => { say("lockstate", "Locked by " + p.lockedBy + ": your change is not saved."); lock.keep("locked"); },
      lockedByYou: () => say("lockstate", "You are editing this in another tab: your change is not saved here."),
      takenOver: (e) => say("lockstate", e.by + " took over this customer: your changes are no longer saved."),
      kept: (k) => say("kept", "Your unsaved changes: name \u201c" + k.data.name + "\u201d, credit " + k.data.credit + "."),
      released: () => {},
      error: (r) => say("status", (r.json && r.json.detail) || "The lock could not be kept (" + r.status + ")."),
    } });
}

// save sends the form with the version it was loaded at; one at a time,
// the last change again after a save in flight.
async function save() {
  if (!lock || !lock.token) return;
  if (saving) { again = true; return; }
  saving = true;
  const r = await fetch("/customers/" + id, { method: "PATCH", credentials: "same-origin",
    headers: { "Content-Type": "application/json", "Lock-Token": lock.token }, body: JSON.stringify(Object.assign(form(), { version })) });
  saving = false;
  if (r.ok) {
    version = (await r.json()).version;
    lock.forgetKept();
    say("status", "Saved.");
    if (again) { again = false; save(); }
    return;
  }
  const p = await r.json().catch(() => ({}));
  say("status", "Not saved: " + (p.detail || r.status));
  lock.keep("not-saved");
  if (r.status === 409) { // changed before this page's lock: nothing to hold it for
    refused = true;
    lock.release();
    say("lockstate", "Customer " + id + " was changed since you opened it: reload to see the change.");
  }
}

$("edit").addEventListener("input", () => {
  if (!lock) return start();
  if (refused) return lock.keep("not-saved"); // typing after the refusal is kept too
  clearTimeout(timer);
  timer = setTimeout(save, 300);
});
