package watch

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock/internal/lockstore"
)

// The kinds of events (the root's EventKind values; the root documents
// each). A note's kind is TakenOver, Requested, or the reason a lock ended.
const (
	Locked    = "locked"
	Released  = "released"
	TakenOver = "taken-over"
	Expiring  = "expiring"
	Requested = "requested"
	Viewers   = "viewers"
)

// The reasons a Released event gives (the root documents each).
const (
	ReasonReleased      = "released"
	ReasonSignedOut     = "signed-out"
	ReasonExpired       = "expired"
	ReasonTakenOver     = "taken-over"
	ReasonForceReleased = "force-released"
)

// ExpiringWithin is the longest warning an Expiring event gives.
const ExpiringWithin = 30 * time.Second

// Event is one change of a record's lock, as the root's Event tells it.
type Event struct {
	Kind    string
	Key     lockstore.Key
	Lock    *lockstore.Lock
	By      string
	Viewers []Viewer
	Reason  string
	At      time.Time
}

// Config is what a Hub needs of its plugin and database.
type Config struct {
	Table     string        // the lock table: the notes and viewers tables are named for it
	Every     time.Duration // how often the watcher polls
	OneWriter bool          // the database has one writer (SQLite): its DDL stays in a caller's transaction
	Logger    *slog.Logger
	Store     lockstore.Store               // the lock table
	Conn      func(*gorm.DB) lockstore.Conn // the store's connection for a statement on db
}

// Hub is one database's watches, views and notes on this node. Its zero
// value is not ready: use New.
type Hub struct {
	cfg            Config
	notes, viewers string      // the notes and viewers tables
	made           atomic.Bool // the notes table is there
	w              watcher
	pr             presence
}

// New returns the hub of one database.
func New(cfg Config) *Hub {
	return &Hub{cfg: cfg, notes: NotesTable(cfg.Table), viewers: viewersTable(cfg.Table)}
}

// Watch tells the changes of k's lock on h, each as conv makes it, on the
// returned channel until ctx ends, then closes it; first k's state. A
// watch that does not keep up loses events rather than slow the others.
func Watch[E any](ctx context.Context, h *Hub, db *gorm.DB, k lockstore.Key, conv func(Event) E) (<-chan E, error) {
	if err := h.EnsureNotes(db); err != nil {
		return nil, err
	}
	ch := make(chan E, 16)
	s := &sub{send: func(e Event) {
		select {
		case ch <- conv(e):
		default:
		}
	}}
	if err := h.add(db, k, s); err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() {
		h.remove(k, s) // its last send is done
		close(ch)
	})
	return ch, nil
}

// locks reads the live locks of keys, each record's writer or first
// reader first, one statement per batch of keys.
func (h *Hub) locks(db *gorm.DB, keys []key) ([]lockstore.Lock, error) {
	return h.cfg.Store.ListKeys(h.cfg.Conn(db), keys)
}

// own is a session on db's pool, outside any transaction of the caller's,
// that outlives the caller's context, on a read router's source.
func own(db *gorm.DB) *gorm.DB {
	s := db.Session(&gorm.Session{NewDB: true, Context: context.Background()})
	s.Statement.ConnPool = db.Config.ConnPool
	return onSource(s)
}

// on is a statement on table of db's database, on a read router's source.
func on(db *gorm.DB, table string) *gorm.DB {
	return onSource(db.Session(&gorm.Session{NewDB: true})).Table(table)
}

// onSource sends db's statements to a read router's source (dbresolver's
// write setting), where the notes and views are written.
func onSource(db *gorm.DB) *gorm.DB { return db.Set("gorm:db_resolver:write", struct{}{}) }
