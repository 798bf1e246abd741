package offlinelock

import (
	"context"
	"time"
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
