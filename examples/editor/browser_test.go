package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/offlinelock/offlinelock"
)

// TestTheSceneInABrowser plays seed 001 in headless Chromium, each person
// in a browser context of their own (their own cookies): Martin edits
// customer 129; David is told "Locked by martin since …"; Martin's lock
// outlives its lease while his page is open; David asks to edit and
// Martin's page shows it; an admin takes over and Martin's page says so
// within 2 seconds, and his Save is refused in words; the admin leaves and
// David's page learns the record is free (its event stream cut meanwhile, so
// it learns it when it reconnects); Martin's reload resumes his own
// lock, a second tab of his is told and may move the edit there; signing
// out releases everything. With OFFLINELOCK_SCREENSHOT=1 it writes David's
// page to docs/editor.png, and Martin's after the take-over, his typing
// kept, to docs/editor-takeover.png.
func TestTheSceneInABrowser(t *testing.T) {
	path := chromium(t)
	eachDatabase(t, testOptions(), func(t *testing.T, a *app, base string) {
		actx, cancel := newBrowser(t, path, 3*time.Minute)
		defer cancel()
		s := &scene{t: t, a: a, base: base}
		martin := s.person(actx, "martin")
		david := s.person(martin, "david")
		admin := s.person(martin, "admin")

		s.open(martin, 129)
		s.wait(martin, "lockstate", "You are editing customer 129.", 10*time.Second)
		s.open(david, 129)
		s.wait(david, "lockstate", "Locked by martin since ", 10*time.Second)
		s.wait(martin, "viewers", "david is also viewing.", 5*time.Second)
		s.wait(david, "viewers", "martin is also viewing.", 5*time.Second)
		s.screenshot(david, "editor.png")

		// The page keeps the lock past its lease.
		// The page keeps the lock past its lease, with one request per
		// renewal interval (the only page renewing now is Martin's).
		first, posts := s.holder(129), lockPosts.Load()
		window := a.opts.ttl + time.Second
		time.Sleep(window) // time itself: the lease must run out unrenewed
		if now := s.holder(129); now.Owner.User != "martin" || now.Generation != first.Generation || !now.ExpiresAt.After(first.ExpiresAt) {
			t.Fatalf("after its lease Martin's lock is %+v (was %+v)", now, first)
		}
		if n, most := lockPosts.Load()-posts, int64(window/a.opts.renew)+1; n < 1 || n > most {
			t.Fatalf("the open page sent %d lock requests in %v, renewing every %v (at most %d)", n, window, a.opts.renew, most)
		}

		// A network blip and a proxy's 502 in a row: the page renews again
		// with backoff within the lease, keeps the lock, and says nothing.
		served := faults.set([]fault{dropConnection, badGateway}, nil)
		for range 2 {
			select {
			case <-served:
			case <-time.After(10 * time.Second):
				t.Fatal("the page sent no renewal to fail")
			}
		}
		failed := s.holder(129) // not renewed since the first failure
		for kept := failed; !kept.ExpiresAt.After(failed.ExpiresAt); kept = s.holder(129) {
			if time.Now().After(failed.ExpiresAt) || kept.Generation != first.Generation {
				t.Fatalf("after two failed renewals Martin's lock is %+v (was %+v)", kept, failed)
			}
			time.Sleep(50 * time.Millisecond)
		}
		s.wait(martin, "lockstate", "You are editing customer 129.", time.Second)
		if text := s.text(martin, "status"); text != "" {
			t.Fatalf("the page told of a renewal that was retried: %q", text)
		}

		// A first lock that fails is told, not left at "Taking the lock…".
		served = faults.set(nil, []fault{badGateway})
		s.open(david, 130)
		s.waitEmpty(martin, "viewers", 10*time.Second) // david left customer 129
		<-served
		s.wait(david, "lockstate", "Not editing: the lock could not be taken.", 5*time.Second)
		s.click(david, "retry")
		s.wait(david, "lockstate", "You are editing customer 130.", 10*time.Second)
		s.do(david, chromedp.Navigate(base+"/customers/129/edit"))
		s.wait(david, "lockstate", "Locked by martin since ", 10*time.Second)

		s.click(david, "ask")
		s.wait(martin, "notice", "david asks to edit this customer.", 5*time.Second)

		// Martin types; the take-over hands his typing back to his page,
		// which keeps it through a reload.
		s.do(martin, chromedp.SetValue(chromedp.ID("name"), "Acme Widgets Renamed"))
		s.open(admin, 129)
		s.wait(admin, "lockstate", "Locked by martin since ", 10*time.Second)
		s.click(admin, "takeover")
		s.wait(admin, "lockstate", "You are editing customer 129.", 5*time.Second)
		s.wait(martin, "lockstate", "admin took over this customer (the customer is on the phone): your changes can no longer be saved.", 2*time.Second)
		s.wait(martin, "kept", "Your unsaved changes: name \u201cAcme Widgets Renamed\u201d, credit 5000.", 5*time.Second)
		s.screenshot(martin, "editor-takeover.png")
		s.click(martin, "save")
		s.wait(martin, "status", "Not saved: customer '129' is locked by admin until ", 5*time.Second)
		s.do(martin, chromedp.Reload())
		s.wait(martin, "lockstate", "Locked by admin since ", 10*time.Second)
		s.wait(martin, "kept", "Your unsaved changes: name \u201cAcme Widgets Renamed\u201d, credit 5000.", 5*time.Second)
		s.waitHas(martin, "viewers", "david") // told once the page's stream is open: no line moves under the click
		s.click(martin, "restorekept")
		if name, err := chromedp.Run(martin, chromedp.Value(chromedp.ID("name"))); err != nil || name != "Acme Widgets Renamed" {
			t.Fatalf("the kept typing put back: %q %v", name, err)
		}
		s.wait(david, "lockstate", "Locked by admin since ", 5*time.Second)

		// The admin leaves while the pages' event streams are cut: David's
		// page learns the record is free when its browser reconnects. The
		// streams are open first: each page's browser opens its shared
		// stream once its tab leads (a reloaded page's, after the page it
		// replaced let go), and each page is told who else is viewing
		// once its stream is open.
		s.waitHas(martin, "viewers", "david")
		s.waitHas(david, "viewers", "martin")
		streams.cut()
		s.do(admin, chromedp.Navigate(base+"/")) // the admin leaves the page
		s.waitFree(129, 15*time.Second)
		lastIDs := streams.reopen()
		if len(lastIDs) == 0 || slices.Contains(lastIDs, "") {
			t.Fatalf("the pages reconnected with Last-Event-IDs %q: each should say it is a reconnect", lastIDs)
		}
		s.wait(david, "lockstate", "Customer 129 is free now.", 5*time.Second)
		if got := held(t, a); len(got) != 0 {
			t.Fatalf("after the admin left, the lock table holds %q", got)
		}

		// A reload resumes Martin's own lock; a second tab is told, and may
		// move the edit there.
		s.open(martin, 130)
		s.wait(martin, "lockstate", "You are editing customer 130.", 10*time.Second)
		before := s.holder(130)
		s.do(martin, chromedp.Reload())
		s.wait(martin, "lockstate", "You are editing customer 130.", 10*time.Second)
		if after := s.holder(130); after.Owner.Session != before.Owner.Session || after.Generation != before.Generation {
			t.Fatalf("the reload did not resume the lock: %+v, was %+v", after, before)
		}
		tab, closeTab := chromedp.NewContext(martin)
		defer closeTab()
		s.open(tab, 130)
		s.wait(tab, "lockstate", "You are editing this in another tab since ", 10*time.Second)
		s.click(tab, "here")
		s.wait(tab, "lockstate", "You are editing customer 130.", 5*time.Second)
		s.wait(martin, "lockstate", "You took this over in another tab (moved to another tab): your changes can no longer be saved.", 5*time.Second)

		// A duplicate of that tab (window.open copies its sessionStorage,
		// the kept token too) does not share its lock: it is told, and the
		// lock stays the first tab's.
		moved := s.holder(130)
		// What the holding tab posts on its BroadcastChannel is kept, to
		// show that its answer names the lock without its token.
		if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](`window.posted = []; {
  const post = BroadcastChannel.prototype.postMessage;
  BroadcastChannel.prototype.postMessage = function (m) { window.posted.push(JSON.stringify(m)); return post.call(this, m); };
} true`)); err != nil {
			t.Fatal(err)
		}
		opened := chromedp.WaitNewTarget(tab, func(i *target.Info) bool { return strings.HasSuffix(i.URL, "/customers/130/edit") })
		if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](`window.open(location.href) !== null`)); err != nil {
			t.Fatal(err)
		}
		dup, closeDup := chromedp.NewContext(tab, chromedp.WithTargetID(<-opened))
		defer closeDup()
		s.wait(dup, "lockstate", "You are editing this in another tab since ", 10*time.Second)
		if now := s.holder(130); now.Owner.Session != moved.Owner.Session || now.Generation != moved.Generation {
			t.Fatalf("the duplicated tab changed the lock: %+v, was %+v", now, moved)
		}
		s.wait(tab, "lockstate", "You are editing customer 130.", time.Second)
		posted, err := chromedp.Run(tab, chromedp.Evaluate[[]string](`window.posted`))
		if err != nil {
			t.Fatal(err)
		}
		token, err := chromedp.Run(tab, chromedp.Evaluate[string](`sessionStorage.getItem("offlinelock:/customers/130")`))
		if err != nil {
			t.Fatal(err)
		}
		if len(posted) == 0 || token == "" {
			t.Fatalf("the holding tab answered %q, holding %q", posted, token)
		}
		for _, m := range posted {
			if strings.Contains(m, token) {
				t.Fatalf("the holding tab posted its Lock-Token on the BroadcastChannel: %s", m)
			}
		}

		// A lock the page's event stream never tells (one shorter than a
		// poll; here the streams are held at the server's door) is looked
		// up a few seconds after its 423, and its end is told.
		streams.cut()
		eve := a.db.WithContext(offlinelock.WithOwner(context.Background(), offlinelock.Owner{Session: "eve-1", User: "eve"}))
		if _, err := a.locks.Acquire(eve, &Customer{ID: 129}, offlinelock.Write); err != nil {
			t.Fatal(err)
		}
		s.open(david, 129)
		s.wait(david, "lockstate", "Locked by eve since ", 10*time.Second)
		if err := a.locks.Release(eve, &Customer{ID: 129}); err != nil {
			t.Fatal(err)
		}
		s.wait(david, "lockstate", "Customer 129 is free now.", 6*time.Second)
		streams.reopen()

		s.do(martin, chromedp.Navigate(base+"/"))
		if n, err := chromedp.Run(martin, chromedp.Evaluate[int](`Object.keys(sessionStorage).filter((k) => k.endsWith(":kept")).length`)); err != nil || n == 0 {
			t.Fatalf("before sign-out, martin's tab keeps %d unsaved forms (%v)", n, err)
		}
		s.do(martin, chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("signin")))
		if n, err := chromedp.Run(martin, chromedp.Evaluate[int](`Object.keys(sessionStorage).filter((k) => k.endsWith(":kept")).length`)); err != nil || n != 0 {
			t.Fatalf("after sign-out, martin's tab still keeps %d unsaved forms (%v)", n, err)
		}
		if got := held(t, a); len(got) != 0 {
			t.Fatalf("after Martin signed out, the lock table holds %q", got)
		}
	})
}

