package offlinelock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"github.com/offlinelock/offlinelock/internal/telemetry"
	"github.com/offlinelock/offlinelock/internal/watch"
	"gorm.io/gorm"
)

// Filter selects locks for List. Empty fields match everything.
type Filter struct {
	Resource, ID  string
	User, Session string
	// Expired selects locks past their expiry that the sweep has not yet
	// removed, instead of live ones.
	Expired bool
	// Limit caps the number of locks returned; 0 means no cap.
	Limit int
}

// Acquire takes a lock on target (a pointer to a model whose primary key
// is set; nothing is loaded) for the owner in db's context, and returns it
// with its generation, its expiry, and its token when the lock is new.
//
// A lock held by someone else is refused at once with a *LockedError naming
// every holder; Acquire never waits. Asking again for a lock the session
// holds, or upgrading the only Read lock to Write, extends its expiry and
// keeps its token and generation, but returns Token "". An expired lock is
// free: the next Acquire takes it over with a new token and a larger
// generation. The lock lives for Config.TTL, or WithTTL's value, at most
// Config.MaxTTL. Inside db.Transaction it commits or rolls back with it.
func (p *Plugin) Acquire(db *gorm.DB, target any, access Access) (*Lock, error) {
	db, b, err := p.on(db)
	if err != nil {
		return nil, err
	}
	if !access.valid() {
		return nil, invalid("access %q is neither read nor write", access)
	}
	o, err := ownerOf(db)
	if err != nil {
		p.tel.Refused(ctxOf(db), db, telemetry.Explicit, string(access), p.resourceOf(db, target), err)
		return nil, err
	}
	k, m, err := p.targetKeyModel(db, target)
	if err == nil {
		err = p.rememberTarget(db, m, k)
	}
	ttl, reason := time.Duration(0), reasonFrom(db.Statement.Context)
	if err == nil {
		ttl, err = p.ttlFor(db, nil)
	}
	if err == nil {
		err = validReason(reason)
	}
	if err != nil {
		return nil, err
	}
	keys := []key{k}
	got, err := p.acquireMany(db, direct(db), b.t, keys, o, access, ttl)
	if err == nil && reason != "" {
		err = b.t.SetReason(direct(db), got[k].Lock, reason)
	}
	if err != nil {
		err = unconfirmed(err)
		p.tel.Refused(ctxOf(db), db, telemetry.Explicit, string(access), k.Resource, err)
		return nil, err
	}
	p.tel.Granted(ctxOf(db), db, telemetry.Explicit, string(access), keys)
	l := publicLock(got[k].Lock)
	l.Reason = reason
	return &l, nil
}

// on is db on the primary (onPrimary) and the plugin's binding there: what
// every lock call starts with.
func (p *Plugin) on(db *gorm.DB) (*gorm.DB, *binding, error) {
	db = onPrimary(db)
	b, err := p.bindingOf(db)
	return db, b, err
}

// rememberTarget writes the lockable models behind a lock on a target of
// model m (its own, and its root's, the lock's resource) to the catalog
// before the lock exists.
func (p *Plugin) rememberTarget(db *gorm.DB, m *model.Model, k key) error {
	b, err := p.bindingOf(db)
	if err != nil {
		return err
	}
	for _, m := range []*model.Model{p.reg.TableModel(k.Resource), m} {
		if m == nil || !m.Lockable {
			continue
		}
		if err := b.prepare(db, m); err != nil {
			return err
		}
	}
	return nil
}

// acquireMany takes locks on many keys on c, all or nothing, in the fixed
// order of sortKeys, each lock saying whether it is fresh.
func (p *Plugin) acquireMany(db *gorm.DB, c conn, t lockStore, keys []key, o Owner, access Access, ttl time.Duration) (map[key]granted, error) {
	for i, k := range keys { // no guard, no grant (internal/guard)
		if i > 0 && k.Resource == keys[i-1].Resource {
			continue
		}
		if err := p.checkGuarded(db, k.Resource); err != nil {
			return nil, err
		}
	}
	got, err := t.Grant(c, keys, lockstore.Owner(o), lockstore.Access(access), ttl)
	if err != nil {
		return nil, public(err)
	}
	p.hints.putAll(o.Session, got)
	return got, nil
}

