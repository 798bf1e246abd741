package lockstore

import (
	"time"

	"gorm.io/gorm"
)

// Store is the lock table in one database: the only place that knows
// its SQL. The GORM side (callbacks, tags, statements) asks it questions in
// terms of keys and owners and never builds lock-table SQL itself. There is
// one implementation per database, in <database>.go; the SQL they
// share is built once, in sql.go.
//
// Every method runs on c: the caller's transaction when there is one, so a
// lock commits or rolls back with it. Times are the database's, read by the
// statement that decides. Keys are taken in sortKeys order, so that two
// statements never wait on each other in opposite orders.
type Store interface {
	// Migrate creates the lock table, its indexes, its generation counter
	// and the catalog of lockable tables when they are missing. Several
	// nodes may run it at once.
	Migrate(c Conn) error

	// Grant takes or refreshes access locks on keys for o, all or nothing:
	// on the first key another session holds it returns that key's
	// *Conflict and grants none. Asking again for a lock o holds keeps
	// its token and generation and never shortens its expiry; the only
	// reader may upgrade to Write. Only a new token is returned (the table
	// holds its hash alone).
	Grant(c Conn, keys []Key, o Owner, access Access, ttl time.Duration) (map[Key]Granted, error)

	// Check sorts keys into those o holds a live Write lock on and those
	// nobody holds; a key someone else holds, or reads, is a *Conflict.
	// With fence, the keys' rows stay locked until the transaction ends, so
	// that no takeover commits between the Check and the write's commit.
	Check(c Conn, keys []Key, o Owner, fence bool) (mine, free []Key, err error)

	// Release gives up session's lock on k, Write or Read: ErrNotLocked
	// when it holds none, or when its lock had expired (it is removed all
	// the same). It says how long the lock was held, on the database
	// clock, where the store learns it without another statement
	// (HeldUnknown when not: MySQL's Write locks, freed by an UPDATE
	// without RETURNING).
	Release(c Conn, k Key, session string) (time.Duration, error)

	// ForceRelease removes every lock on k after allow approved each live
	// holder; ErrNotLocked when nobody holds k.
	ForceRelease(c Conn, k Key, allow func(now time.Time, held []Lock) error) error

	// Drop deletes session's locks on keys, live or not: the undo of a
	// refused statement. dropGrant deletes the Write lock on k only if its
	// token is still token (compared by hash), that is, if the grant being
	// undone made it.
	Drop(c Conn, keys []Key, session string) error
	DropGrant(c Conn, k Key, token string) error

	// ReleaseAll deletes every lock row of session and says how many.
	ReleaseAll(c Conn, session string) (int64, error)

	// Renew pushes session's live locks to expire no earlier than ttl from
	// now, and says how many it renewed; expired locks stay expired.
	Renew(c Conn, session string, ttl time.Duration) (int64, error)

	// Shorten cuts the lease of session's live Write lock on k to end ttl
	// after the database clock's now, when that is sooner than it ends;
	// a lease that ends sooner is left as it is. It returns the lock as
	// stored, without its token, and the clock it read: ErrNotLocked when
	// session holds no live Write lock on k (nothing is changed).
	Shorten(c Conn, k Key, session string, ttl time.Duration) (Lock, time.Time, error)

	// Sweep deletes a batch of expired rows and says how many, and whether
	// that was a whole batch (more may be waiting); it never waits for a
	// record whose locks another statement is changing. cur carries a
	// store's place from one batch of a Sweep to the next; a store may
	// ignore it.
	Sweep(c Conn, cur *SweepCursor) (n int64, more bool, err error)

	// List returns the live (or, with f.Expired, the expired) locks that
	// match f, without tokens. byToken returns the live lock whose token is
	// token (looked up by its hash), with its owner and without a token, or
	// ErrNotLocked.
	List(c Conn, f Filter) ([]Lock, error)
	// ListKeys is the live locks of keys, without their tokens, ordered
	// as List orders them: one statement per batch of keys, for a watcher
	// that reads many records each interval.
	ListKeys(c Conn, keys []Key) ([]Lock, error)

	// SetReason records reason with l, the lock just granted (its
	// session's row of its generation: a later grant of the key hides it).
	SetReason(c Conn, l Lock, reason string) error
	ByToken(c Conn, token string) (*Lock, error)

	// Stats counts the live locks, at most groups resources and users of
	// them, finds the oldest, and counts the expired rows (the root's Plugin.Stats).
	Stats(c Conn, groups int) (Stats, error)

	// Remember writes catalog rows, replacing a row of the same name
	// whose spec differs; Catalog reads them all, ordered by name. The
	// spec is the caller's bytes: the store keeps them and never reads
	// them.
	Remember(c Conn, rows []CatalogRow) error
	Catalog(c Conn) ([]CatalogRow, error)

	// LiveByResource counts the live locks per resource, in one statement
	// (the live-locks gauge).
	LiveByResource(c Conn) (map[string]int64, error)

	// SavepointIn names the plugin's savepoint in the transaction on pool,
	// and done gives the name back: MySQL, whose SAVEPOINT replaces an
	// older one of its name, names them by depth; the others use one name.
	SavepointIn(pool gorm.ConnPool) (name string, done func())

	// RowLocks says whether the plugin's reads of the application's rows
	// must lock them (FOR UPDATE, FOR SHARE) to keep them from changing
	// until the transaction ends. A database that serialises writers
	// (SQLite) needs no row locks.
	RowLocks() bool

	// Traits is the store's capabilities: its SQL's traits and the
	// optional interfaces it implements (capabilities.go).
	Traits() Traits

	// Galera says whether the store's server is a node of a Galera
	// cluster, which can roll a transaction back unannounced (galera.go);
	// known once the store has met its server.
	Galera() bool
}

// allOrNothing is what Grant returns: the locks granted, or none and the
// error (a grant refused midway rolled back what it had written).
func allOrNothing(got map[Key]Granted, err error) (map[Key]Granted, error) {
	if err != nil {
		return nil, err
	}
	return got, nil
}

// Granted is one lock a grant took or refreshed.
type Granted struct {
	// Lock is the lock as its holder sees it: Token is the new token of a
	// fresh grant, "" otherwise (the table has only its hash).
	Lock
	// Fresh: the session did not hold this lock before (a new token), or
	// it upgraded its Read lock to Write.
	Fresh bool
	// Hash is the Hash of the lock's token, as the table holds it: which
	// grant made the lock, even where the token is not returned.
	Hash string
}

// GrantRow is one lock findAndLock granted.
type GrantRow struct {
	Key     Key
	Fresh   bool // newly granted (the batch's token)
	Expires time.Time
}

// SweepCursor is where one Sweep has got to: the latest expiry a batch
// looked at, so that the next batch starts its index scan there instead of
// stepping over every entry the batches before it left dead.
type SweepCursor struct {
	After time.Time // zero before the first batch
}
