package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
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
// users take locks over the API, the admin opens /admin/console, filters by
// user, releases one lock with a reason, and the page and the lock table
// agree; a non-admin is refused. With OFFLINELOCK_SCREENSHOT=1 it writes the
// page to docs/console.png.
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
	as := func(user string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			if _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); err != nil {
				return err
			}
			_, err := cdp.Call(ctx, t, network.SetExtraHTTPHeaders,
				network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": "Bearer " + user}})
			return err
		})
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// The admin sees the three locks, oldest first.
	must(chromedp.Do(bctx, as("admin")))
	resp, err := chromedp.Run(bctx, chromedp.NavigateResponse(base+"/admin/console"))
	must(err)
	if resp.Status != http.StatusOK {
		t.Fatalf("admin's console: %d", resp.Status)
	}
	want := []string{"ord_99182 usr_client_1", "ord_40017 usr_client_2", "ord_31337 usr_client_1"}
	if got := pageLocks(t, bctx); !slices.Equal(got, want) {
		t.Fatalf("console lists %q, want %q", got, want)
	}
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

	// A non-admin is refused, and sees no lock.
	must(chromedp.Do(bctx, as("usr_client_2")))
	resp, err = chromedp.Run(bctx, chromedp.NavigateResponse(base+"/admin/console"))
	must(err)
	body, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("body")))
	must(err)
	if resp.Status != http.StatusForbidden || strings.Contains(body, "ord_") {
		t.Fatalf("non-admin: %d %q", resp.Status, body)
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