// Release gives up the session's lock on target, Read or Write. It returns
// ErrNotLocked when the session holds no lock on it, or when its lock had
// already expired (the row is removed all the same). Inside db.Transaction
// the release commits with the save it ends.
func (p *Plugin) Release(db *gorm.DB, target any) error {
	db, b, err := p.on(db)
	var o Owner
	var k key
	if err == nil {
		o, k, err = p.ownerAndKey(db, target)
	}
	if err != nil {
		return err
	}
	p.hints.drop(o.Session, k)
	c := direct(db)
	held, err := b.t.Release(c, k, o.Session)
	if err == nil {
		p.tel.Released(c.Context(), db, telemetry.Release, k.Resource, 1)
		p.tel.HeldFor(c.Context(), db, k.Resource, held)
	}
	return err
}

// resourceOf is target's lock resource for a metric, "" when it has none.
func (p *Plugin) resourceOf(db *gorm.DB, target any) string {
	k, _ := p.targetKey(db, target)
	return k.Resource
}

// Refused records a refusal decided outside the plugin's own calls (as
// httplock's Middleware refuses a write over HTTP) the way the plugin
// records its own: counted with mode "http" and the reason err gives, and
// noted on the span of db's context. An err that is no refusal is not
// recorded.
func (p *Plugin) Refused(db *gorm.DB, target any, access Access, err error) {
	p.tel.Refused(ctxOf(db), db, telemetry.HTTP, string(access), p.resourceOf(db, target), err)
}

// ReleaseAll removes every lock of session, live or expired, and returns how
// many it removed. Call it at logout and when a session expires. Without an
// owner in the context it runs as the application (a session-expiry job);
// with an owner of another session it needs Config.Authorize("release_all").
func (p *Plugin) ReleaseAll(db *gorm.DB, session string) (int64, error) {
	db, b, err := p.sessionAction(db, "release_all", session)
	if err != nil {
		return 0, err
	}
	p.hints.dropSession(session)
	c := direct(db)
	n, err := b.t.ReleaseAll(c, session)
	p.tel.Released(c.Context(), db, telemetry.ReleaseAll, "", n)
	return n, err
}

// sessionAction is on(db) for a session-wide action on session, allowed
// to that session and to the application itself (no owner); for another
// owner Config.Authorize decides, and the decision is logged.
func (p *Plugin) sessionAction(db *gorm.DB, action, session string) (*gorm.DB, *binding, error) {
	db, b, err := p.on(db)
	if err == nil {
		err = model.CheckText("session", session, model.MaxTextLen, false)
	}
	if err != nil {
		return nil, nil, err
	}
	ctx := db.Statement.Context
	if o, ok := OwnerFrom(ctx); ok && o.Session != session {
		l := Lock{Owner: Owner{Session: session}}
		err = p.authorize(ctx, action, l)
		p.audit(ctx, action, l, o, time.Now(), err)
	}
	return db, b, err
}

// EndSession ends a session that signed out or expired: it releases every
// lock of session as ReleaseAll does, and notes each live one as ended in
// the same transaction, so that every Watch of its records, on any node,
// tells EventReleased with ReasonSignedOut. It returns how many lock rows
// it removed. Where the notes table is missing and cannot be made, it is
// ReleaseAll. The same owner rules as ReleaseAll.
func (p *Plugin) EndSession(db *gorm.DB, session string) (int64, error) {
	db, b, err := p.sessionAction(db, "release_all", session)
	if err != nil {
		return 0, err
	}
	p.hints.dropSession(session)
	n, err := b.watch.EndSession(db, session)
	if err != nil {
		return 0, err
	}
	p.tel.Released(ctxOf(db), db, telemetry.ReleaseAll, "", n)
	return n, nil
}

