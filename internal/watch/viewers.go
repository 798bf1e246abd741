package watch

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Presence: who has a record open, a row of the viewers table per View
// (<table>_viewers, docs/browser.md).

// ViewerGone is how long after its node last refreshed it a viewer stops
// counting; viewerBeat is how often a node refreshes its viewers' rows.
const (
	ViewerGone = 10 * time.Second
	viewerBeat = 3 * time.Second
)

// Viewer is a user who has a record open: its name and since when (the
// earliest of its views), as the root's Viewer.
type Viewer struct {
	User  string
	Since time.Time
}

// viewerRow is one row of the viewers table: one View.
type viewerRow struct {
	ID       string    `gorm:"primaryKey;size:32"`
	Resource string    `gorm:"size:255;not null;index:idx_viewers_record,priority:1"`
	LockID   string    `gorm:"size:255;not null;index:idx_viewers_record,priority:2"`
	UserName string    `gorm:"size:255;not null"`
	Since    time.Time `gorm:"not null"`
	Seen     time.Time `gorm:"not null"`
}

func viewersTable(table string) string { return table + "_viewers" }

// presence is one database's views on this node, and the loop that
// refreshes their rows.
type presence struct {
	mu        sync.Mutex
	db        *gorm.DB            // a session of the database, on its own connections
	views     map[string]struct{} // the ids of this node's live views
	made      bool                // the viewers table is there
	asked     time.Time           // when a watcher last looked for it, while not made
	failed    time.Time           // when making it last failed
	failedErr error               // and why: told again, without asking the database, for ViewerGone
	stop      context.CancelFunc  // the refresh loop's, while views last
}

// View announces that user has k open until ctx ends: a row of the viewers
// table (made on first use), refreshed meanwhile.
func (h *Hub) View(ctx context.Context, db *gorm.DB, k key, user string) error {
	pr := &h.pr
	if err := h.ensureViewers(db); err != nil {
		return err
	}
	var id [16]byte
	rand.Read(id[:])
	now := time.Now().UTC()
	row := viewerRow{ID: hex.EncodeToString(id[:]), Resource: k.Resource, LockID: k.ID, UserName: user, Since: now, Seen: now}
	if err := on(pr.db, h.viewers).Create(&row).Error; err != nil {
		return err
	}
	pr.mu.Lock()
	pr.views[row.ID] = struct{}{}
	if pr.stop == nil {
		loop, stop := context.WithCancel(context.Background())
		pr.stop = stop
		go h.refresh(loop)
	}
	pr.mu.Unlock()
	context.AfterFunc(ctx, func() {
		pr.mu.Lock()
		delete(pr.views, row.ID)
		if len(pr.views) == 0 && pr.stop != nil {
			pr.stop()
			pr.stop = nil
		}
		pr.mu.Unlock()
		on(pr.db, h.viewers).Where(clause.Eq{Column: clause.Column{Name: "id"}, Value: row.ID}).Delete(&viewerRow{})
	})
	return nil
}

// ensureViewers makes the viewers table if it is missing, once per database.
func (h *Hub) ensureViewers(db *gorm.DB) error {
	pr := &h.pr
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.made {
		return nil
	}
	if time.Since(pr.failed) < ViewerGone {
		return pr.failedErr // a role that may not make it: not asked again at every page's open
	}
	s := own(db)
	if err := create(s, h.viewers, &viewerRow{}); err != nil {
		pr.failed = time.Now()
		pr.failedErr = fmt.Errorf("offlinelock: the viewers table %s, which View needs, is missing and could not be made (`offlinelock guard install`, run as the tables' owner, makes it; then grant the application SELECT, INSERT, UPDATE and DELETE on it): %w", h.viewers, err)
		return pr.failedErr
	}
	pr.db, pr.views, pr.made = s, map[string]struct{}{}, true
	return nil
}

// refresh marks this node's views seen every viewerBeat, in one statement
// per 100 of them, until ctx ends; every tenth beat it also deletes the
// rows that stopped counting a minute ago (their node stopped).
func (h *Hub) refresh(ctx context.Context) {
	pr := &h.pr
	tick := time.NewTicker(viewerBeat)
	defer tick.Stop()
	for beat := 1; ; beat++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		db := pr.db.WithContext(ctx)
		if beat%10 == 0 {
			on(db, h.viewers).Where(clause.Lt{Column: clause.Column{Name: "seen"}, Value: time.Now().UTC().Add(-ViewerGone - time.Minute)}).
				Delete(&viewerRow{})
		}
		pr.mu.Lock()
		ids := make([]any, 0, len(pr.views))
		for id := range pr.views {
			ids = append(ids, id)
		}
		pr.mu.Unlock()
		now := time.Now().UTC()
		for batch := range slices.Chunk(ids, 100) {
			on(db, h.viewers).Where(clause.IN{Column: clause.Column{Name: "id"}, Values: batch}).Update("seen", now)
		}
	}
}

// viewersNow reads the viewers of keys, one statement per 100 of them,
// each record's users once with their earliest view, by since and name.
// It reads nothing while no View has made the viewers table here.
func (h *Hub) viewersNow(db *gorm.DB, keys []key) (map[key][]Viewer, error) {
	out := map[key][]Viewer{}
	if made, err := h.viewersMade(db); err != nil || !made {
		return out, err
	}
	after := time.Now().UTC().Add(-ViewerGone)
	for batch := range slices.Chunk(keys, 100) {
		var rows []viewerRow
		err := on(db, h.viewers).Where(ofRecords(batch)).
			Where(clause.Gt{Column: clause.Column{Name: "seen"}, Value: after}).Find(&rows).Error
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			k := key{Resource: r.Resource, ID: r.LockID}
			i := slices.IndexFunc(out[k], func(v Viewer) bool { return v.User == r.UserName })
			switch {
			case i < 0:
				out[k] = append(out[k], Viewer{User: r.UserName, Since: r.Since.UTC()})
			case r.Since.Before(out[k][i].Since):
				out[k][i].Since = r.Since.UTC()
			}
		}
	}
	for k := range out {
		slices.SortFunc(out[k], func(a, b Viewer) int {
			return cmp.Or(a.Since.Compare(b.Since), strings.Compare(a.User, b.User))
		})
	}
	return out, nil
}

// viewersMade says whether the viewers table is there (made here, or
// found: looked for at most once per ViewerGone, not at every poll).
func (h *Hub) viewersMade(db *gorm.DB) (bool, error) {
	pr := &h.pr
	pr.mu.Lock()
	made, lately := pr.made, time.Since(pr.asked) < ViewerGone
	if !made && !lately {
		pr.asked = time.Now()
	}
	pr.mu.Unlock()
	if made || lately || !db.Migrator().HasTable(h.viewers) {
		return made, nil
	}
	return true, h.ensureViewers(db)
}

// sameViewers says whether two lists name the same users since the same times.
func sameViewers(a, b []Viewer) bool {
	return slices.EqualFunc(a, b, func(x, y Viewer) bool { return x.User == y.User && x.Since.Equal(y.Since) })
}