type scene struct {
	t    *testing.T
	a    *app
	base string
}

// person is a browser context of its own, signed in as user.
func (s *scene) person(parent context.Context, user string) context.Context {
	var ctx context.Context
	if parent.Value(personKey{}) == nil { // the first: the browser itself
		ctx, _ = chromedp.NewContext(parent)
	} else { // the others: cookies of their own, in the same browser
		ctx, _ = chromedp.NewContext(parent, chromedp.WithNewBrowserContext())
	}
	ctx = context.WithValue(ctx, personKey{}, user)
	s.do(ctx, chromedp.Navigate(s.base+"/login"), chromedp.SendKeys(chromedp.ID("user"), user),
		chromedp.SendKeys(chromedp.ID("password"), "demo"), chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("me")))
	return ctx
}

type personKey struct{}

func (s *scene) open(ctx context.Context, id int) {
	s.t.Helper()
	s.do(ctx, chromedp.Navigate(s.base+"/customers/"+strconv.Itoa(id)+"/edit"))
}

func (s *scene) click(ctx context.Context, id string) {
	s.t.Helper()
	s.do(ctx, chromedp.Click(chromedp.ID(id)))
}

func (s *scene) do(ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	s.t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		s.t.Fatal(err)
	}
}

// wait waits until element id's text starts with want. It polls on a timer,
// not on animation frames, which a tab in the background does not get.
func (s *scene) wait(ctx context.Context, id, want string, within time.Duration) {
	s.t.Helper()
	js := `document.getElementById(` + strconv.Quote(id) + `).textContent.startsWith(` + strconv.Quote(want) + `)`
	if err := poll(ctx, js, within); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.ID(id)))
		s.t.Fatalf("%v: #%s says %q, not %q within %v (%v)", ctx.Value(personKey{}), id, text, want, within, err)
	}
}