// Renew is the heartbeat: it pushes every live lock of session to expire no
// earlier than now+TTL on the database clock, and returns how many it
// renewed. Expired locks stay expired. The same owner rules as ReleaseAll.
func (p *Plugin) Renew(db *gorm.DB, session string) (int64, error) {
	db, b, err := p.sessionAction(db, "renew", session)
	if err != nil {
		return 0, err
	}
	ttl, err := p.ttlFor(db, nil)
	if err != nil {
		return 0, err
	}
	return b.t.Renew(direct(db), session, ttl)
}

// Shorten cuts the lease of the session's Write lock on target to end ttl
// from now on the database clock, when that is sooner than it ends now (a
// page that is left keeps its lock for a few seconds, for a reload); it
// never extends a lease. It returns the lock as stored (without its token
// or reason) and the lease left. Without a live Write lock of the owner in
// db's context on target it is ErrNotLocked and changes nothing; a ttl that
// is not positive is ErrInvalid; one above Config.MaxTTL is capped.
func (p *Plugin) Shorten(db *gorm.DB, target any, ttl time.Duration) (*Lock, time.Duration, error) {
	db, b, err := p.on(db)
	if err == nil && ttl <= 0 {
		err = invalid("TTL %v must be positive", ttl)
	}
	var o Owner
	var k key
	if err == nil {
		o, k, err = p.ownerAndKey(db, target)
	}
	if err != nil {
		return nil, 0, err
	}
	l, now, err := b.t.Shorten(direct(db), k, o.Session, min(ttl, p.cfg.MaxTTL))
	if err != nil {
		return nil, 0, err
	}
	out := publicLock(l)
	return &out, max(l.ExpiresAt.Sub(now), 0), nil
}

// Holders returns the live locks on target (its writer, or its readers),
// without their tokens. It needs no owner.
func (p *Plugin) Holders(db *gorm.DB, target any) ([]Lock, error) {
	db, b, err := p.on(db)
	var k key
	if err == nil {
		k, err = p.targetKey(db, target)
	}
	if err != nil {
		return nil, err
	}
	return b.t.list(direct(db), Filter{Resource: k.Resource, ID: k.ID})
}

// List is the admin view of the lock table: the locks matching f, ordered
// by resource, id and holder, never with their tokens.
func (p *Plugin) List(db *gorm.DB, f Filter) ([]Lock, error) {
	db, b, err := p.on(db)
	if err != nil {
		return nil, err
	}
	for _, s := range []struct{ what, v string }{
		{"resource", f.Resource}, {"id", f.ID}, {"user", f.User}, {"session", f.Session},
	} {
		if err := model.CheckText(s.what, s.v, model.MaxTextLen, true); err != nil {
			return nil, err
		}
	}
	if f.Limit < 0 {
		return nil, invalid("limit %d is negative", f.Limit)
	}
	return b.t.list(direct(db), f)
}

// ForceRelease removes every lock on the record resource/id, whoever holds
// it: the admin's answer to a crashed or absent holder. It asks
// Config.Authorize("force_release", lock) for each holder first, is refused
// with ErrForbidden unless all are allowed, and logs who released what and
// when. It returns ErrNotLocked when nobody holds the record.
func (p *Plugin) ForceRelease(db *gorm.DB, resource, id string) error {
	db, b, err := p.on(db)
	if err != nil {
		return err
	}
	k := key{Resource: resource, ID: id}
	if err := model.ValidateKey(k); err != nil {
		return err
	}
	ctx := db.Statement.Context
	caller, _ := OwnerFrom(ctx)
	p.hints.dropKey(k)
	var ended []lockstore.Lock
	noted := b.watch.EnsureNotes(db) == nil // without it (a role that may not make it), told as released
	err = db.Transaction(func(tx *gorm.DB) error {
		err := b.t.ForceRelease(direct(tx), k, func(now time.Time, held []lockstore.Lock) error {
			for _, l := range held {
				err := p.authorize(ctx, "force_release", publicLock(l))
				p.audit(ctx, "force_release", publicLock(l), caller, now, err)
				if err != nil {
					return err
				}
			}
			ended = held
			return nil
		})
		if err != nil || !noted {
			return err
		}
		return b.watch.Note(tx, watch.Ended(ReasonForceReleased, caller.User, ended...)...)
	})
	if err == nil {
		p.tel.Released(ctxOf(db), db, telemetry.Force, k.Resource, int64(len(ended)))
	}
	return err
}

