package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// TestAutosaveLocksOnTheFirstChange plays the recipe for pages that
// autosave or lock on the first change, in headless Chromium: the page
// holds no lock while it is only looked at; the first keystroke takes it,
// and the typing is saved as it goes. A change David made between the
// page's load and Martin's first keystroke (which no lock covered) is not
// overwritten: the save names the version the page loaded, is refused
// (409), the page keeps Martin's typing and gives the lock back.
func TestAutosaveLocksOnTheFirstChange(t *testing.T) {
	path := chromium(t)
	eachDatabase(t, testOptions(), func(t *testing.T, a *app, base string) {
		actx, cancel := newBrowser(t, path, 2*time.Minute)
		defer cancel()
		s := &scene{t: t, a: a, base: base}
		martin := s.person(actx, "martin")

		s.do(martin, chromedp.Navigate(base+"/customers/129/autosave"))
		s.wait(martin, "lockstate", "Viewing customer 129: your first change takes the lock.", 5*time.Second)
		if got := held(t, a); len(got) != 0 {
			t.Fatalf("a page only looked at holds %q", got)
		}
		s.typeAtEnd(martin, "name", " Ltd")
		s.wait(martin, "lockstate", "You are editing customer 129; changes are saved as you type.", 5*time.Second)
		s.wait(martin, "status", "Saved.", 5*time.Second)
		s.waitSaved(129, "Acme Widgets Ltd", 5*time.Second)
		if l := s.holder(129); l.Owner.User != "martin" {
			t.Fatalf("the first change took %+v", l)
		}

		// David changes customer 130 after Martin's page loaded it, and
		// before Martin's first keystroke.
		s.do(martin, chromedp.Navigate(base+"/customers/130/autosave"))
		s.wait(martin, "lockstate", "Viewing customer 130: your first change takes the lock.", 5*time.Second)
		david := a.db.WithContext(offlinelock.WithOwner(context.Background(), offlinelock.Owner{Session: "david-1", User: "david"}))
		if _, err := a.locks.Acquire(david, &Customer{ID: 130}, offlinelock.Write); err != nil {
			t.Fatal(err)
		}
		if err := david.Model(&Customer{ID: 130}).Updates(map[string]any{"name": "Globex by David", "version": gorm.Expr("version + 1")}).Error; err != nil {
			t.Fatal(err)
		}
		if err := a.locks.Release(david, &Customer{ID: 130}); err != nil {
			t.Fatal(err)
		}
		s.typeAtEnd(martin, "name", " Corp")
		s.wait(martin, "status", "Not saved: customer 130 was changed since you opened it (version 1): reload it to see the change", 5*time.Second)
		s.wait(martin, "lockstate", "Customer 130 was changed since you opened it: reload to see the change.", time.Second)
		s.wait(martin, "kept", "Your unsaved changes: name \u201cGlobex Corp\u201d, credit 1200.", time.Second)
		s.waitFree(130, 5*time.Second)
		s.waitSaved(130, "Globex by David", time.Second)
	})
}

// waitSaved waits until customer id's name is name.
func (s *scene) waitSaved(id int, name string, within time.Duration) {
	s.t.Helper()
	var c Customer
	for end := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
		if err := s.a.db.First(&c, id).Error; err != nil {
			s.t.Fatal(err)
		}
		if c.Name == name {
			return
		}
		if time.Now().After(end) {
			s.t.Fatalf("customer %d is named %q after %v, not %q", id, c.Name, within, name)
		}
	}
}

// typeAtEnd types text at the end of input id, key by key.
func (s *scene) typeAtEnd(ctx context.Context, id, text string) {
	s.t.Helper()
	js := `{ const e = document.getElementById(` + strconv.Quote(id) + `); e.focus(); e.setSelectionRange(e.value.length, e.value.length); true }`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err != nil {
		s.t.Fatal(err)
	}
	s.do(ctx, chromedp.KeyEvent(text))
}
