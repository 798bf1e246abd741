package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestSignIn: the sign-in form sets a session cookie that is random, not
// the user name, and flagged HttpOnly, SameSite=Lax and Path=/; it
// authenticates the console and the admin endpoints; a visit to the
// console without it is sent to /login; logout ends it on the server, so a
// copy kept afterwards is refused. The bearer header keeps working, and
// decides alone when it is sent.
func TestSignIn(t *testing.T) {
	eachDSN(t, func(t *testing.T, base string) {
		take(t, base, "usr_client_1", "ord_40017")

		resp, _ := do(t, "GET", base+"/admin/console?user=usr", nil, nil)
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/login?next=%2Fadmin%2Fconsole%3Fuser%3Dusr" {
			t.Fatalf("the console without credentials: %d to %q, want a 303 to /login", resp.StatusCode, loc)
		}
		for _, token := range []string{"Bearer ", "Basic YWRtaW46ZGVtbw=="} { // a credential, if a bad one: judged, not redirected
			if resp, _ := do(t, "GET", base+"/admin/console", nil, map[string]string{"Authorization": token}); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("the console with %q: %d, want its 403", token, resp.StatusCode)
			}
		}
		b := openLogin(t, base)
		resp, _ = b.post(t, base+"/login", url.Values{"user": {"admin"}, "password": {"demo"}, "next": {"/admin/console?user=usr"}}, "same-origin")
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/admin/console?user=usr" {
			t.Fatalf("sign-in: %d to %q, want a 303 back to the console", resp.StatusCode, loc)
		}
		c := sessionOf(t, resp)
		if c.Value == "" || strings.Contains(strings.ToLower(c.Value), "admin") || len(c.Value) < 26 {
			t.Fatalf("the session cookie's value %q: want a random one, not the user name", c.Value)
		}
		if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure || c.MaxAge != int(sessionTTL/time.Second) {
			t.Fatalf("the session cookie %+v: want HttpOnly, SameSite=Lax, Path=/, not Secure over plain HTTP, Max-Age 8 h", c)
		}
		b.session = c.Value
		if again := signInAs(t, base, "admin"); again.session == b.session {
			t.Fatal("two sign-ins got the same cookie value")
		}

		// The cookie authenticates the console and the admin endpoints.
		resp, body := b.get(t, base+"/admin/console")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `data-id="ord_40017"`) {
			t.Fatalf("the console with the cookie: %d %.300s", resp.StatusCode, body)
		}
		resp, body = b.get(t, base+"/admin/locks")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"ord_40017"`) {
			t.Fatalf("GET /admin/locks with the cookie: %d %s", resp.StatusCode, body)
		}
		resp, body = do(t, "POST", base+"/admin/locks/orders/ord_40017/release", strings.NewReader(`{"reason": "test"}`),
			map[string]string{"Cookie": b.cookies(), "Sec-Fetch-Site": "same-origin"})
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("the admin release with the cookie: %d %s", resp.StatusCode, body)
		}
		if resp, body := b.get(t, base+"/login"); resp.StatusCode != http.StatusOK || !strings.Contains(body, `Signed in as <strong>admin</strong>`) {
			t.Fatalf("GET /login signed in: %d %s", resp.StatusCode, body)
		}

		// An Authorization header decides alone, as before the cookie.
		for user, want := range map[string]int{"admin": http.StatusOK, "usr_client_1": http.StatusForbidden} {
			resp, _ := do(t, "GET", base+"/admin/locks", nil, map[string]string{"Cookie": b.cookies(), "Authorization": "Bearer " + user})
			if resp.StatusCode != want {
				t.Fatalf("GET /admin/locks as bearer %s with the admin's cookie: %d, want %d", user, resp.StatusCode, want)
			}
		}

		// Logout ends the session on the server: the old value is refused.
		resp, _ = b.post(t, base+"/logout", nil, "same-origin")
		if c := sessionOf(t, resp); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" || c.MaxAge >= 0 {
			t.Fatalf("logout: %d to %q, cookie %+v", resp.StatusCode, resp.Header.Get("Location"), c)
		}
		if resp, _ := b.get(t, base+"/admin/console"); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("the console with the cookie of an ended session: %d, want a 303 to /login", resp.StatusCode)
		}
		if resp, _ := b.get(t, base+"/admin/locks"); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("GET /admin/locks with the cookie of an ended session: %d, want 403", resp.StatusCode)
		}
		resp, body = do(t, "POST", base+"/orders/ord_40017/lock", strings.NewReader(`{}`), map[string]string{"Cookie": b.cookies()})
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a lock with the cookie of an ended session: %d %s", resp.StatusCode, body)
		}
	})
}

// TestSignInRefusesCrossSite: a sign-in posted from another site, or
// without the form token of this browser's own /login page (as a browser
// that sends neither Origin nor Sec-Fetch-Site would post another site's
// form), signs nobody in. And the admin's cookie does not let another site
// release a lock: the console's and the admin API's releases refuse a
// cross-site POST that carries it, a valid console token included.
func TestSignInRefusesCrossSite(t *testing.T) {
	eachDSN(t, func(t *testing.T, base string) {
		b := openLogin(t, base)
		good := url.Values{"user": {"admin"}, "password": {"demo"}}
		for name, h := range map[string]map[string]string{
			"Sec-Fetch-Site cross-site": {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
			"Sec-Fetch-Site same-site":  {"Sec-Fetch-Site": "same-site", "Origin": "http://other.localhost"},
			"Origin only":               {"Origin": "https://evil.example"},
			"no form cookie":            {"Cookie": ""},
			"another browser's cookie":  {"Cookie": formCookie + "=" + openLogin(t, base).form},
		} {
			resp, body := b.postWith(t, base+"/login", good, h)
			if resp.StatusCode != http.StatusForbidden || hasSession(resp) || strings.Contains(body, `action="/login"`) {
				t.Fatalf("%s: %d, session set %v: %s", name, resp.StatusCode, hasSession(resp), body)
			}
		}

		take(t, base, "usr_client_1", "ord_31337")
		admin := signInAs(t, base, "admin")
		form := releaseForm(t, base, admin, "ord_31337")
		for name, h := range map[string]map[string]string{
			"Sec-Fetch-Site cross-site": {"Sec-Fetch-Site": "cross-site"},
			"Origin only":               {"Origin": "https://evil.example"},
		} {
			resp, body := admin.postWith(t, base+"/admin/console/release", form, h)
			if resp.StatusCode != http.StatusForbidden || strings.Contains(body, "released") {
				t.Fatalf("a console release, %s, with the admin's cookie and token: %d %.300s", name, resp.StatusCode, body)
			}
			h["Cookie"] = admin.cookies()
			resp, body = do(t, "POST", base+"/admin/locks/orders/ord_31337/release", strings.NewReader(`{"reason": "x"}`), h)
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("an admin API release, %s, with the admin's cookie: %d %s", name, resp.StatusCode, body)
			}
		}
		noToken := url.Values{}
		for k, v := range form {
			if k != "csrf" {
				noToken[k] = v
			}
		}
		if resp, body := admin.post(t, base+"/admin/console/release", noToken, ""); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("a console release without the console's token, with the admin's cookie: %d %.300s", resp.StatusCode, body)
		}
		if !strings.Contains(adminLocks(t, base), `"ord_31337"`) {
			t.Fatal("a refused release released the lock")
		}
		// The same form from the console's own page releases.
		resp, body := admin.post(t, base+"/admin/console/release", form, "same-origin")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "released order &#39;ord_31337&#39;") {
			t.Fatalf("the console's release from its own page: %d %.300s", resp.StatusCode, body)
		}
	})
}

// TestWrongSignIn: a wrong password, or a user name no sign-in may carry,
// answers the form again with a 403 and changes nothing: no cookie, no new
// session, and the session the browser already had still works.
func TestWrongSignIn(t *testing.T) {
	users := newAuth()
	mux := http.NewServeMux()
	signIn := newSignIn(users, slog.New(slog.DiscardHandler))
	signIn.register(mux)
	mux.Handle(consolePath, signIn.first(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if users.admin(r) != nil {
			w.WriteHeader(http.StatusForbidden)
		}
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	b := signInAs(t, srv.URL, "admin")
	for _, form := range []url.Values{
		{"user": {"admin"}, "password": {"Demo"}},
		{"user": {"admin"}, "password": {"demo "}},
		{"user": {"admin"}},
		{"user": {""}, "password": {"demo"}},
		{"user": {"adm\nin"}, "password": {"demo"}},
		{"user": {strings.Repeat("a", 256)}, "password": {"demo"}},
		{"user": {"\xff"}, "password": {"demo"}},
	} {
		resp, body := b.post(t, srv.URL+"/login", form, "same-origin")
		if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) > 0 || !strings.Contains(body, "Wrong user name or password") {
			t.Fatalf("%q: %d, cookies %v: %.300s", form, resp.StatusCode, resp.Cookies(), body)
		}
		if n := liveSessions(users.sessions); n != 1 {
			t.Fatalf("%q: %d live sessions, want the one from before", form, n)
		}
		if resp, _ := b.get(t, srv.URL+consolePath); resp.StatusCode != http.StatusOK {
			t.Fatalf("%q: the earlier session no longer opens the console (%d)", form, resp.StatusCode)
		}
	}
}

// TestSignInOverTLS: served over TLS, both cookies are Secure.
func TestSignInOverTLS(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	handler, closeAll, err := build(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	srv := httptest.NewTLSServer(handler)
	defer srv.Close()
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	resp, err := client.Get(srv.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	form := resp.Cookies()
	if len(form) != 1 || !form[0].Secure || form[0].SameSite != http.SameSiteStrictMode || !form[0].HttpOnly {
		t.Fatalf("the form cookie over TLS: %+v", form)
	}
	req, _ := http.NewRequest("POST", srv.URL+"/login", strings.NewReader(url.Values{"user": {"admin"}, "password": {"demo"},
		"csrf": {field(t, string(body), "csrf")}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(form[0])
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if c := sessionOf(t, resp); !c.Secure || !c.HttpOnly {
		t.Fatalf("the session cookie over TLS: %+v", c)
	}
}

// TestSessionsExpire: a session ends after its TTL, and the expired are
// dropped at the next sign-in.
func TestSessionsExpire(t *testing.T) {
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	s := newSessions(time.Hour, func() time.Time { return now })
	v := s.start("admin")
	if user, ok := s.user(v); !ok || user != "admin" || v == "admin" {
		t.Fatalf("a new session: %q %v", user, ok)
	}
	if _, ok := s.user(v + "x"); ok {
		t.Fatal("an unknown value is someone")
	}
	now = now.Add(time.Hour)
	if _, ok := s.user(v); ok {
		t.Fatal("an expired session is still someone")
	}
	s.start("usr_client_1")
	if len(s.byHash) != 1 {
		t.Fatalf("%d sessions kept, want the expired one dropped", len(s.byHash))
	}
}

// TestLanding: a sign-in goes on to the console only, whatever next says:
// /login is no open redirect.
func TestLanding(t *testing.T) {
	for next, want := range map[string]string{
		"":                                       "/admin/console",
		"/admin/console":                         "/admin/console",
		"/admin/console?user=usr&sort=user":      "/admin/console?sort=user&user=usr",
		"/admin/console?user=%22%3E%3Cscript%3E": "/admin/console?user=%22%3E%3Cscript%3E",
		"//evil.example/admin/console":           "/admin/console",
		"https://evil.example/admin/console":     "/admin/console",
		"/\t/evil.example":                       "/admin/console",
		"/\\evil.example":                        "/admin/console",
		"/admin/console/../../evil":              "/admin/console",
		"javascript:alert(1)":                    "/admin/console",
		"/orders/ord_99182":                      "/admin/console",
	} {
		if got := landing(next); got != want {
			t.Errorf("landing(%q) = %q, want %q", next, got, want)
		}
	}
}

// do sends one request with headers h (a "Cookie" of "" sends none), and
// shows a redirect rather than following it.
func do(t *testing.T, method, url string, body io.Reader, h map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	if method == "POST" && h["Content-Type"] == "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, string(out)
}

// browser is one browser's cookies, which the tests send by hand: form,
// the login-form token (its cookie and its forms' field alike), and
// session.
type browser struct{ form, session string }

// openLogin is a browser that has opened /login.
func openLogin(t *testing.T, base string) *browser {
	t.Helper()
	resp, body := do(t, "GET", base+"/login", nil, nil)
	for _, c := range resp.Cookies() {
		if c.Name == formCookie && c.Value == field(t, body, "csrf") {
			return &browser{form: c.Value}
		}
	}
	t.Fatalf("GET /login: %d, cookies %v, no form cookie matching the form", resp.StatusCode, resp.Cookies())
	return nil
}

// signInAs is a browser signed in as user through the form.
func signInAs(t *testing.T, base, user string) *browser {
	t.Helper()
	b := openLogin(t, base)
	resp, body := b.post(t, base+"/login", url.Values{"user": {user}, "password": {"demo"}}, "same-origin")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in as %s: %d %s", user, resp.StatusCode, body)
	}
	b.session = sessionOf(t, resp).Value
	return b
}

func (b *browser) cookies() string {
	out := formCookie + "=" + b.form
	if b.session != "" {
		out += "; " + sessionCookie + "=" + b.session
	}
	return out
}

func (b *browser) get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	return do(t, "GET", url, nil, map[string]string{"Cookie": b.cookies()})
}

// post posts form as a page of site ("same-origin", "cross-site", or ""
// for a browser that does not say) with the browser's cookies, adding the
// login-form token for /login and /logout.
func (b *browser) post(t *testing.T, url string, form url.Values, site string) (*http.Response, string) {
	t.Helper()
	return b.postWith(t, url, form, map[string]string{"Sec-Fetch-Site": site})
}

// postWith is post with headers h over the browser's own ("Cookie" among
// them replaces its cookies).
func (b *browser) postWith(t *testing.T, to string, form url.Values, h map[string]string) (*http.Response, string) {
	t.Helper()
	f := url.Values{}
	for k, v := range form {
		f[k] = v
	}
	if strings.HasSuffix(to, "/login") || strings.HasSuffix(to, "/logout") {
		f.Set("csrf", b.form)
	}
	headers := map[string]string{"Cookie": b.cookies()}
	for k, v := range h {
		headers[k] = v
	}
	return do(t, "POST", to, strings.NewReader(f.Encode()), headers)
}

// sessionOf is the session cookie resp sets.
func sessionOf(t *testing.T, resp *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			return c
		}
	}
	t.Fatalf("%d sets no session cookie (%v)", resp.StatusCode, resp.Cookies())
	return nil
}

func hasSession(resp *http.Response) bool {
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			return true
		}
	}
	return false
}

// field is the value of the first input named name in page.
func field(t *testing.T, page, name string) string {
	t.Helper()
	m := regexp.MustCompile(`name="` + name + `" value="([^"]*)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no field %s in %.300s", name, page)
	}
	return m[1]
}

// releaseForm is the console's release form of order id, as the admin's
// page renders it, with a reason.
func releaseForm(t *testing.T, base string, admin *browser, id string) url.Values {
	t.Helper()
	resp, page := admin.get(t, base+"/admin/console?id="+id)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the console: %d", resp.StatusCode)
	}
	form := url.Values{"reason": {"a test"}}
	for _, name := range []string{"csrf", "key_resource", "key_id", "key_generation"} {
		form.Set(name, field(t, page, name))
	}
	return form
}

// adminLocks is GET /admin/locks, as the bearer admin.
func adminLocks(t *testing.T, base string) string {
	t.Helper()
	resp, body := do(t, "GET", base+"/admin/locks", nil, map[string]string{"Authorization": "Bearer admin"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /admin/locks: %d %s", resp.StatusCode, body)
	}
	return body
}

// liveSessions counts the sessions not yet expired.
func liveSessions(s *sessions) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ses := range s.byHash {
		if s.now().Before(ses.expires) {
			n++
		}
	}
	return n
}
