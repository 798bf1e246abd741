package main

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/offlinelock/offlinelock"
)

// TestEightTabsKeepTheirLocks: one user with eight edit tabs in one
// browser, over HTTP/1.1 (six connections to a host in Chromium), each
// tab holding the lock of a customer of its own with a 60 s lease and
// renewing it every second (the page's renewEverySeconds: the test's
// clock). Before the tabs shared one event stream, each tab's stream took
// one of the six connections and the renewals waited behind them (0
// renewals in 9 s with seven tabs). Now every tab's renewals succeed on
// schedule, the browser holds one event stream (and a second for a moment
// while the leader opens it anew for a new tab), and a tab opened last is
// told what another user does to its record.
func TestEightTabsKeepTheirLocks(t *testing.T) {
	path := chromium(t)
	o := testOptions()
	o.ttl = time.Minute // a realistic lease; the page renews every o.renew
	eachDatabase(t, o, func(t *testing.T, a *app, base string) {
		ids := []int{129, 130, 131, 132, 133, 134, 135, 136}
		seedMore(t, a, ids[2:])
		actx, cancel := newBrowser(t, path, 3*time.Minute)
		defer cancel()
		s := &scene{t: t, a: a, base: base}
		martin := s.person(actx, "martin")
		wire.reset()
		tabs := []context.Context{martin}
		for range ids[1:] {
			tab, closeTab := chromedp.NewContext(martin)
			defer closeTab()
			tabs = append(tabs, tab)
		}
		for i, tab := range tabs {
			s.open(tab, ids[i])
			s.wait(tab, "lockstate", fmt.Sprintf("You are editing customer %d.", ids[i]), 10*time.Second)
		}

		// Every tab renews every o.renew: each makes three more renewals,
		// all answered 200, within three intervals and a little more.
		before := make([]int, len(ids))
		for i, id := range ids {
			before[i] = renewals.count("/customers/" + strconv.Itoa(id) + "/lock")
		}
		const more = 3
		within := more*o.renew + 2*time.Second
		for end := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
			behind := []string{}
			for i, id := range ids {
				if n := renewals.count("/customers/"+strconv.Itoa(id)+"/lock") - before[i]; n < more {
					behind = append(behind, fmt.Sprintf("customer %d: %d", id, n))
				}
			}
			if len(behind) == 0 {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("within %v, renewing every %v, tabs renewed fewer than %d times: %v", within, o.renew, more, behind)
			}
		}
		for i, id := range ids {
			l := s.holder(id)
			if l.Owner.User != "martin" || time.Until(l.ExpiresAt) < o.ttl-2*o.renew {
				t.Fatalf("customer %d's lock is %+v: not renewed within %v", id, l, 2*o.renew)
			}
			if text := s.text(tabs[i], "status"); text != "" {
				t.Fatalf("tab %d says %q", i, text)
			}
		}
		// One event stream for the eight tabs, once the leader's last
		// change has settled; at most two while it replaces one (the
		// server may see the new one open a moment before the close of
		// the one before, which the browser sent first: three).
		for end := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			protos, most, open := wire.seen()
			if len(protos) != 1 || !protos["HTTP/1.1"] || most > 3 {
				t.Fatalf("the browser spoke %v and held %d event streams at once; want HTTP/1.1 only, at most 3", protos, most)
			}
			if open == 1 {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("the eight tabs hold %d event streams, not one", open)
			}
		}

		// The last tab opened is told, through the shared stream, what
		// another user does to its record.
		eve := a.db.WithContext(offlinelock.WithOwner(context.Background(), offlinelock.Owner{Session: "eve-1", User: "eve"}))
		if _, err := a.locks.TakeOver(eve, &Customer{ID: uint(ids[7])}, "eve needs it"); err != nil {
			t.Fatal(err)
		}
		s.wait(tabs[7], "lockstate", "eve took over this customer (eve needs it): your changes can no longer be saved.", 2*time.Second)
	})
}

// seedMore adds customers with ids.
func seedMore(t *testing.T, a *app, ids []int) {
	t.Helper()
	admin := a.db.WithContext(offlinelock.Bypass(context.Background(), "test data"))
	for _, id := range ids {
		if err := admin.Save(&Customer{ID: uint(id), Name: "Customer " + strconv.Itoa(id)}).Error; err != nil {
			t.Fatal(err)
		}
	}
}

// newBrowser starts headless Chromium at path, 900 by 600, for at most
// within.
func newBrowser(t *testing.T, path string, within time.Duration) (context.Context, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Headless,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(900, 600))...)
	return actx, func() { cancelAlloc(); cancel() }
}

// TestAFrozenLeaderIsTakenOver: the tab holding the browser's shared
// event stream is frozen (as a phone's background tab is); the browser's
// other, visible tab, hearing nothing from it, opens the stream itself,
// and is told what another user then does to its record. Its timing is
// the client's: the leader says it is alive every 10 s, and is taken over
// after 25 s of silence.
func TestAFrozenLeaderIsTakenOver(t *testing.T) {
	path := chromium(t)
	o := testOptions()
	o.ttl = time.Minute
	eachDatabase(t, o, func(t *testing.T, a *app, base string) {
		actx, cancel := newBrowser(t, path, 3*time.Minute)
		defer cancel()
		s := &scene{t: t, a: a, base: base}
		leader := s.person(actx, "martin")
		before := wire.count() // the streams of earlier subtests are not this one's
		s.open(leader, 129)
		s.wait(leader, "lockstate", "You are editing customer 129.", 10*time.Second)
		follower, closeTab := chromedp.NewContext(leader)
		defer closeTab()
		s.open(follower, 130)
		s.wait(follower, "lockstate", "You are editing customer 130.", 10*time.Second)
		wire.waitServed(t, before, "customers/130", 5*time.Second) // the leader's, for both tabs
		s.do(leader, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, page.SetWebLifecycleState, page.SetWebLifecycleStateParams{State: page.SetWebLifecycleStateStateFrozen})
			return err
		}))
		// A frozen page opens no stream: one served from now on is the follower's.
		wire.waitServed(t, wire.count(), "customers/130", 45*time.Second)
		eve := a.db.WithContext(offlinelock.WithOwner(context.Background(), offlinelock.Owner{Session: "eve-1", User: "eve"}))
		if _, err := a.locks.TakeOver(eve, &Customer{ID: 130}, "eve needs it"); err != nil {
			t.Fatal(err)
		}
		s.wait(follower, "lockstate", "eve took over this customer (eve needs it): your changes can no longer be saved.", 2*time.Second)
	})
}
