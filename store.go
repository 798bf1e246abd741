package offlinelock

import (
	"errors"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"gorm.io/gorm"
)

// The lock table lives in internal/lockstore: every database's SQL, tokens
// and their hashes, the statement runner. This file is the plugin's side of
// it: the store with its capabilities resolved once, the connections the
// plugin hands it, and the one place its refusals become the public errors.

// The store's types, under the names the plugin's code uses.
type (
	key         = lockstore.Key
	conn        = lockstore.Conn
	granted     = lockstore.Granted
	sweepCursor = lockstore.SweepCursor
)

const (
	kindText  = lockstore.KindText
	kindInt   = lockstore.KindInt
	kindUUID  = lockstore.KindUUID
	kindBytes = lockstore.KindBytes
	kindFold  = lockstore.KindFold
	kindChar  = lockstore.KindChar

	batchSize = lockstore.BatchSize
)

// lockStore is a store and what its database can do, resolved once in New.
type lockStore = *table

type table struct {
	lockstore.Store
	caps lockstore.Traits
	obs  lockstore.Observer // what the store tells p's telemetry, handed to it
}

// direct is a connection for the plugin's statements on db: its
// transaction when it is in one, its statement's context.
func direct(db *gorm.DB) conn {
	return lockstore.NewConn(db, connCtx(db)).Observed(observerOf(db))
}

// observerOf is the Observer of db's store, for the plugin's own
// statements on db (savepoints, reads of the application's rows); nil
// where the plugin is not registered on db.
func observerOf(db *gorm.DB) lockstore.Observer {
	if db == nil || db.Config == nil {
		return nil
	}
	p, ok := db.Config.Plugins["offlinelock"].(*Plugin)
	if !ok {
		return nil
	}
	t, err := p.storeFor(db)
	if err != nil {
		return nil
	}
	return t.obs
}

// direct is a connection for the plugin's statements on db, as the free
// function direct(db) is, observed by t's observer without looking the
// plugin up again: for a statement of t's binding, whose plugin is the
// one registered on db.
func (t *table) direct(db *gorm.DB) conn {
	return lockstore.NewConn(db, connCtx(db)).Observed(t.obs)
}

// cleanup is the connection for undoing a statement's locks: it runs even
// when the statement's context was cancelled, which may be why it failed.
func cleanup(db *gorm.DB) conn {
	return direct(db).WithoutCancel()
}

// public is err as the plugin's callers see it: the store's refusal
// (*lockstore.Conflict) becomes the *LockedError naming the holders. The
// store's sentinel errors are the root's own values (errors.go).
func public(err error) error {
	if err == nil {
		return nil // before c, whose address escapes: no allocation per grant
	}
	var c *lockstore.Conflict
	if !errors.As(err, &c) {
		return err
	}
	holders := make([]Lock, len(c.Holders))
	for i, h := range c.Holders {
		holders[i] = publicLock(h)
	}
	return &LockedError{Resource: c.Resource, ID: c.ID, Wanted: Access(c.Wanted), Holders: holders}
}

// publicLock is the store's lock as the plugin's API has it.
func publicLock(l lockstore.Lock) Lock {
	return Lock{Resource: l.Resource, ID: l.ID, Access: Access(l.Access), Owner: Owner(l.Owner), Token: l.Token,
		Generation: l.Generation, AcquiredAt: l.AcquiredAt, ExpiresAt: l.ExpiresAt, Reason: l.Reason}
}

// publicLocks is publicLock of each.
func publicLocks(ls []lockstore.Lock) []Lock {
	if ls == nil {
		return nil
	}
	out := make([]Lock, len(ls))
	for i, l := range ls {
		out[i] = publicLock(l)
	}
	return out
}

// grant is the store's Grant with the plugin's types.
func (t *table) grant(c conn, keys []key, o Owner, access Access, ttl time.Duration) (map[key]granted, error) {
	got, err := t.Grant(c, keys, lockstore.Owner(o), lockstore.Access(access), ttl)
	return got, public(err)
}

// check is the store's Check with the plugin's types.
func (t *table) check(c conn, keys []key, o Owner, fence bool) (mine, free []key, err error) {
	mine, free, err = t.Check(c, keys, lockstore.Owner(o), fence)
	return mine, free, public(err)
}

// list is the store's List with the plugin's types.
func (t *table) list(c conn, f Filter) ([]Lock, error) {
	ls, err := t.List(c, lockstore.Filter(f))
	return publicLocks(ls), err
}

// byToken is the store's ByToken with the plugin's types.
func (t *table) byToken(c conn, token string) (*Lock, error) {
	l, err := t.ByToken(c, token)
	if l == nil {
		return nil, err
	}
	pl := publicLock(*l)
	return &pl, err
}