// poll evaluates js every 100 ms until it is true or within has passed.
// A page's execution context replaced under the poll (a navigation, or
// Chromium resuming a frozen page: "Cannot find context with specified
// id") ends that poll with an error, not with an answer: polling goes on
// in the new context until the deadline.
func poll(ctx context.Context, js string, within time.Duration) error {
	end := time.Now().Add(within)
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(time.Until(end)), chromedp.WithPollingInterval(100*time.Millisecond)))
		if err == nil || errors.Is(err, chromedp.ErrPollingTimeout) || ctx.Err() != nil || !time.Now().Before(end) {
			return err
		}
		select { // the poll's own interval, before it starts again
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitHas waits until element id's text contains want.
func (s *scene) waitHas(ctx context.Context, id, want string) {
	s.t.Helper()
	js := `document.getElementById(` + strconv.Quote(id) + `).textContent.includes(` + strconv.Quote(want) + `)`
	if err := poll(ctx, js, 5*time.Second); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.ID(id)))
		s.t.Fatalf("%v: #%s says %q, without %q within 5s (%v)", ctx.Value(personKey{}), id, text, want, err)
	}
}

// waitEmpty waits until element id has no text.
func (s *scene) waitEmpty(ctx context.Context, id string, within time.Duration) {
	s.t.Helper()
	js := `document.getElementById(` + strconv.Quote(id) + `).textContent === ""`
	if err := poll(ctx, js, within); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.ID(id)))
		s.t.Fatalf("%v: #%s still says %q after %v (%v)", ctx.Value(personKey{}), id, text, within, err)
	}
}

