package offlinelock

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The notes table (<Config.Table>_notes) keeps what a lock row cannot say:
// that a lock was taken over (by whom, why) and that someone asked to edit
// a record, and how a lock ended when its row cannot say: an admin
// removed it (ForceRelease), its session ended (EndSession). Only those
// write it, so grants and releases pay nothing for
// it; every node's watcher reads the notes added since its last poll,
// which is how a take-over or a request on one node reaches a page
// watching through another. Notes older than noteLife are deleted as new
// ones are added.

// noteLife is how long a note is kept: far longer than any poll.
const noteLife = time.Hour

// noteWindow is how late a note may commit after its At (its transaction
// still open, or ids committed out of order) and still be told: each poll
// reads the notes of this window before its last one, and tells those it
// has not told. The nodes' clocks must agree to well within it.
const noteWindow = time.Minute

// RequestsPerMinute bounds the requests to edit one user may make in a
// minute, over all records (RequestEdit is ErrTooManyRequests past it), so
// that nobody can fill the notes table every watcher reads.
const RequestsPerMinute = 20

// lockNote is one row of the notes table.
type lockNote struct {
	ID         int64     `gorm:"primaryKey;autoIncrement"`
	Resource   string    `gorm:"size:255;not null"`
	LockID     string    `gorm:"size:255;not null"`
	Kind       string    `gorm:"size:16;not null"`
	ByUser     string    `gorm:"size:255;not null"`
	Reason     string    `gorm:"size:255;not null"`
	Generation int64     `gorm:"not null"`
	At         time.Time `gorm:"not null;index"`
}

// noteTable makes the notes table once per database.
type noteTable struct {
	made sync.Map // databaseOf → struct{}
}

func notesOf(table string) string { return table + "_notes" }

// notesOn is a statement on the notes table of db's database, sent to a
// read router's source (the notes are written there, and a replica may
// not have the newest yet).
func notesOn(db *gorm.DB, table string) *gorm.DB {
	return db.Session(&gorm.Session{NewDB: true}).Table(notesOf(table)).Set(resolverWrite, struct{}{})
}

// ensure makes the notes table of lock table on db's database, if it is
// missing: on a connection of its own (DDL would commit a caller's
// transaction on MySQL), except in a caller's transaction on SQLite,
// whose DDL is transactional and whose other connections would wait for
// that transaction's write lock.
func (n *noteTable) ensure(db *gorm.DB, t lockStore, table string) error {
	id := databaseOf(db)
	if _, ok := n.made.Load(id); ok {
		return nil
	}
	s := db.Session(&gorm.Session{NewDB: true, Context: context.WithoutCancel(db.Statement.Context)}).Set(resolverWrite, struct{}{})
	_, inTx := db.Statement.ConnPool.(gorm.TxCommitter)
	ownConn := !inTx || !t.caps.OneWriter
	if ownConn {
		s.Statement.ConnPool = db.Config.ConnPool
	}
	name := notesOf(table)
	if !s.Migrator().HasTable(name) {
		// made meanwhile by another request or process: PostgreSQL fails
		// the second of two CREATE TABLEs at once (a duplicate type)
		if err := s.Table(name).AutoMigrate(&lockNote{}); err != nil && !s.Migrator().HasTable(name) {
			return fmt.Errorf("offlinelock: the notes table %s, which take-overs and requests to edit need, is missing and could not be made (`offlinelock guard install`, run as the tables' owner, makes it; then grant the application SELECT, INSERT, UPDATE and DELETE on it, and on PostgreSQL USAGE on its id sequence): %w", name, err)
		}
	}
	if ownConn { // made in a caller's transaction, it may yet be rolled back
		n.made.Store(id, struct{}{})
	}
	return nil
}

// add writes nt on db (in its transaction, if any), and deletes notes
// older than noteLife: by their ids, read without a lock. (A DELETE by a
// range of at would, under MariaDB's REPEATABLE READ, lock the next key
// past the range too, the newest note, and wait for a take-over's
// transaction still open.)
func (n *noteTable) add(db *gorm.DB, table string, nts ...lockNote) error {
	if len(nts) == 0 {
		return nil
	}
	if err := notesOn(db, table).CreateInBatches(&nts, 100).Error; err != nil {
		return err
	}
	var old []int64
	err := notesOn(db, table).Where(clause.Lt{Column: clause.Column{Name: "at"}, Value: nts[0].At.Add(-noteLife)}).
		Limit(notesPruned).Pluck("id", &old).Error
	if err != nil || len(old) == 0 {
		return err
	}
	return notesOn(db, table).Where(clause.IN{Column: clause.Column{Name: "id"}, Values: int64sAny(old)}).Delete(&lockNote{}).Error
}

// notesPruned bounds the old notes one add deletes.
const notesPruned = 100

func int64sAny(ns []int64) []any {
	out := make([]any, len(ns))
	for i, n := range ns {
		out[i] = n
	}
	return out
}

// notesPage is how many notes one read of the notes table returns at
// most; a watcher reads page after page until it has them all.
const notesPage = 1000

// of returns the notes of the records keys written at from or later, each
// record's after its own start id (start[k]: the newest note when it was
// first watched), oldest first: all of them, read by id in pages of
// notesPage, one statement per 100 records and page. Only the watched
// records' notes are read, so a flood of notes on other records (anyone
// may ask to edit) costs a watcher nothing, and a flood on one watched
// record fills pages of its own without hiding or delaying another's.
func (n *noteTable) of(db *gorm.DB, table string, keys []key, start map[key]int64, from time.Time) ([]lockNote, error) {
	var out []lockNote
	for len(keys) > 0 {
		batch := keys[:min(len(keys), 100)]
		keys = keys[len(batch):]
		conds := make([]clause.Expression, len(batch))
		after := start[batch[0]]
		for i, k := range batch {
			conds[i] = clause.And(clause.Eq{Column: clause.Column{Name: "resource"}, Value: k.Resource},
				clause.Eq{Column: clause.Column{Name: "lock_id"}, Value: k.ID})
			after = min(after, start[k])
		}
		for {
			var page []lockNote
			err := notesOn(db, table).Where(clause.Or(conds...)).
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
	slices.SortFunc(out, func(a, b lockNote) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// requestsBy returns user's requests to edit written at from or later.
func (n *noteTable) requestsBy(db *gorm.DB, table, user string, from time.Time) ([]lockNote, error) {
	var out []lockNote
	err := notesOn(db, table).
		Where(clause.Gte{Column: clause.Column{Name: "at"}, Value: from.UTC()}).
		Where(clause.Eq{Column: clause.Column{Name: "kind"}, Value: string(EventRequested)}).
		Where(clause.Eq{Column: clause.Column{Name: "by_user"}, Value: user}).Limit(RequestsPerMinute + 1).Find(&out).Error
	return out, err
}

// last is the newest note's id, 0 when there is none.
func (n *noteTable) last(db *gorm.DB, table string) (int64, error) {
	var id *int64
	err := notesOn(db, table).Select("MAX(id)").Scan(&id).Error
	if id == nil {
		return 0, err
	}
	return *id, err
}
