package main

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strconv"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/httplock"
)

// The recipe for pages that autosave, or lock on the first change: the
// page takes the lock at the first keystroke, not when it opens, and its
// saves name the version the page loaded. A change someone made between
// the page's load and that keystroke (the gap no lock covered) makes the
// save's version check fail: the save is a 409, the page keeps the typing
// and says to reload. Once the lock is held nobody else can save, so the
// version only catches the gap.

// autosave is GET /customers/{id}/autosave: the customer's form, which
// takes the lock at its first change and saves as the user types.
func (a *app) autosave(w http.ResponseWriter, r *http.Request, s session) {
	var c Customer
	if err := a.db.WithContext(r.Context()).First(&c, "id = ?", r.PathValue("id")).Error; err != nil {
		a.api.WriteError(w, r, err)
		return
	}
	render(w, autosavePage, map[string]any{"User": s.user, "C": c,
		"TTL": int(a.opts.ttl.Seconds()), "Renew": math.Max(1, a.opts.renew.Seconds())})
}

// save is PATCH /customers/{id}: the name and credit, as JSON, and the
// version the page loaded, if it names one: a save of another version
// is a 409 and changes nothing. It answers the version saved.
func (a *app) save(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name    string `json:"name"`
		Credit  int    `json:"credit"`
		Version int    `json:"version"`
	}
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err == nil {
		err = json.NewDecoder(r.Body).Decode(&in)
	}
	if err != nil || in.Name == "" {
		a.api.WriteError(w, r, offlinelock.ErrInvalid)
		return
	}
	q := a.db.WithContext(r.Context()).Model(&Customer{ID: uint(id)})
	if in.Version > 0 {
		q = q.Where("version = ?", in.Version)
	}
	res := q.Updates(map[string]any{"name": in.Name, "credit": in.Credit, "version": gorm.Expr("version + 1")})
	if res.Error == nil && res.RowsAffected == 0 {
		changed(w, id, in.Version)
		return
	}
	var c Customer
	if err = res.Error; err == nil {
		err = a.db.WithContext(r.Context()).Select("version").First(&c, "id = ?", id).Error
	}
	if err != nil {
		a.api.WriteError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]int{"version": c.Version})
}

// changed is the 409 of a save whose version is not the customer's.
func changed(w http.ResponseWriter, id uint64, version int) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(http.StatusConflict)
	json.NewEncoder(w).Encode(httplock.Problem{Type: "about:blank", Title: "Conflict", Status: http.StatusConflict,
		Detail: fmt.Sprintf("customer %d was changed since you opened it (version %d): reload it to see the change", id, version)})
}

var autosavePage = template.Must(template.New("autosave").Parse(`<!doctype html><title>Customer {{.C.ID}}</title>` + style + `
<body data-me="{{.User}}" data-id="{{.C.ID}}" data-version="{{.C.Version}}" data-ttl="{{.TTL}}" data-renew="{{.Renew}}">
<p>Signed in as <b id="me">{{.User}}</b> · <a href="/">all customers</a></p>
<h1>Customer {{.C.ID}}</h1>
<p id="lockstate" role="status">Viewing customer {{.C.ID}}: your first change takes the lock.</p>
<form id="edit"><label>Name <input id="name" name="name" value="{{.C.Name}}" required></label>
<label>Credit <input id="credit" name="credit" type="number" value="{{.C.Credit}}"></label></form>
<p id="status" role="status"></p><p id="kept" role="status"></p>
<script type="module" src="/static/autosave.js"></script>`))
