package main

import (
	"crypto/rand"
	"crypto/subtle"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const (
	// formCookie holds this browser's login-form token: the forms of /login
	// carry the same value, which a page on another site can neither read
	// nor make the browser send (SameSite=Strict), so it cannot sign the
	// operator in or out (login CSRF) even through a browser or proxy that
	// drops Origin and Sec-Fetch-Site.
	formCookie = "orders_login_form"
	// consolePath is the page a browser signs in for.
	consolePath = "/admin/console"
)

// signIn serves the browser's side of auth: GET /login, POST /login and
// POST /logout, and the detour to /login of a console visit that brings no
// credentials.
type signIn struct {
	auth    *auth
	log     *slog.Logger
	page    *template.Template
	origins *http.CrossOriginProtection
}

func newSignIn(a *auth, log *slog.Logger) *signIn {
	s := &signIn{auth: a, log: log, page: template.Must(template.New("login").Parse(loginPage))}
	// The same check as httplock's admin forms: a browser's POST from
	// another origin is refused before the form is read.
	s.origins = http.NewCrossOriginProtection()
	s.origins.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, r, http.StatusForbidden, "This form was sent from another site: nothing changed. Sign in from this site's own page.")
	}))
	return s
}

// register adds the sign-in routes to mux.
func (s *signIn) register(mux *http.ServeMux) {
	mux.Handle("GET /login", pageHeaders(http.HandlerFunc(s.form)))
	mux.Handle("POST /login", pageHeaders(s.origins.Handler(http.HandlerFunc(s.login))))
	mux.Handle("POST /logout", pageHeaders(s.origins.Handler(http.HandlerFunc(s.logout))))
}

// first sends a GET from a browser that brings no credentials (neither an
// Authorization header nor a live session) to /login, which brings it back
// here once signed in. Everyone else goes on as before the sign-in page
// existed: the console answers a bad bearer token or a non-admin with its
// 403 page.
func (s *signIn) first(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, bearing := r.Header["Authorization"]
		if _, ok := s.auth.signedIn(r); !ok && !bearing && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// form is GET /login.
func (s *signIn) form(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, loginView{Next: landing(r.URL.Query().Get("next"))})
}

// login is POST /login: fields user, password, next and the form token.
// A wrong one changes nothing, not even a session the browser already has.
func (s *signIn) login(w http.ResponseWriter, r *http.Request) {
	if !s.posted(w, r) {
		return
	}
	user, next := strings.TrimSpace(r.PostForm.Get("user")), landing(r.PostForm.Get("next"))
	if !s.auth.check(user, r.PostForm.Get("password")) {
		s.render(w, r, http.StatusForbidden, loginView{Next: next, Error: "Wrong user name or password: nothing changed."})
		return
	}
	// A new value at each sign-in (no session fixation), and the session
	// it replaces in this browser ends rather than lingering.
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.auth.sessions.end(c.Value)
	}
	setSession(w, r, s.auth.sessions.start(user), int(sessionTTL/time.Second))
	s.log.InfoContext(r.Context(), "orders-api: signed in", slog.String("user", user))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout is POST /logout: the session ends on the server, so a copy of the
// cookie is worthless from now on, and the browser is told to drop it.
func (s *signIn) logout(w http.ResponseWriter, r *http.Request) {
	if !s.posted(w, r) {
		return
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.auth.sessions.end(c.Value)
	}
	setSession(w, r, "", -1)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// posted reads a POSTed form of /login and checks its token; it answers
// the request itself when it returns false.
func (s *signIn) posted(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.refuse(w, r, http.StatusBadRequest, "The form could not be read: nothing changed.")
		return false
	}
	c, err := r.Cookie(formCookie)
	if err != nil || c.Value == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(r.PostForm.Get("csrf"))) != 1 {
		s.refuse(w, r, http.StatusForbidden, "This form was not rendered for this browser (or it came from another site): nothing changed. Reload the page and try again.")
		return false
	}
	return true
}

