package offlinelock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"
)

// Owner identifies who holds a lock. Session owns the lock: every lock of a
// session is released together at logout or session expiry. User is the name
// shown to other people ("locked by martin"). Use an opaque session identifier
// here, never a secret cookie value: other sessions see it in Holders and List.
type Owner struct {
	Session string
	User    string
}

// display is the name other people see for the owner.
func (o Owner) display() string {
	if o.User != "" {
		return o.User
	}
	return "another session"
}

type (
	ownerKey  struct{}
	ttlKey    struct{}
	reasonKey struct{}
	bypassKey struct{}
)

// fromCtx is ctx's value of type T under k, if any.
func fromCtx[T any](ctx context.Context, k any) (T, bool) {
	if ctx == nil {
		var zero T
		return zero, false
	}
	v, ok := ctx.Value(k).(T)
	return v, ok
}

// WithOwner returns a context that carries o. Pass it to GORM with
// db.WithContext(offlinelock.WithOwner(ctx, o)); every lock call and callback
// reads its owner from the statement's context.
func WithOwner(ctx context.Context, o Owner) context.Context {
	return context.WithValue(ctx, ownerKey{}, o)
}

// OwnerFrom reports the owner carried by ctx, if any.
func OwnerFrom(ctx context.Context) (Owner, bool) { return fromCtx[Owner](ctx, ownerKey{}) }

// WithTTL returns a context that asks for locks of the given lifetime instead
// of Config.TTL. The value is still capped by Config.MaxTTL; a zero or
// negative TTL makes the lock calls fail with ErrInvalid.
func WithTTL(ctx context.Context, ttl time.Duration) context.Context {
	return context.WithValue(ctx, ttlKey{}, ttl)
}

// WithReason returns a context in which Acquire records reason with the
// lock it grants ("checkout", "editing the price list"): at most MaxReason
// bytes of printable UTF-8, else Acquire fails with ErrInvalid.
func WithReason(ctx context.Context, reason string) context.Context {
	return context.WithValue(ctx, reasonKey{}, reason)
}

// reasonFrom reports the reason carried by ctx, "" if none.
func reasonFrom(ctx context.Context) string {
	r, _ := fromCtx[string](ctx, reasonKey{})
	return r
}

// validReason checks a lock's reason: bounded, printable, valid UTF-8.
func validReason(r string) error {
	if len(r) > MaxReason || !utf8.ValidString(r) || strings.IndexFunc(r, func(c rune) bool { return !unicode.IsPrint(c) }) >= 0 {
		return invalid("a lock's reason is at most %d bytes of printable UTF-8", MaxReason)
	}
	return nil
}

// Bypass returns a context in which the plugin's callbacks do not check or
// take locks, for migrations and admin jobs. It is the only way around them,
// and every statement it lets through is logged with reason, which must not
// be empty. The lock calls (Acquire, Release, …) are not affected.
func Bypass(ctx context.Context, reason string) context.Context {
	return context.WithValue(ctx, bypassKey{}, reason)
}

// bypassFrom reports the reason of a Bypass in ctx, if any.
func bypassFrom(ctx context.Context) (string, bool) { return fromCtx[string](ctx, bypassKey{}) }

// ctxOf is db's statement context, never nil.
func ctxOf(db *gorm.DB) context.Context {
	if ctx := db.Statement.Context; ctx != nil {
		return ctx
	}
	return context.Background()
}

// As is a scope that runs one statement for o, as WithOwner does:
// db.Scopes(offlinelock.As(owner)).First(&c, 129). Scopes reach the
// plugin's callbacks (loads and writes), not its methods (Acquire, …),
// which read db's context when they are called.
func As(o Owner) func(*gorm.DB) *gorm.DB {
	return scope(func(ctx context.Context) context.Context { return WithOwner(ctx, o) })
}

// For is a scope that asks for locks of the given lifetime for the
// statement's loads, as WithTTL does.
func For(ttl time.Duration) func(*gorm.DB) *gorm.DB {
	return scope(func(ctx context.Context) context.Context { return WithTTL(ctx, ttl) })
}

// Bypassed is a scope that runs the statement under Bypass(ctx, reason):
// the plugin's checks are skipped and the statement logged with reason;
// the database guard still refuses writes of records another session
// holds.
func Bypassed(reason string) func(*gorm.DB) *gorm.DB {
	return scope(func(ctx context.Context) context.Context { return Bypass(ctx, reason) })
}

// scope is a GORM scope that sets the statement's context to with's.
func scope(with func(context.Context) context.Context) func(*gorm.DB) *gorm.DB {
	return func(db *gorm.DB) *gorm.DB {
		db.Statement.Context = with(ctxOf(db))
		return db
	}
}

// ErrLockLost is the cause with which Do cancels its edit's context when
// the lock it holds for the edit is lost meanwhile (expired and taken
// over, or force-released); errors.Is(err, ErrNotLocked) is true of it.
var ErrLockLost = fmt.Errorf("%w: the lock was lost while the edit ran", ErrNotLocked)

