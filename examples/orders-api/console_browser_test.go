package main

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// TestConsoleInBrowser drives the lock console in headless Chromium: two
// users take locks over the API; the admin opens /admin/console, is sent to
// /login, signs in through the form and lands on the console, filters by
// user, releases one lock with a reason, and the page and the lock table
// agree; a page on another site cannot release with the admin's cookie;
// after signing out, the console asks for a sign-in again, and a non-admin
// who signs in is refused. With OFFLINELOCK_SCREENSHOT=1 it writes the page
// to docs/console.png.
func TestConsoleInBrowser(t *testing.T) {
	browser := chromium(t)
	eachDatabase(t, func(t *testing.T, dsn string, open func() *gorm.DB) {
		consoleInBrowser(t, browser, dsn, open)
	})
}

// chromium is the path of the browser: under CI=true its absence fails the
// test (.ci/run installs Debian's chromium); elsewhere it skips.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true needs Chromium for the console's browser test: apt-get install chromium")
	}
	t.Skip("no chromium on PATH: the console's browser test needs it")
	return ""
}

// consoleInBrowser runs the example on dsn and plays the console session;
// open opens the example's database for the test's own look at the locks.
func consoleInBrowser(t *testing.T, browser, dsn string, open func() *gorm.DB) {
	base := start(t, dsn)
	tokens := []string{take(t, base, "usr_client_1", "ord_99182"), take(t, base, "usr_client_2", "ord_40017"),
		take(t, base, "usr_client_1", "ord_31337")}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Headless,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 560))...)
	defer cancelAlloc()
	bctx, closeBrowser := chromedp.NewContext(actx)
	defer closeBrowser()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// The admin opens the console, signs in on the way, and sees the
	// three locks, oldest first.
	resp := signInThrough(t, bctx, base, "admin")
	if loc, err := chromedp.Run(bctx, chromedp.Location()); err != nil || resp.Status != http.StatusOK || loc != base+"/admin/console" {
		t.Fatalf("admin's console after the sign-in: %d at %s (%v)", resp.Status, loc, err)
	}
	sessionCookieIsSafe(t, bctx, base)
	want := []string{"ord_99182 usr_client_1", "ord_40017 usr_client_2", "ord_31337 usr_client_1"}
	if got := pageLocks(t, bctx); !slices.Equal(got, want) {
		t.Fatalf("console lists %q, want %q", got, want)
	}
	// The console fits a 900 px window: no sideways scrolling.
	must(chromedp.Do(bctx, chromedp.EmulateViewport(900, 560)))
	if wide, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); err != nil || wide > 900 {
		t.Fatalf("at 900 px the console is %d px wide (%v)", wide, err)
	}
	must(chromedp.Do(bctx, chromedp.EmulateViewport(1280, 560)))
	html, err := chromedp.Run(bctx, chromedp.OuterHTML(chromedp.CSS("html")))
	must(err)
	for _, token := range tokens {
		if strings.Contains(html, token) {
			t.Fatal("the console shows a lock token")
		}
	}

	// Filtered by user: the GET form.
	resp, err = chromedp.RunResponse(bctx, chromedp.SendKeys(chromedp.ID("filter-user"), "usr_client_1"),
		chromedp.Click(chromedp.ID("filter-apply")))
	must(err)
	loc, err := chromedp.Run(bctx, chromedp.Location())
	must(err)
	want = []string{"ord_99182 usr_client_1", "ord_31337 usr_client_1"}
	if got := pageLocks(t, bctx); resp.Status != http.StatusOK || !strings.Contains(loc, "user=usr_client_1") || !slices.Equal(got, want) {
		t.Fatalf("filtered (%d, %s): %q, want %q", resp.Status, loc, got, want)
	}

	// The page's one stylesheet applies under its CSP (its nonce matches),
	// and the browser will not send a release without a reason.
	bg, err := chromedp.Run(bctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("th")).backgroundColor`))
	must(err)
	valid, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.querySelector('tr.lock[data-id="ord_99182"] form').checkValidity()`))
	must(err)
	if bg != "rgb(246, 248, 250)" || valid {
		t.Fatalf("styled %q, a form without a reason valid: %v", bg, valid)
	}

	// Release ord_99182 with a reason: the POST form, CSRF token and all.
	row := `tr.lock[data-id="ord_99182"] `
	resp, err = chromedp.RunResponse(bctx, chromedp.SendKeys(chromedp.CSS(row+`input[name="reason"]`), "client crashed during checkout"),
		chromedp.Click(chromedp.CSS(row+`button`)))
	must(err)
	result, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("result")))
	must(err)
	if resp.Status != http.StatusOK || result != "released order 'ord_99182' (reason: client crashed during checkout)" {
		t.Fatalf("release: %d %q", resp.Status, result)
	}
	want = []string{"ord_31337 usr_client_1"}
	if got := pageLocks(t, bctx); !slices.Equal(got, want) {
		t.Fatalf("after the release the page lists %q, want %q (the filter kept)", got, want)
	}
	if held := tableLocks(t, open()); !slices.Equal(held, []string{"ord_31337 usr_client_1", "ord_40017 usr_client_2"}) {
		t.Fatalf("the lock table holds %q", held)
	}
	screenshot(t, bctx)

	// Another site's page cannot release with the admin's cookie, even
	// with a release form the console rendered.
	crossSiteRelease(t, bctx, base, "ord_31337")
	if held := tableLocks(t, open()); !slices.Equal(held, []string{"ord_31337 usr_client_1", "ord_40017 usr_client_2"}) {
		t.Fatalf("after another site's release the lock table holds %q", held)
	}

	// Signed out, the console sends the browser to /login again; a
	// non-admin who signs in there is refused, and sees no lock.
	_, err = chromedp.Run(bctx, chromedp.NavigateResponse(base+"/login"))
	must(err)
	resp, err = chromedp.RunResponse(bctx, chromedp.Click(chromedp.ID("logout")))
	must(err)
	if loc, _ := chromedp.Run(bctx, chromedp.Location()); resp.Status != http.StatusOK || loc != base+"/login" {
		t.Fatalf("sign-out: %d at %s", resp.Status, loc)
	}
	resp = signInThrough(t, bctx, base, "usr_client_2")
	body, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("body")))
	must(err)
	if resp.Status != http.StatusForbidden || strings.Contains(body, "ord_") {
		t.Fatalf("non-admin: %d %q", resp.Status, body)
	}
}