func (p *Plugin) authorize(ctx context.Context, action string, l Lock) error {
	if p.cfg.Authorize == nil {
		return fmt.Errorf("%w: %s needs Config.Authorize", ErrForbidden, action)
	}
	if err := p.cfg.Authorize(ctx, action, l); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrForbidden, action, err)
	}
	return nil
}

// audit logs an admin action: who did what to whose lock, when, and whether
// it was allowed.
func (p *Plugin) audit(ctx context.Context, action string, l Lock, by Owner, at time.Time, err error) {
	attrs := []any{
		slog.String("action", action),
		slog.String("resource", l.Resource), slog.String("id", l.ID),
		slog.String("holder_session", l.Owner.Session), slog.String("holder_user", l.Owner.User),
		slog.String("by_session", by.Session), slog.String("by_user", by.User),
		slog.Time("at", at.UTC()),
	}
	if err != nil {
		p.cfg.Logger.WarnContext(ctx, "offlinelock: admin action refused", append(attrs, slog.String("error", err.Error()))...)
		return
	}
	p.cfg.Logger.WarnContext(ctx, "offlinelock: admin action", attrs...)
}

// Sweep deletes expired lock rows in batches, resting between batches twice
// as long as the last one took (so it never takes more than a third of the
// database's time), and returns how many it deleted; cancel db's context to
// stop it. Expired locks are free without it: it keeps the table small.
// With Config.SessionAlive it then releases the locks of sessions that
// ended, and counts them too (docs/lock-table.md).
func (p *Plugin) Sweep(db *gorm.DB) (int64, error) {
	db, b, err := p.on(db)
	if err != nil {
		return 0, err
	}
	c := direct(db)
	var total int64
	var cur lockstore.SweepCursor
	for {
		if err := c.Context().Err(); err != nil {
			return total, err
		}
		began := time.Now()
		n, more, err := b.t.Sweep(c, &cur)
		p.tel.Swept(c.Context(), db, n)
		total += n
		if err != nil {
			return total, err
		}
		if !more {
			n, err := p.endDeadSessions(db)
			return total + n, err
		}
		rest := time.NewTimer(2 * time.Since(began))
		select {
		case <-c.Context().Done():
			rest.Stop()
			return total, c.Context().Err()
		case <-rest.C:
		}
	}
}

// SessionsPerSweep bounds the live locks whose sessions one Sweep asks
// Config.SessionAlive about, in the lock table's order.
const SessionsPerSweep = 10_000

// endDeadSessions releases the locks of the sessions Config.SessionAlive
// reports dead, and returns how many.
func (p *Plugin) endDeadSessions(db *gorm.DB) (int64, error) {
	if p.cfg.SessionAlive == nil {
		return 0, nil
	}
	ctx := ctxOf(db)
	held, err := p.List(db, Filter{Limit: SessionsPerSweep})
	if err != nil {
		return 0, err
	}
	var total int64
	asked := map[string]bool{}
	for _, l := range held {
		if asked[l.Owner.Session] {
			continue
		}
		asked[l.Owner.Session] = true
		alive, err := p.cfg.SessionAlive(ctx, l.Owner)
		if err != nil {
			p.cfg.Logger.WarnContext(ctx, "offlinelock: Config.SessionAlive failed; the session's locks stay", slog.String("error", err.Error()))
			continue
		}
		if alive {
			continue
		}
		n, err := p.ReleaseAll(db.WithContext(WithOwner(ctx, l.Owner)), l.Owner.Session)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// StartSweeper runs Sweep every interval (one minute if every <= 0) in a
// goroutine until ctx is done, logging failures to Config.Logger.
func (p *Plugin) StartSweeper(ctx context.Context, db *gorm.DB, every time.Duration) {
	db = onPrimary(db)
	if every <= 0 {
		every = time.Minute
	}
	db = db.WithContext(ctx)
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if _, err := p.Sweep(db); err != nil && !errors.Is(err, context.Canceled) {
					p.cfg.Logger.ErrorContext(ctx, "offlinelock: sweep failed", slog.String("error", err.Error()))
				}
			}
		}
	}()
}

