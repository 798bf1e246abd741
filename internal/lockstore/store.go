package lockstore

import (
	"time"

	"gorm.io/gorm"
)

// Store is the lock table in one database, the only place that knows its
// SQL; the root asks it in keys and owners. Every method runs on c (the
// caller's transaction if any), on the database's clock, taking keys in
// sortKeys order.
type Store interface {
	// Migrate creates what is missing; several nodes may run it at once.
	Migrate(c Conn) error

	// Grant takes or refreshes access locks on keys for o, all or nothing (the
	// first held key's *Conflict). Asking again keeps token and generation and
	// never shortens the expiry; only a new token is returned.
	Grant(c Conn, keys []Key, o Owner, access Access, ttl time.Duration) (map[Key]Granted, error)

	// Check sorts keys into those o holds a live Write lock on and those nobody
	// holds; another's is a *Conflict. With fence their rows stay locked until
	// the transaction ends.
	Check(c Conn, keys []Key, o Owner, fence bool) (mine, free []Key, err error)

	// Release gives up session's lock on k (ErrNotLocked if none or expired) and
	// says how long it was held, or HeldUnknown.
	Release(c Conn, k Key, session string) (time.Duration, error)

	// ForceRelease removes every lock on k after allow approved each live
	// holder; ErrNotLocked when nobody holds k.
	ForceRelease(c Conn, k Key, allow func(now time.Time, held []Lock) error) error

	// Drop deletes session's locks on keys, live or not: a refused statement's undo.
	Drop(c Conn, keys []Key, session string) error
	DropGrant(c Conn, k Key, token string) error

	// ReleaseAll deletes every lock row of session and says how many.
	ReleaseAll(c Conn, session string) (int64, error)

	// Renew extends session's live locks to at least ttl from now, and counts them.
	Renew(c Conn, session string, ttl time.Duration) (int64, error)

	// Shorten cuts session's live Write lock on k to end ttl from now if sooner;
	// it returns the lock, without token, and the clock it read.
	Shorten(c Conn, k Key, session string, ttl time.Duration) (Lock, time.Time, error)

	// Sweep deletes one batch of expired rows, never waiting on a record being
	// changed; more says the batch was full. cur is the store's place.
	Sweep(c Conn, cur *SweepCursor) (n int64, more bool, err error)

	// List returns the live (or, with f.Expired, expired) locks matching f,
	// without tokens.
	List(c Conn, f Filter) ([]Lock, error)
	// ListKeys is the live locks of keys, ordered as List orders them.
	ListKeys(c Conn, keys []Key) ([]Lock, error)

	// SetReason records reason with l, the lock just granted.
	SetReason(c Conn, l Lock, reason string) error
	ByToken(c Conn, token string) (*Lock, error)

	// Stats counts the live locks by resource and user and the expired rows.
	Stats(c Conn, groups int) (Stats, error)

	// Remember writes catalog rows, replacing those whose spec differs; Catalog
	// reads them by name. The spec is opaque to the store.
	Remember(c Conn, rows []CatalogRow) error
	Catalog(c Conn) ([]CatalogRow, error)

	// LiveByResource counts the live locks per resource (the gauge).
	LiveByResource(c Conn) (map[string]int64, error)

	// SavepointIn names the plugin's savepoint on pool; done gives it back
	// (MySQL names them by depth).
	SavepointIn(pool gorm.ConnPool) (name string, done func())

	// RowLocks says whether reads of the application's rows must lock them.
	RowLocks() bool

	// Traits is the store's capabilities (capabilities.go).
	Traits() Traits

	// Galera says whether the server is a Galera node (galera.go).
	Galera() bool
}

// allOrNothing is what Grant returns: the locks granted, or none and the error.
func allOrNothing(got map[Key]Granted, err error) (map[Key]Granted, error) {
	if err != nil {
		return nil, err
	}
	return got, nil
}

// Granted is one lock a grant took or refreshed.
type Granted struct {
	// Lock as its holder sees it: Token only for a fresh grant.
	Lock
	// Fresh: a new token, or a Read lock upgraded to Write.
	Fresh bool
	// Hash is the stored hash of the lock's token.
	Hash string
}

// GrantRow is one lock findAndLock granted.
type GrantRow struct {
	Key     Key
	Fresh   bool // newly granted (the batch's token)
	Expires time.Time
}

// SweepCursor is the latest expiry a Sweep's batch looked at, where the next starts.
type SweepCursor struct {
	After time.Time // zero before the first batch
}