// signInThrough opens the console, which sends a browser without a live
// session to /login, and signs in there as user through the form; it
// returns the response of the page the form leads to.
func signInThrough(t *testing.T, ctx context.Context, base, user string) *network.Response {
	t.Helper()
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(base+"/admin/console"))
	if err != nil {
		t.Fatal(err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || resp.Status != http.StatusOK || loc != base+"/login?next=%2Fadmin%2Fconsole" {
		t.Fatalf("the console without a session: %d at %s (%v), want the sign-in page", resp.Status, loc, err)
	}
	resp, err = chromedp.RunResponse(ctx, chromedp.SendKeys(chromedp.ID("user"), user),
		chromedp.SendKeys(chromedp.ID("password"), demoPassword), chromedp.Click(chromedp.ID("login")))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// sessionCookieIsSafe checks the session cookie as the browser keeps it:
// out of scripts' reach, not sent by other sites' POSTs, and not the user
// name.
func sessionCookieIsSafe(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	cookies, err := chromedp.Run(ctx, func(ctx context.Context, t *chromedp.Target) ([]*network.Cookie, error) {
		res, err := cdp.Call(ctx, t, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/"}})
		return res.Cookies, err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cookies {
		if c.Name == sessionCookie {
			if !c.HTTPOnly || c.SameSite != network.CookieSameSiteLax || c.Path != "/" || c.Value == "admin" || len(c.Value) < 26 {
				t.Fatalf("the session cookie in the browser: %+v", c)
			}
			return
		}
	}
	t.Fatalf("the browser holds no session cookie: %v", cookies)
}

// crossSiteRelease has the browser, signed in as the admin, open a page on
// another site (localhost against the example's 127.0.0.1) whose form posts
// the console's own release form of id, token and all, to the example: it
// must be refused.
func crossSiteRelease(t *testing.T, ctx context.Context, base, id string) {
	t.Helper()
	form, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries(new FormData(
		document.querySelector('tr.lock[data-id="`+id+`"] form')))`))
	if err != nil || form["csrf"] == "" {
		t.Fatalf("the release form of %s: %v (%v)", id, form, err)
	}
	form["reason"] = "posted by another site"
	page := `<!DOCTYPE html><form method="post" action="` + base + `/admin/console/release">`
	for k, v := range form {
		page += `<input type="hidden" name="` + html.EscapeString(k) + `" value="` + html.EscapeString(v) + `">`
	}
	page += `<button id="go">Win a prize</button></form>`
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	evil := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page)
	}), ReadHeaderTimeout: 5 * time.Second}
	go evil.Serve(l)
	defer evil.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	if _, err := chromedp.Run(ctx, chromedp.NavigateResponse("http://localhost:"+port+"/")); err != nil {
		t.Fatal(err)
	}
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("go")))
	if err != nil {
		t.Fatal(err)
	}
	body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil || resp.Status != http.StatusForbidden || strings.Contains(body, "released") {
		t.Fatalf("another site's release: %d %q (%v)", resp.Status, body, err)
	}
}

// pageLocks reads the console's table: "id user" per row, in order.
func pageLocks(t *testing.T, ctx context.Context) []string {
	t.Helper()
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll("tr.lock"), chromedp.AtLeast(0)))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, n := range nodes {
		out = append(out, n.AttributeValue("data-id")+" "+n.AttributeValue("data-user"))
	}
	return out
}

// tableLocks is the lock table's own view, through Plugin.List.
func tableLocks(t *testing.T, db *gorm.DB) []string {
	t.Helper()
	p := offlinelock.New(offlinelock.Config{Logger: slog.New(slog.DiscardHandler)})
	if err := db.Use(p); err != nil {
		t.Fatal(err)
	}
	locks, err := p.List(db, offlinelock.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, l := range locks {
		out = append(out, l.ID+" "+l.Owner.User)
	}
	slices.Sort(out)
	return out
}

// screenshot writes the page to docs/console.png when
// OFFLINELOCK_SCREENSHOT=1 (once, from SQLite): the README shows it.
func screenshot(t *testing.T, ctx context.Context) {
	if os.Getenv("OFFLINELOCK_SCREENSHOT") != "1" || !strings.HasSuffix(t.Name(), "/sqlite") {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "..", "docs", "console.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote docs/console.png (%d bytes)", len(png))
}

// take locks order id for user through the API and returns its token, once the
// clock has moved past the lock's acquiredAt, so that locks taken one after
// another have distinct ages (the database's clock is this machine's).
func take(t *testing.T, base, user, id string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/orders/"+id+"/lock", strings.NewReader(`{"ttlSeconds": 600}`))
	req.Header.Set("Authorization", "Bearer "+user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("lock %s as %s: %d %s", id, user, resp.StatusCode, body)
	}
	var l struct{ AcquiredAt time.Time }
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatal(err)
	}
	for !time.Now().After(l.AcquiredAt.Add(2 * time.Millisecond)) {
		time.Sleep(time.Millisecond)
	}
	return resp.Header.Get("Lock-Token")
}
