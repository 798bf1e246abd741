package offlinelock

import (
	"context"
	"strings"
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

type ownerKey struct{}
type ttlKey struct{}

// WithOwner returns a context that carries o. Pass it to GORM with
// db.WithContext(offlinelock.WithOwner(ctx, o)); every lock call and callback
// reads its owner from the statement's context.
func WithOwner(ctx context.Context, o Owner) context.Context {
	return context.WithValue(ctx, ownerKey{}, o)
}

// OwnerFrom reports the owner carried by ctx, if any.
func OwnerFrom(ctx context.Context) (Owner, bool) {
	if ctx == nil {
		return Owner{}, false
	}
	o, ok := ctx.Value(ownerKey{}).(Owner)
	return o, ok
}

// WithTTL returns a context that asks for locks of the given lifetime instead
// of Config.TTL. The value is still capped by Config.MaxTTL; a zero or
// negative TTL makes the lock calls fail with ErrInvalid.
func WithTTL(ctx context.Context, ttl time.Duration) context.Context {
	return context.WithValue(ctx, ttlKey{}, ttl)
}

// ttlFrom reports the TTL carried by ctx, if any.
func ttlFrom(ctx context.Context) (time.Duration, bool) {
	if ctx == nil {
		return 0, false
	}
	d, ok := ctx.Value(ttlKey{}).(time.Duration)
	return d, ok
}

type reasonKey struct{}

// WithReason returns a context in which Acquire records reason with the
// lock it grants ("checkout", "editing the price list"): at most MaxReason
// bytes of printable UTF-8, else Acquire fails with ErrInvalid.
func WithReason(ctx context.Context, reason string) context.Context {
	return context.WithValue(ctx, reasonKey{}, reason)
}

// reasonFrom reports the reason carried by ctx, "" if none.
func reasonFrom(ctx context.Context) string {
	if ctx == nil {
		return ""
	}
	r, _ := ctx.Value(reasonKey{}).(string)
	return r
}

// validReason checks a lock's reason: bounded, printable, valid UTF-8.
func validReason(r string) error {
	if len(r) > MaxReason || !utf8.ValidString(r) || strings.IndexFunc(r, func(c rune) bool { return !unicode.IsPrint(c) }) >= 0 {
		return invalid("a lock's reason is at most %d bytes of printable UTF-8", MaxReason)
	}
	return nil
}

type bypassKey struct{}

// Bypass returns a context in which the plugin's callbacks do not check or
// take locks, for migrations and admin jobs. It is the only way around them,
// and every statement it lets through is logged with reason, which must not
// be empty. The lock calls (Acquire, Release, …) are not affected.
func Bypass(ctx context.Context, reason string) context.Context {
	return context.WithValue(ctx, bypassKey{}, reason)
}

// bypassFrom reports the reason of a Bypass in ctx, if any.
func bypassFrom(ctx context.Context) (string, bool) {
	if ctx == nil {
		return "", false
	}
	r, ok := ctx.Value(bypassKey{}).(string)
	return r, ok
}

// ctxOf is db's statement context, never nil.
func ctxOf(db *gorm.DB) context.Context {
	if ctx := db.Statement.Context; ctx != nil {
		return ctx
	}
	return context.Background()
}