// KeyOf returns the lock that covers target: its own table and primary key
// as text, or, for a member of an aggregate, its root's. Locks returned by
// Acquire, Holders and LockByToken carry the same Resource and ID.
func (p *Plugin) KeyOf(db *gorm.DB, target any) (resource, id string, err error) {
	if _, err := p.bindingOf(db); err != nil {
		return "", "", err
	}
	k, err := p.targetKey(db, target)
	return k.Resource, k.ID, err
}

// LockByToken returns the live lock that token is the capability for, with
// its owner and without its token, for clients that carry a token instead
// of a session (the HTTP Lock-Token header). It needs no owner. A wrong,
// malformed or expired token, or the hash the table holds in its place, is
// ErrNotLocked. The lookup is an indexed equality on the token's hash; the
// caller must still check that the lock's owner is the one presenting it.
func (p *Plugin) LockByToken(db *gorm.DB, token string) (*Lock, error) {
	db, b, err := p.on(db)
	if err != nil {
		return nil, err
	}
	if !lockstore.WellFormedToken(token) {
		return nil, fmt.Errorf("%w: not a lock token", ErrNotLocked)
	}
	l, err := b.t.ByToken(direct(db), token)
	if l == nil {
		return nil, err
	}
	pl := publicLock(*l)
	return &pl, err
}

// The store's types (internal/lockstore), under the names the plugin uses.
type (
	key     = lockstore.Key
	conn    = lockstore.Conn
	granted = lockstore.Granted
)

