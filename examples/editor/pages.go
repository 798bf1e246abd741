package main

import (
	"encoding/json"
	"html/template"
	"math"
	"net/http"
	"strconv"

	"github.com/offlinelock/offlinelock"
)

// routes are the editor's pages, its one write, and httplock's endpoints
// (the lock, take-over, ask-to-edit and event endpoints, and
// /offlinelock.js).
func (a *app) routes() http.Handler {
	mux := http.NewServeMux()
	a.api.Register(mux)
	origins := http.NewCrossOriginProtection()
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) { render(w, loginPage, nil) })
	mux.Handle("POST /login", origins.Handler(http.HandlerFunc(a.signIn)))
	mux.Handle("POST /logout", origins.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.sessions.end(w, r)
		http.Redirect(w, r, "/login", http.StatusSeeOther)
	})))
	mux.HandleFunc("GET /{$}", a.signedIn(a.list))
	mux.HandleFunc("GET /customers/{id}/edit", a.signedIn(a.edit))
	// The Middleware refuses the write unless the caller's Lock-Token holds
	// the customer's lock; the plugin checks it again.
	mux.Handle("PATCH /customers/{id}", a.api.Middleware(http.HandlerFunc(a.save)))
	return mux
}

// signedIn sends a browser without a session to /login.
func (a *app) signedIn(page func(http.ResponseWriter, *http.Request, session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := a.sessions.of(r)
		if !ok {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		page(w, r, s)
	}
}

func (a *app) signIn(w http.ResponseWriter, r *http.Request) {
	user := r.PostFormValue("user")
	if user == "" || len(user) > 64 || r.PostFormValue("password") != "demo" {
		w.WriteHeader(http.StatusUnauthorized)
		render(w, loginPage, "Wrong user name or password.")
		return
	}
	a.sessions.start(w, user)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (a *app) list(w http.ResponseWriter, r *http.Request, s session) {
	var all []Customer
	if err := a.db.WithContext(r.Context()).Order("id").Find(&all).Error; err != nil {
		a.api.WriteError(w, r, err)
		return
	}
	render(w, listPage, map[string]any{"User": s.user, "Customers": all})
}

func (a *app) edit(w http.ResponseWriter, r *http.Request, s session) {
	var c Customer
	if err := a.db.WithContext(r.Context()).First(&c, "id = ?", r.PathValue("id")).Error; err != nil {
		a.api.WriteError(w, r, err)
		return
	}
	render(w, editPage, map[string]any{"User": s.user, "C": c, "Admin": s.user == "admin",
		"TTL": int(a.opts.ttl.Seconds()), "Renew": math.Max(1, a.opts.renew.Seconds())})
}

// save is PATCH /customers/{id}: the name and credit, as JSON.
func (a *app) save(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name   string `json:"name"`
		Credit int    `json:"credit"`
	}
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err == nil {
		err = json.NewDecoder(r.Body).Decode(&in)
	}
	if err != nil || in.Name == "" {
		a.api.WriteError(w, r, offlinelock.ErrInvalid)
		return
	}
	err = a.db.WithContext(r.Context()).Model(&Customer{ID: uint(id)}).
		Updates(map[string]any{"name": in.Name, "credit": in.Credit}).Error
	if err != nil {
		a.api.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func render(w http.ResponseWriter, t *template.Template, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	t.Execute(w, data)
}

var style = `<style>body{font:15px system-ui,sans-serif;margin:2em auto;max-width:40em}
#lockstate{padding:.6em 1em;background:#eef4ff;border-radius:4px}#notice{color:#8a5a00}
label{display:block;margin:.5em 0}button{margin-right:.5em}</style>`

var loginPage = template.Must(template.New("login").Parse(`<!doctype html><title>Sign in</title>` + style + `
<h1>Sign in</h1>{{if .}}<p id="error">{{.}}</p>{{end}}
<form method="post" action="/login"><label>User <input id="user" name="user" autofocus></label>
<label>Password <input id="password" name="password" type="password"></label><button id="signin">Sign in</button></form>
<p>Any user name, the password "demo"; "admin" may take over locks; "guest" may only look.</p>`))

var listPage = template.Must(template.New("list").Parse(`<!doctype html><title>Customers</title>` + style + `
<p>Signed in as <b id="me">{{.User}}</b> <form method="post" action="/logout" style="display:inline"><button id="logout">Sign out</button></form></p>
<h1>Customers</h1><ul>{{range .Customers}}<li><a href="/customers/{{.ID}}/edit">{{.ID}} {{.Name}}</a></li>{{end}}</ul>
<script type="module">
import { forgetKept } from "/offlinelock.js";
document.getElementById("logout").form.addEventListener("submit", () => forgetKept()); // kept typing ends with the sign-in
</script>`))

var editPage = template.Must(template.New("edit").Parse(`<!doctype html><title>Customer {{.C.ID}}</title>` + style + `
<p>Signed in as <b id="me">{{.User}}</b> · <a href="/">all customers</a></p>
<h1>Customer {{.C.ID}}</h1>
<p id="lockstate" role="status">Taking the lock…</p><p id="notice" role="status"></p><p id="viewers" role="status"></p>
<form id="edit"><label>Name <input id="name" name="name" value="{{.C.Name}}" required></label>
<label>Credit <input id="credit" name="credit" type="number" value="{{.C.Credit}}"></label>
<button id="save">Save</button></form>
<p id="actions">{{if .Admin}}<label>Reason <input id="reason" value="the customer is on the phone"></label>{{end}}</p>
<p id="status" role="status"></p>
<div id="keptbox" hidden><p id="kept" role="status"></p><p id="keptactions"></p></div>
<script type="module">
import { editLock } from "/offlinelock.js";
const me = {{.User}}, id = "{{.C.ID}}", admin = {{.Admin}};
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
const lock = editLock({ resource: "customers", id, ttlSeconds: {{.TTL}}, renewEverySeconds: {{.Renew}}, announce: false, unsaved, on: {
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
</script>`))