// Do runs edit while the owner in db's context holds target's Write lock:
// the pattern of a background job (docs/jobs.md). It
//
//   - takes the lock with Acquire: a record another session holds is
//     refused at once with a *LockedError (skip it; try again later);
//   - runs edit in a transaction on db, whose context is cancelled, with
//     cause ErrLockLost, if the lock is lost while edit runs;
//   - renews the lock every third of its lifetime until edit returns, with
//     Renew, which extends every live lock of the session: give each job
//     run a session of its own;
//   - releases the lock it took in edit's transaction when edit succeeds,
//     so that the save and the release commit together, or on its own
//     when edit fails or panics. A lock held before Do is used, and kept.
//
// It returns edit's error, or ErrLockLost when the lock was lost.
func (p *Plugin) Do(db *gorm.DB, target any, edit func(tx *gorm.DB) error) (err error) {
	if edit == nil {
		return invalid("Do needs an edit")
	}
	l, err := p.Acquire(db, target, Write)
	if err != nil {
		return err
	}
	took := l.Token != "" // a new lock: a lock held before comes back without its token
	base := ctxOf(db)
	cleanup := db.WithContext(context.WithoutCancel(base)) // releases even when the caller's context ended
	ctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)
	committed := false
	defer func() {
		if !committed && took {
			if rerr := p.Release(cleanup, target); rerr != nil && !errors.Is(rerr, ErrNotLocked) {
				err = errors.Join(err, rerr)
			}
		}
	}()
	err = p.Transaction(db.WithContext(ctx), func(tx *gorm.DB) error {
		// stop: a renewal waiting for the edit's row lock never waits for
		// the commit that waits for it, even when edit panics.
		renewCtx, stop := context.WithCancel(base)
		renewed := make(chan struct{})
		go func() {
			defer close(renewed)
			p.keepLock(renewCtx, db.WithContext(renewCtx), target, l, cancel)
		}()
		defer func() {
			stop()
			<-renewed
		}()
		if err := edit(tx); err != nil || !took {
			return err
		}
		return p.Release(tx, target)
	})
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrLockLost) {
			err = cause
		}
		return err
	}
	committed = true // a loss noticed after the commit is none
	return nil
}

// keepLock renews l through db every third of its lifetime until ctx
// ends, and cancels the edit with ErrLockLost when the session no longer
// holds it with the same generation (a lock lost and taken again since is
// lost: the record may have changed in between).
func (p *Plugin) keepLock(ctx context.Context, db *gorm.DB, target any, l *Lock, cancel context.CancelCauseFunc) {
	every := l.ExpiresAt.Sub(l.AcquiredAt) / 3
	if every <= 0 {
		every = time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := p.Renew(db, l.Owner.Session); err != nil {
			continue // busy or no answer: the next tick tries again
		}
		holders, err := p.Holders(db, target)
		if err != nil {
			continue
		}
		held := slices.ContainsFunc(holders, func(h Lock) bool {
			return h.Owner.Session == l.Owner.Session && h.Access == Write && h.Generation == l.Generation
		})
		if !held && ctx.Err() == nil {
			cancel(ErrLockLost)
			return
		}
	}
}

// maxHints bounds the hint table's locks (and so its sessions: a session
// whose last hint goes is removed). Past it, the table starts over empty:
// a missing hint costs one statement on the general path.
const maxHints = 100_000

// hints remembers which locks this process granted to which session, so a
// load can guess whether its session already holds a fresh lock and take
// the read-only path, which checks the guess in the same statement.
type hints struct {
	mu sync.Mutex
	m  map[string]map[key]time.Time // session -> key -> expiry
	n  int
}

func (h *hints) put(session string, k key, exp time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || h.n >= maxHints {
		h.m, h.n = map[string]map[key]time.Time{}, 0
	}
	s := h.m[session]
	if s == nil {
		s = map[key]time.Time{}
		h.m[session] = s
	}
	if _, ok := s[k]; !ok {
		h.n++
	}
	s[k] = exp
}

// putAll is put for every lock of a grant, under one lock of the table.
func (h *hints) putAll(session string, got map[key]granted) {
	if len(got) > maxHints/2 {
		for k, l := range got {
			h.put(session, k, l.ExpiresAt)
		}
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || h.n+len(got) > maxHints {
		h.m, h.n = map[string]map[key]time.Time{}, 0
	}
	s := h.m[session]
	if s == nil {
		s = make(map[key]time.Time, len(got))
		h.m[session] = s
	}
	for k, l := range got {
		if _, ok := s[k]; !ok {
			h.n++
		}
		s[k] = l.ExpiresAt
	}
}

// fresh guesses whether session holds k for at least margin more.
func (h *hints) fresh(session string, k key, margin time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	exp, ok := h.m[session][k]
	return ok && time.Until(exp) > margin
}

func (h *hints) drop(session string, k key) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.m[session]; s != nil {
		h.remove(session, s, k)
	}
}

// remove drops k from session's hints s, and s when it is left empty.
func (h *hints) remove(session string, s map[key]time.Time, k key) {
	if _, ok := s[k]; ok {
		delete(s, k)
		h.n--
	}
	if len(s) == 0 {
		delete(h.m, session)
	}
}

func (h *hints) dropSession(session string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n -= len(h.m[session])
	delete(h.m, session)
}

func (h *hints) dropKey(k key) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for session, s := range h.m {
		h.remove(session, s, k)
	}
}
