package main

import (
	"embed"
	"html/template"
	"math"
	"net/http"
)

// staticFiles are the pages' script and style, served as files.
//
//go:embed static
var staticFiles embed.FS

// routes are the editor's pages, its one write, and httplock's endpoints
// (the lock, take-over, ask-to-edit and event endpoints, and
// /offlinelock.js).
func (a *app) routes() http.Handler {
	mux := http.NewServeMux()
	a.api.Register(mux)
	origins := http.NewCrossOriginProtection()
	mux.Handle("GET /static/", http.FileServerFS(staticFiles))
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) { render(w, loginPage, nil) })
	mux.Handle("POST /login", origins.Handler(http.HandlerFunc(a.signIn)))
	mux.Handle("POST /logout", origins.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.sessions.end(w, r)
		http.Redirect(w, r, "/login", http.StatusSeeOther)
	})))
	mux.HandleFunc("GET /{$}", a.signedIn(a.list))
	mux.HandleFunc("GET /customers/{id}/edit", a.signedIn(a.edit))
	mux.HandleFunc("GET /customers/{id}/autosave", a.signedIn(a.autosave))
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
	if err := a.sessions.start(w, r, user); err != nil {
		a.api.WriteError(w, r, err)
		return
	}
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

// csp is the pages' Content-Security-Policy: only the application's own
// files run or style a page (no inline script or style), which
// offlinelock.js works under.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func render(w http.ResponseWriter, t *template.Template, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", csp)
	t.Execute(w, data)
}

var style = `<link rel="stylesheet" href="/static/editor.css">`

var loginPage = template.Must(template.New("login").Parse(`<!doctype html><title>Sign in</title>` + style + `
<h1>Sign in</h1>{{if .}}<p id="error">{{.}}</p>{{end}}
<form method="post" action="/login"><label>User <input id="user" name="user" autofocus></label>
<label>Password <input id="password" name="password" type="password"></label><button id="signin">Sign in</button></form>
<p>Any user name, the password "demo"; "admin" may take over locks; "guest" may only look.</p>`))

var listPage = template.Must(template.New("list").Parse(`<!doctype html><title>Customers</title>` + style + `
<p>Signed in as <b id="me">{{.User}}</b> <form method="post" action="/logout" class="inline"><button id="logout">Sign out</button></form></p>
<h1>Customers</h1><ul>{{range .Customers}}<li><a href="/customers/{{.ID}}/edit">{{.ID}} {{.Name}}</a></li>{{end}}</ul>
<script type="module" src="/static/list.js"></script>`))

var editPage = template.Must(template.New("edit").Parse(`<!doctype html><title>Customer {{.C.ID}}</title>` + style + `
<body data-me="{{.User}}" data-id="{{.C.ID}}" data-admin="{{.Admin}}" data-ttl="{{.TTL}}" data-renew="{{.Renew}}">
<p>Signed in as <b id="me">{{.User}}</b> · <a href="/">all customers</a></p>
<h1>Customer {{.C.ID}}</h1>
<p id="lockstate" role="status">Taking the lock…</p><p id="notice" role="status"></p><p id="viewers" role="status"></p>
<form id="edit"><label>Name <input id="name" name="name" value="{{.C.Name}}" required></label>
<label>Credit <input id="credit" name="credit" type="number" value="{{.C.Credit}}"></label>
<button id="save">Save</button></form>
<p id="actions">{{if .Admin}}<label>Reason <input id="reason" value="the customer is on the phone"></label>{{end}}</p>
<p id="status" role="status"></p>
<div id="keptbox" hidden><p id="kept" role="status"></p><p id="keptactions"></p></div>
<script type="module" src="/static/edit.js"></script>`))