const (
	kindText  = lockstore.KindText
	kindInt   = lockstore.KindInt
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

// observerOf is the Observer of db's store, nil where the plugin is not
// registered on db.
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

// direct is direct(db) without looking the plugin up again, for a
// statement of t's binding.
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

// Mode is a model's locking policy, set with the lock struct tag on its
// primary key. It decides what the plugin's callbacks do on loads and writes.
type Mode string

const (
	// ExclusiveWrite: loads are free; a write needs a Write lock taken with
	// Acquire when the edit starts. The most common choice.
	ExclusiveWrite Mode = "exclusive_write"
	// ExclusiveRead: every load takes the exclusive lock for the session, so
	// only one session may even read the record; writes need it too.
	ExclusiveRead Mode = "exclusive_read"
	// ReadWrite: every load takes a shared Read lock; a write needs a Write
	// lock, which is granted only when no other session reads.
	ReadWrite Mode = "read_write"
)

// Access is what one lock grants.
type Access string

const (
	// Read is shared: many sessions may hold it together, but not while
	// another session holds Write.
	Read Access = "read"
	// Write is exclusive: no other session holds anything on the record.
	// A session that is the only reader may upgrade its Read to Write.
	Write Access = "write"
)

func (a Access) valid() bool { return a == Read || a == Write }

// Lock is one granted lock, as stored in the lock table.
type Lock struct {
	// Resource and ID name the locked row: its table and its primary key as
	// text (composite keys are joined with ',' and escaped).
	Resource, ID string
	Access       Access
	Owner        Owner
	// Token is a secret capability (128 bits from crypto/rand) for clients
	// that cannot carry a session (HTTP Lock-Token). Only Acquire's answer
	// to a new grant carries it, once: the table keeps its SHA-256 hash.
	// Never in Holders, List, LockByToken or errors.
	Token string
	// Generation grows at every grant of the key and is never reused, not
	// even after a failover (docs/scaling.md), so it serves as a fencing
	// token. Re-acquiring a lock you hold keeps it.
	Generation int64
	// AcquiredAt and ExpiresAt come from the database's clock.
	AcquiredAt, ExpiresAt time.Time
	// Reason is why the lock was taken, as its holder said (WithReason):
	// at most MaxReason bytes of printable text, shown to whoever may see
	// the lock, never put in metrics or traces. A lock taken again keeps it
	// unless a new one is given; a lock taken over loses it.
	Reason string
}

// MaxReason is the longest Reason, in bytes.
const MaxReason = 255

// TagName is the struct tag the plugin reads. On a model's primary key it
// sets the model's Mode and options: `lock:"exclusive_read,ttl=2h"`. On a
// foreign key it makes the model a member of an aggregate whose lock is its
// root's: `lock:"root"` or `lock:"root=orders"`.
const TagName = "lock"

// ownerAndKey is the owner of db's context and target's lock key, the
// first error of the two otherwise.
func (p *Plugin) ownerAndKey(db *gorm.DB, target any) (Owner, key, error) {
	o, err := ownerOf(db)
	if err != nil {
		return o, key{}, err
	}
	k, err := p.targetKey(db, target)
	return o, k, err
}

// targetKey finds the key target is locked by: its own table and primary
// key, or, for a member of an aggregate, its root's.
func (p *Plugin) targetKey(db *gorm.DB, target any) (key, error) {
	k, _, err := p.targetKeyModel(db, target)
	return k, err
}

// targetKeyModel is targetKey, and the model target parsed as (nil when
// it did not parse).
func (p *Plugin) targetKeyModel(db *gorm.DB, target any) (key, *model.Model, error) {
	if err := checkTarget(target); err != nil {
		return key{}, nil, err
	}
	m, stmt, err := p.modelFor(db, target)
	if stmt == nil {
		return key{}, nil, invalid("cannot parse model %T: %v", target, err)
	}
	if err != nil {
		return key{}, m, err
	}
	var k key
	if m.Root != nil {
		root, rootErr := p.memberRootOf(db, m, reflect.ValueOf(target).Elem())
		k, err = root.k, rootErr
	} else {
		k, err = parsedKey(db, stmt, target)
		if tm := p.reg.TableModel(k.Resource); tm != nil {
			k.Resource = tm.Table // a DTO of a lockable table names its lock
		}
	}
	if err == nil && !m.Lockable && m.Slip != "" && p.reg.TableModel(k.Resource) == nil {
		// An explicit lock on a model without lock tags is a lock like any
		// other; one whose tags show a slipped lock tag was meant to be
		// lockable, and is not.
		return key{}, m, model.NotLockable(m)
	}
	return k, m, err
}

func checkTarget(target any) error {
	if target == nil {
		return invalid("target is nil")
	}
	rv := reflect.ValueOf(target)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return invalid("target must be a non-nil pointer to a model, got %T", target)
	}
	if rv.Elem().Kind() != reflect.Struct {
		return invalid("target must point to a struct, got %T", target)
	}
	return nil
}

// parsedKey is the key of target's own row, which stmt has parsed: its
// table and primary key, which must be set.
func parsedKey(db *gorm.DB, stmt *gorm.Statement, target any) (key, error) {
	rv := reflect.ValueOf(target)
	fields := stmt.Schema.PrimaryFields
	if len(fields) == 0 {
		return key{}, invalid("model %s has no primary key", stmt.Schema.Name)
	}
	parts := make([]string, len(fields))
	for i, f := range fields {
		v, zero := f.ValueOf(db.Statement.Context, rv.Elem())
		if zero {
			return key{}, invalid("model %s has no value in primary key field %s", stmt.Schema.Name, f.Name)
		}
		id, err := model.Canonical(model.KindOf(f), v)
		if err != nil {
			return key{}, fmt.Errorf("model %s field %s: %w", stmt.Schema.Name, f.Name, err)
		}
		parts[i] = id
	}
	k := key{Resource: stmt.Table, ID: model.EncodeKey(parts)}
	return k, model.ValidateKey(k)
}

// pkRow is a row's key with the primary key values it came from.
type pkRow struct {
	k    key
	vals []any
}

// modelFor parses the schema of value (a model or a pointer to one); stmt
// is nil when it did not parse.
func (p *Plugin) modelFor(db *gorm.DB, value any) (*model.Model, *gorm.Statement, error) {
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(value); err != nil {
		return nil, nil, err
	}
	m := p.reg.ModelOf(stmt.Schema, db.NamingStrategy)
	return m, stmt, p.reg.Resolve(m)
}
