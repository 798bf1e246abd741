package offlinelock

import (
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

	"github.com/offlinelock/offlinelock/internal/model"
)

// Presence: who has a record open, lock or not. Each View is a row of the
// viewers table (<Config.Table>_viewers), which its node refreshes every
// viewerBeat while the View lasts and deletes when it ends; a row not
// refreshed for ViewerGone (its node stopped) no longer counts. The
// watcher reads the viewers of the records it watches with their locks,
// so every node's watches tell EventViewers when the list changes.

// EventViewers: the users who have the record open changed (Event.Viewers).
const EventViewers EventKind = "viewers"

// ViewerGone is how long after its node last refreshed it a viewer stops
// counting: a View that ended without deleting its row (its process
// stopped) is gone within it.
const ViewerGone = 10 * time.Second

// viewerBeat is how often a node refreshes its viewers' rows.
const viewerBeat = 3 * time.Second

// Viewer is a user who has a record open: its name and since when (the
// earliest of its views). Never a session or a token.
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

func viewersOf(table string) string { return table + "_viewers" }

// viewersOn is a statement on the viewers table of db's database, on the
// source of a read router.
func viewersOn(db *gorm.DB, table string) *gorm.DB {
	return db.Session(&gorm.Session{NewDB: true}).Table(viewersOf(table)).Set(resolverWrite, struct{}{})
}

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

// View announces that user has target open until ctx ends: every Watch of
// the record, on any node, tells EventViewers with the users who have it
// open (each user once, with the earliest of their views). The view is a
// row of the viewers table (made on first use, like the notes table),
// refreshed by its node every few seconds and deleted when ctx ends; a
// view whose node stopped is gone within ViewerGone. It needs no owner
// and takes no lock: authorise callers as for Watch.
func (p *Plugin) View(ctx context.Context, db *gorm.DB, target any, user string) error {
	db = onPrimary(db.WithContext(ctx))
	b, err := p.bindingOf(db)
	if err != nil {
		return err
	}
	if err := model.CheckText("user", user, model.MaxTextLen, false); err != nil {
		return err
	}
	k, err := p.targetKey(db, target)
	if err != nil {
		return err
	}
	pr := &b.presence
	if err := pr.ensure(p, db); err != nil {
		return err
	}
	var id [16]byte
	rand.Read(id[:])
	now := time.Now().UTC()
	row := viewerRow{ID: hex.EncodeToString(id[:]), Resource: k.Resource, LockID: k.ID, UserName: user, Since: now, Seen: now}
	if err := viewersOn(pr.db, p.cfg.Table).Create(&row).Error; err != nil {
		return err
	}
	pr.mu.Lock()
	pr.views[row.ID] = struct{}{}
	if pr.stop == nil {
		loop, stop := context.WithCancel(context.Background())
		pr.stop = stop
		go pr.refresh(loop, p.cfg.Table)
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
		viewersOn(pr.db, p.cfg.Table).Where(clause.Eq{Column: clause.Column{Name: "id"}, Value: row.ID}).Delete(&viewerRow{})
	})
	return nil
}

// ensure makes the viewers table if it is missing, once per database.
func (pr *presence) ensure(p *Plugin, db *gorm.DB) error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.made {
		return nil
	}
	if time.Since(pr.failed) < ViewerGone {
		return pr.failedErr // a role that may not make it: not asked again at every page's open
	}
	s := p.background(db).Set(resolverWrite, struct{}{})
	name := viewersOf(p.cfg.Table)
	if !s.Migrator().HasTable(name) {
		if err := s.Table(name).AutoMigrate(&viewerRow{}); err != nil && !s.Migrator().HasTable(name) {
			pr.failed = time.Now()
			pr.failedErr = fmt.Errorf("offlinelock: the viewers table %s, which View needs, is missing and could not be made (`offlinelock guard install`, run as the tables' owner, makes it; then grant the application SELECT, INSERT, UPDATE and DELETE on it): %w", name, err)
			return pr.failedErr
		}
	}
	pr.db, pr.views, pr.made = s, map[string]struct{}{}, true
	return nil
}

// refresh marks this node's views seen every viewerBeat, in one statement
// per 100 of them, until ctx ends; every tenth beat it also deletes the
// rows that stopped counting a minute ago (their node stopped).
func (pr *presence) refresh(ctx context.Context, table string) {
	tick := time.NewTicker(viewerBeat)
	defer tick.Stop()
	for beat := 1; ; beat++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if beat%10 == 0 {
			viewersOn(pr.db.WithContext(ctx), table).
				Where(clause.Lt{Column: clause.Column{Name: "seen"}, Value: time.Now().UTC().Add(-ViewerGone - time.Minute)}).
				Delete(&viewerRow{})
		}
		pr.mu.Lock()
		ids := make([]any, 0, len(pr.views))
		for id := range pr.views {
			ids = append(ids, id)
		}
		pr.mu.Unlock()
		now := time.Now().UTC()
		for len(ids) > 0 {
			batch := ids[:min(len(ids), 100)]
			ids = ids[len(batch):]
			viewersOn(pr.db.WithContext(ctx), table).Where(clause.IN{Column: clause.Column{Name: "id"}, Values: batch}).
				Update("seen", now)
		}
	}
}

// viewersNow reads the viewers of keys, one statement per 100 of them,
// each record's users once with their earliest view, by since and name.
// It reads nothing while no View has made the viewers table here.
func (p *Plugin) viewersNow(db *gorm.DB, pr *presence, keys []key) (map[key][]Viewer, error) {
	pr.mu.Lock()
	made := pr.made
	pr.mu.Unlock()
	out := map[key][]Viewer{}
	if !made {
		var err error
		if made, err = p.viewersTable(db, pr); err != nil || !made {
			return out, err
		}
	}
	after := time.Now().UTC().Add(-ViewerGone)
	for len(keys) > 0 {
		batch := keys[:min(len(keys), 100)]
		keys = keys[len(batch):]
		conds := make([]clause.Expression, len(batch))
		for i, k := range batch {
			conds[i] = clause.And(clause.Eq{Column: clause.Column{Name: "resource"}, Value: k.Resource},
				clause.Eq{Column: clause.Column{Name: "lock_id"}, Value: k.ID})
		}
		var rows []viewerRow
		err := viewersOn(db, p.cfg.Table).Where(clause.Or(conds...)).
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
			if c := a.Since.Compare(b.Since); c != 0 {
				return c
			}
			return strings.Compare(a.User, b.User)
		})
	}
	return out, nil
}

// viewersTable says whether the viewers table exists (another node's
// View made it), and remembers it when it does.
func (p *Plugin) viewersTable(db *gorm.DB, pr *presence) (bool, error) {
	pr.mu.Lock()
	if time.Since(pr.asked) < ViewerGone {
		pr.mu.Unlock()
		return false, nil // looked for lately: a poll does not ask the catalog each time
	}
	pr.asked = time.Now()
	pr.mu.Unlock()
	if !db.Migrator().HasTable(viewersOf(p.cfg.Table)) {
		return false, nil
	}
	return true, pr.ensure(p, db)
}

// sameViewers says whether two lists name the same users since the same
// times.
func sameViewers(a, b []Viewer) bool {
	return slices.EqualFunc(a, b, func(x, y Viewer) bool { return x.User == y.User && x.Since.Equal(y.Since) })
}