// setSession sets (or, with maxAge -1, deletes) the session cookie:
// HttpOnly, as no script needs it; SameSite=Lax, so another site's POST
// never carries it while a link to the console from elsewhere still finds
// the operator signed in (Strict would send them to /login again); Secure
// when served over TLS.
func setSession(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
}

// formToken is this browser's login-form token, from its cookie, or new and
// set in one (for the browser's session, Strict, as only /login's own
// forms send it back).
func formToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(formCookie); err == nil && c.Value != "" {
		return c.Value
	}
	value := rand.Text()
	http.SetCookie(w, &http.Cookie{Name: formCookie, Value: value, Path: "/",
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	return value
}

// landing is where a sign-in goes on to: next when it is the console (its
// filter kept), the console otherwise. Nothing else gets through, so no
// link can make /login send the operator to another site.
func landing(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || u.User != nil || u.Path != consolePath {
		return consolePath
	}
	if q := u.Query().Encode(); q != "" {
		return consolePath + "?" + q
	}
	return consolePath
}

// loginView is what loginPage renders. Without CSRF it is a refusal,
// with no form.
type loginView struct {
	Nonce, CSRF, Next, User, Error, Password string
}

// render writes the sign-in page with status: the form, and who is signed
// in here when someone is.
func (s *signIn) render(w http.ResponseWriter, r *http.Request, status int, v loginView) {
	v.CSRF = formToken(w, r)
	v.User, _ = s.auth.signedIn(r)
	s.write(w, r, status, v)
}

// refuse writes the page with msg and no form.
func (s *signIn) refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.write(w, r, status, loginView{Error: msg})
}

func (s *signIn) write(w http.ResponseWriter, r *http.Request, status int, v loginView) {
	v.Nonce, v.Password = rand.Text(), s.auth.password
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'nonce-"+v.Nonce+"'; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := s.page.Execute(w, v); err != nil {
		s.log.ErrorContext(r.Context(), "orders-api: login page", slog.String("error", err.Error()))
	}
}

// pageHeaders makes every sign-in response unframable (no clickjacking of
// the form), uncached and free of scripts, as httplock's console does.
func pageHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'") // write sets the page's own
		h.Set("Cache-Control", "no-store")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// loginPage is the sign-in page. It says plainly that the sign-in is a
// demonstration's.
const loginPage = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in · orders-api</title>
<style nonce="{{.Nonce}}">
body { font: 15px/1.5 system-ui, sans-serif; margin: 2rem auto; max-width: 26rem; padding: 0 1rem; color: #1b1f24; }
h1 { font-size: 1.4rem; }
label { display: block; margin: .75rem 0 .2rem; }
input { font: inherit; width: 100%; box-sizing: border-box; padding: .3rem .4rem; }
button { font: inherit; margin-top: 1rem; padding: .3rem 1rem; }
.demo { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: .5rem .75rem; }
.error { background: #ffebe9; border: 1px solid #ff8182; border-radius: 6px; padding: .5rem .75rem; }
</style>
</head>
<body>
<h1>Sign in</h1>
<p class="demo" id="demo"><strong>A demonstration, not real authentication.</strong>
There are no accounts: any user name signs in with the password <code>{{.Password}}</code>,
as any bearer token is taken for its user's name. <code>admin</code> is the operator,
who may use the lock console.</p>
{{with .Error}}<p class="error" id="error" role="alert">{{.}}</p>{{end}}
{{if .CSRF}}
{{with .User}}<p id="signed-in">Signed in as <strong>{{.}}</strong>: <a href="/admin/console">the lock console</a>.</p>
<form method="post" action="/logout"><input type="hidden" name="csrf" value="{{$.CSRF}}"><button id="logout" type="submit">Sign out</button></form>{{end}}
<form method="post" action="/login">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<input type="hidden" name="next" value="{{.Next}}">
<label for="user">User name</label>
<input id="user" name="user" required maxlength="255" autocomplete="username" autofocus>
<label for="password">Password</label>
<input id="password" name="password" type="password" required autocomplete="current-password">
<button id="login" type="submit">Sign in</button>
</form>
{{else}}<p><a href="/login">Sign in</a></p>{{end}}
</body>
</html>
`
