package watch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock/internal/lockstore"
)

// The notes table (<table>_notes): take-overs, requests to edit, and how
// locks ended (docs/browser.md). Grants and releases never write it.

const (
	noteLife = time.Hour // how long a note is kept: far longer than any poll
	// noteWindow is how late a note may commit after its At and still be
	// told: each poll reads this window before its last. The nodes' clocks
	// must agree well within it.
	noteWindow  = time.Minute
	notesPage   = 1000 // the most notes one read returns: a watcher reads page after page
	notesPruned = 100  // the most old notes one Note deletes
)

// RequestsPerMinute bounds the requests to edit one user may make in a
// minute, over all records (the root's RequestsPerMinute).
const RequestsPerMinute = 20

// The errors of Request, the root's own values.
var (
	ErrHeldByYou       = errors.New("offlinelock: you hold this lock")
	ErrTooManyRequests = errors.New("offlinelock: too many requests to edit")
)

// Note is one row of the notes table. Kind is TakenOver, Requested, or
// the reason a lock ended (ReasonForceReleased, ReasonSignedOut).
type Note struct {
	ID         int64     `gorm:"primaryKey;autoIncrement"`
	Resource   string    `gorm:"size:255;not null"`
	LockID     string    `gorm:"size:255;not null"`
	Kind       string    `gorm:"size:16;not null"`
	ByUser     string    `gorm:"size:255;not null"`
	Reason     string    `gorm:"size:255;not null"`
	Generation int64     `gorm:"not null"`
	At         time.Time `gorm:"not null;index"`
}

// NotesTable is the notes table of lock table table.
func NotesTable(table string) string { return table + "_notes" }

// EnsureNotes makes the notes table if it is missing, on a connection of
// its own (DDL would commit a caller's MySQL transaction), except in a
// caller's transaction on SQLite (others would wait for its write lock).
func (h *Hub) EnsureNotes(db *gorm.DB) error {
	if h.made.Load() {
		return nil
	}
	s := onSource(db.Session(&gorm.Session{NewDB: true, Context: context.WithoutCancel(db.Statement.Context)}))
	_, inTx := db.Statement.ConnPool.(gorm.TxCommitter)
	ownConn := !inTx || !h.cfg.OneWriter
	if ownConn {
		s.Statement.ConnPool = db.Config.ConnPool
	}
	if err := create(s, h.notes, &Note{}); err != nil {
		return fmt.Errorf("offlinelock: the notes table %s, which take-overs and requests to edit need, is missing and could not be made (`offlinelock guard install`, run as the tables' owner, makes it; then grant the application SELECT, INSERT, UPDATE and DELETE on it, and on PostgreSQL USAGE on its id sequence): %w", h.notes, err)
	}
	if ownConn { // made in a caller's transaction, it may yet be rolled back
		h.made.Store(true)
	}
	return nil
}

// Note writes notes on db (in its transaction, if any), and deletes notes
// older than noteLife by their ids: a DELETE by a range of at would, on
// MariaDB, also lock the next key, the newest note, and wait for its writer.
func (h *Hub) Note(db *gorm.DB, notes ...Note) error {
	if len(notes) == 0 {
		return nil
	}
	if err := on(db, h.notes).CreateInBatches(&notes, 100).Error; err != nil {
		return err
	}
	var old []int64
	err := on(db, h.notes).Where(clause.Lt{Column: clause.Column{Name: "at"}, Value: notes[0].At.Add(-noteLife)}).
		Limit(notesPruned).Pluck("id", &old).Error
	if err != nil || len(old) == 0 {
		return err
	}
	ids := make([]any, len(old))
	for i, id := range old {
		ids[i] = id
	}
	return on(db, h.notes).Where(clause.IN{Column: clause.Column{Name: "id"}, Values: ids}).Delete(&Note{}).Error
}

// Request notes o's request to edit k: lockstore.ErrNotLocked when nobody
// holds it, ErrHeldByYou when o's session does, nothing when o's user asked
// within a minute already, ErrTooManyRequests past RequestsPerMinute.
func (h *Hub) Request(db *gorm.DB, k key, o lockstore.Owner) error {
	held, err := h.locks(db, []key{k})
	if err != nil {
		return err
	}
	if len(held) == 0 {
		return fmt.Errorf("%w: nobody holds %s %s", lockstore.ErrNotLocked, k.Resource, k.ID)
	}
	for _, l := range held {
		if l.Owner.Session == o.Session {
			return ErrHeldByYou
		}
	}
	if err := h.EnsureNotes(db); err != nil {
		return err
	}
	now, gen := time.Now().UTC(), held[0].Generation
	var recent []Note
	err = on(db, h.notes).
		Where(clause.Gte{Column: clause.Column{Name: "at"}, Value: now.Add(-time.Minute)}).
		Where(clause.Eq{Column: clause.Column{Name: "kind"}, Value: Requested}).
		Where(clause.Eq{Column: clause.Column{Name: "by_user"}, Value: o.User}).Limit(RequestsPerMinute + 1).Find(&recent).Error
	if err != nil || slices.ContainsFunc(recent, func(n Note) bool { return n.Resource == k.Resource && n.LockID == k.ID && n.Generation == gen }) {
		return err
	}
	if len(recent) >= RequestsPerMinute {
		return fmt.Errorf("%w: %d in the last minute; ask again later", ErrTooManyRequests, len(recent))
	}
	return h.Note(db, Note{Resource: k.Resource, LockID: k.ID, Kind: Requested, ByUser: o.User, Generation: gen, At: now})
}

// notesOf returns the notes of the records keys written at from or later,
// each record's after its start id, oldest first, in pages of notesPage,
// one statement per 100 records and page: only the watched records' notes,
// so that a flood on other records costs a watcher nothing.
func (h *Hub) notesOf(db *gorm.DB, keys []key, start map[key]int64, from time.Time) ([]Note, error) {
	var out []Note
	for batch := range slices.Chunk(keys, 100) {
		after := start[batch[0]]
		for _, k := range batch {
			after = min(after, start[k])
		}
		for {
			var page []Note
			err := on(db, h.notes).Where(ofRecords(batch)).
				Where(clause.Gt{Column: clause.Column{Name: "id"}, Value: after}).
				Where(clause.Gte{Column: clause.Column{Name: "at"}, Value: from.UTC()}).
				Order("id").Limit(notesPage).Find(&page).Error
			if err != nil {
				return nil, err
			}
			for _, nt := range page {
				if nt.ID > start[key{Resource: nt.Resource, ID: nt.LockID}] {
					out = append(out, nt)
				}
			}
			if len(page) < notesPage {
				break
			}
			after = page[len(page)-1].ID
		}
	}
	slices.SortFunc(out, func(a, b Note) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// ofRecords is the condition that a notes or viewers row is of one of keys.
func ofRecords(keys []key) clause.Expression {
	conds := make([]clause.Expression, len(keys))
	for i, k := range keys {
		conds[i] = clause.And(clause.Eq{Column: clause.Column{Name: "resource"}, Value: k.Resource},
			clause.Eq{Column: clause.Column{Name: "lock_id"}, Value: k.ID})
	}
	return clause.Or(conds...)
}

// lastNote is the newest note's id, 0 when there is none.
func (h *Hub) lastNote(db *gorm.DB) (int64, error) {
	var id *int64
	err := on(db, h.notes).Select("MAX(id)").Scan(&id).Error
	if id == nil {
		return 0, err
	}
	return *id, err
}