// waitFree waits until nobody holds customer id.
func (s *scene) waitFree(id int, within time.Duration) {
	s.t.Helper()
	for end := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
		holders, err := s.a.locks.Holders(s.a.db, &Customer{ID: uint(id)})
		if err != nil {
			s.t.Fatal(err)
		}
		if len(holders) == 0 {
			return
		}
		if time.Now().After(end) {
			s.t.Fatalf("customer %d is still held after %v: %+v", id, within, holders)
		}
	}
}

// text is element id's text.
func (s *scene) text(ctx context.Context, id string) string {
	s.t.Helper()
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID(id)))
	if err != nil {
		s.t.Fatal(err)
	}
	return text
}

// holder is the lock on customer id.
func (s *scene) holder(id int) offlinelock.Lock {
	s.t.Helper()
	holders, err := s.a.locks.Holders(s.a.db, &Customer{ID: uint(id)})
	if err != nil || len(holders) != 1 {
		s.t.Fatalf("holders of %d: %v %v", id, holders, err)
	}
	return holders[0]
}

func (s *scene) screenshot(ctx context.Context, file string) {
	if os.Getenv("OFFLINELOCK_SCREENSHOT") != "1" || !strings.HasSuffix(s.t.Name(), "sqlite") {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err == nil {
		err = os.WriteFile(filepath.Join("..", "..", "docs", file), png, 0o644)
	}
	if err != nil {
		s.t.Fatal(err)
	}
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
		t.Fatal("CI=true needs Chromium for the editor's browser test: apt-get install chromium")
	}
	t.Skip("no chromium on PATH: the editor's browser test needs it")
	return ""
}
