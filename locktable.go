package offlinelock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// Acquire takes a lock on target for the owner in db's context and returns
// it, with its generation and expiry, and with its token when the lock is
// new. target is a pointer to a model whose primary key is set; nothing is
// loaded.
//
// A lock held by someone else is refused at once with a *LockedError naming
// every holder; Acquire never waits. Asking again for a lock the session
// holds extends its expiry and keeps its token and generation, but returns
// Token "": the lock table holds only the token's hash, so the token is
// known to whoever got it from the first Acquire and to nobody else. Read
// locks are shared; Write is exclusive; the only reader may upgrade to
// Write, keeping its token (Token "" too). An expired lock is free: the
// next Acquire takes it over with a new token and a larger generation. The
// lock lives for Config.TTL, or WithTTL's value, at most Config.MaxTTL.
//
// Acquire runs on db: inside db.Transaction the lock commits or rolls back
// with the transaction.
func (p *Plugin) Acquire(db *gorm.DB, target any, access Access) (*Lock, error) {
	db = onPrimary(db)
	t, err := p.storeFor(db)
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
	if err != nil {
		return nil, err
	}
	if err := p.rememberTarget(db, m, k); err != nil {
		return nil, err
	}
	ttl, err := p.ttl(db.Statement.Context)
	if err != nil {
		return nil, err
	}
	reason := reasonFrom(db.Statement.Context)
	if err := validReason(reason); err != nil {
		return nil, err
	}
	keys := []key{k}
	got, err := p.acquireMany(db, direct(db), t, keys, o, access, ttl)
	if err == nil && reason != "" {
		err = t.SetReason(direct(db), got[k].Lock, reason)
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

// acquireMany takes locks on many keys, all or nothing, in a number of
// statements that grows with len(keys)/batchSize, in the fixed order of
// sortKeys. Each lock says whether it is fresh (not held by the session
// before). The grant runs on c, a connection on db.
func (p *Plugin) acquireMany(db *gorm.DB, c conn, t lockStore, keys []key, o Owner, access Access, ttl time.Duration) (map[key]granted, error) {
	for i, k := range keys { // no guard, no grant (coverage.go)
		if i > 0 && k.Resource == keys[i-1].Resource {
			continue
		}
		if err := p.checkGuarded(db, k.Resource); err != nil {
			return nil, err
		}
	}
	got, err := t.grant(c, keys, o, access, ttl)
	if err != nil {
		return nil, err
	}
	p.hints.putAll(o.Session, got)
	return got, nil
}

// Release gives up the session's lock on target, Read or Write. It returns
// ErrNotLocked when the session holds no lock on it, or when its lock had
// already expired (the row is removed all the same). Inside db.Transaction
// the release commits with the save it ends.
func (p *Plugin) Release(db *gorm.DB, target any) error {
	db = onPrimary(db)
	t, err := p.storeFor(db)
	if err != nil {
		return err
	}
	o, err := ownerOf(db)
	if err != nil {
		return err
	}
	k, err := p.targetKey(db, target)
	if err != nil {
		return err
	}
	return p.release(db, t, k, o)
}

func (p *Plugin) release(db *gorm.DB, t lockStore, k key, o Owner) error {
	p.hints.drop(o.Session, k)
	c := direct(db)
	held, err := t.Release(c, k, o.Session)
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
// httplock's Middleware refuses a write over HTTP before any statement
// runs) the way the plugin records its own: counted in
// offlinelock_lock_refusals_total with mode "http" and the reason err
// gives (locked, not_locked, no_owner), and noted on the span of db's
// context. An err that is no refusal is not recorded.
func (p *Plugin) Refused(db *gorm.DB, target any, access Access, err error) {
	p.tel.Refused(ctxOf(db), db, telemetry.HTTP, string(access), p.resourceOf(db, target), err)
}

// ReleaseAll removes every lock of session, live or expired, and returns how
// many it removed. Call it at logout and when a session expires. Without an
// owner in the context it runs as the application (a session-expiry job);
// with an owner of another session it needs Config.Authorize("release_all").
func (p *Plugin) ReleaseAll(db *gorm.DB, session string) (int64, error) {
	db, b, err := p.endingSession(db, session)
	if err != nil {
		return 0, err
	}
	c := direct(db)
	n, err := b.t.ReleaseAll(c, session)
	p.tel.Released(c.Context(), db, telemetry.ReleaseAll, "", n)
	return n, err
}

// endingSession is what ReleaseAll and EndSession do first: db on the
// primary, its binding, the caller's right to end session, and the
// session's hints dropped.
func (p *Plugin) endingSession(db *gorm.DB, session string) (*gorm.DB, *binding, error) {
	db = onPrimary(db)
	b, err := p.bindingOf(db)
	if err == nil {
		err = p.checkSessionAction(db, "release_all", session)
	}
	if err != nil {
		return nil, nil, err
	}
	p.hints.dropSession(session)
	return db, b, nil
}

// EndSession ends a session that signed out or expired: it releases every
// lock of session, live or expired, as ReleaseAll does, and notes each
// live one as ended with its session, in the same transaction, so that
// every Watch of its records, on any node, tells EventReleased with
// ReasonSignedOut. It returns how many lock rows it removed. Beside
// ReleaseAll it costs a read of the session's locks and a note per live
// lock; where the notes table is missing and cannot be made, it is
// ReleaseAll, and the releases are told as ReasonReleased. The same owner
// rules as ReleaseAll. httplock's EndLogin calls it.
func (p *Plugin) EndSession(db *gorm.DB, session string) (int64, error) {
	db, b, err := p.endingSession(db, session)
	if err != nil {
		return 0, err
	}
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
	db = onPrimary(db)
	t, err := p.storeFor(db)
	if err != nil {
		return 0, err
	}
	if err := p.checkSessionAction(db, "renew", session); err != nil {
		return 0, err
	}
	ttl, err := p.ttl(db.Statement.Context)
	if err != nil {
		return 0, err
	}
	return t.Renew(direct(db), session, ttl)
}

// Shorten cuts the lease of the session's Write lock on target so that it
// ends ttl from now on the database clock, when that is sooner than it
// ends now: a page that is left keeps its lock for a few seconds (a reload
// resumes it) instead of for the rest of its lease. A lease that ends
// sooner is left as it is: Acquire and Renew extend a lease, Shorten
// only cuts it. It returns the lock as stored (its expiry, without its
// token or reason) and the lease left on the database clock.
//
// The owner in db's context must hold a live Write lock on target:
// otherwise ErrNotLocked, and nothing changes, whoever else holds it. A
// ttl that is not positive is ErrInvalid; one above Config.MaxTTL is
// capped, as everywhere.
func (p *Plugin) Shorten(db *gorm.DB, target any, ttl time.Duration) (*Lock, time.Duration, error) {
	db = onPrimary(db)
	t, err := p.storeFor(db)
	if err != nil {
		return nil, 0, err
	}
	if ttl <= 0 {
		return nil, 0, invalid("TTL %v must be positive", ttl)
	}
	o, err := ownerOf(db)
	if err != nil {
		return nil, 0, err
	}
	k, err := p.targetKey(db, target)
	if err != nil {
		return nil, 0, err
	}
	l, now, err := t.Shorten(direct(db), k, o.Session, min(ttl, p.cfg.MaxTTL))
	if err != nil {
		return nil, 0, err
	}
	out := publicLock(l)
	return &out, max(l.ExpiresAt.Sub(now), 0), nil
}

// checkSessionAction allows a session-wide action on session when the caller
// is that session or the application itself (no owner), and otherwise asks
// Config.Authorize and logs the decision.
func (p *Plugin) checkSessionAction(db *gorm.DB, action, session string) error {
	if err := model.CheckText("session", session, model.MaxTextLen, false); err != nil {
		return err
	}
	ctx := db.Statement.Context
	o, ok := OwnerFrom(ctx)
	if !ok || o.Session == session {
		return nil
	}
	l := Lock{Owner: Owner{Session: session}}
	err := p.authorize(ctx, action, l)
	p.audit(ctx, action, l, o, time.Now(), err)
	return err
}

// Holders returns the live locks on target (its writer, or its readers),
// without their tokens. It needs no owner.
func (p *Plugin) Holders(db *gorm.DB, target any) ([]Lock, error) {
	db = onPrimary(db)
	t, err := p.storeFor(db)
	if err != nil {
		return nil, err
	}
	k, err := p.targetKey(db, target)
	if err != nil {
		return nil, err
	}
	return t.list(direct(db), Filter{Resource: k.Resource, ID: k.ID})
}

// List is the admin view of the lock table: the locks matching f, ordered
// by resource, id and holder, never with their tokens.
func (p *Plugin) List(db *gorm.DB, f Filter) ([]Lock, error) {
	db = onPrimary(db)
	t, err := p.storeFor(db)
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
	return t.list(direct(db), f)
}

// ForceRelease removes every lock on the record resource/id, whoever holds
// it: the admin's answer to a crashed or absent holder. It asks
// Config.Authorize("force_release", lock) for each holder first, is refused
// with ErrForbidden unless all are allowed, and logs who released what and
// when. It returns ErrNotLocked when nobody holds the record.
func (p *Plugin) ForceRelease(db *gorm.DB, resource, id string) error {
	db = onPrimary(db)
	b, err := p.bindingOf(db)
	if err != nil {
		return err
	}
	t, k := b.t, key{Resource: resource, ID: id}
	if err := model.ValidateKey(k); err != nil {
		return err
	}
	ctx := db.Statement.Context
	caller, _ := OwnerFrom(ctx)
	p.hints.dropKey(k)
	var ended []lockstore.Lock
	noted := b.watch.EnsureNotes(db) == nil // without it (a role that may not make it), told as released
	err = db.Transaction(func(tx *gorm.DB) error {
		err := t.ForceRelease(direct(tx), k, func(now time.Time, held []lockstore.Lock) error {
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

// Sweep deletes expired lock rows in batches (the rows of at most 50
// records per statement on PostgreSQL, 100 on SQLite, 1000 on MySQL), so it
// never holds many row locks at once, and returns how many it deleted.
// Between batches it rests twice as long as the last batch took, so that it
// never takes more than a third of the database's time and locks taken
// meanwhile keep their latency (BenchmarkSweep); cancel db's context to
// stop it. Records whose locks another session is changing right then are
// skipped, for the next Sweep. Expired locks are already free without it;
// it keeps the table small. With Config.SessionAlive it then releases the
// locks of sessions that ended, and counts them too.
func (p *Plugin) Sweep(db *gorm.DB) (int64, error) {
	db = onPrimary(db)
	t, err := p.storeFor(db)
	if err != nil {
		return 0, err
	}
	c := direct(db)
	var total int64
	var cur sweepCursor
	for {
		if err := c.Context().Err(); err != nil {
			return total, err
		}
		began := time.Now()
		n, more, err := t.Sweep(c, &cur)
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
	if _, err := p.storeFor(db); err != nil {
		return "", "", err
	}
	k, err := p.targetKey(db, target)
	return k.Resource, k.ID, err
}

// LockByToken returns the live lock that token is the capability for, with
// its owner and without its token, for clients that carry a token instead
// of a session (the HTTP Lock-Token header). It needs no owner. A wrong,
// malformed or expired token is ErrNotLocked, and so is the hash the lock
// table holds in place of the token: reading the table gives no usable
// token. The database finds the token's hash (an indexed equality lookup,
// so its timing is the index's, as for any secret key); the caller must
// still check that the lock's owner is the one presenting it.
func (p *Plugin) LockByToken(db *gorm.DB, token string) (*Lock, error) {
	db = onPrimary(db)
	t, err := p.storeFor(db)
	if err != nil {
		return nil, err
	}
	if !lockstore.WellFormedToken(token) {
		return nil, fmt.Errorf("%w: not a lock token", ErrNotLocked)
	}
	return t.byToken(direct(db), token)
}
