package offlinelock

import (
	"context"
	"time"

	"gorm.io/gorm"
)

// GORM's habit for per-statement options is a scope. These are the
// context forms (WithOwner, WithTTL, Bypass) as scopes, for one statement:
//
//	db.Scopes(offlinelock.As(owner)).First(&c, 129)
//	db.Scopes(offlinelock.As(owner), offlinelock.For(time.Hour)).Find(&orders)
//	db.Scopes(offlinelock.Bypassed("nightly import")).Save(&rows)
//
// GORM runs scopes when a statement runs, so they reach the plugin's
// callbacks (loads and writes), not its methods (Acquire, Release, Renew,
// …), which read db's context when they are called: give those the owner
// with db.WithContext(offlinelock.WithOwner(ctx, owner)).

// As is a scope that runs the statement for o, as WithOwner does.
func As(o Owner) func(*gorm.DB) *gorm.DB {
	return func(db *gorm.DB) *gorm.DB {
		db.Statement.Context = WithOwner(statementContext(db), o)
		return db
	}
}

// For is a scope that asks for locks of the given lifetime for the
// statement's loads, as WithTTL does.
func For(ttl time.Duration) func(*gorm.DB) *gorm.DB {
	return func(db *gorm.DB) *gorm.DB {
		db.Statement.Context = WithTTL(statementContext(db), ttl)
		return db
	}
}

// Bypassed is a scope that runs the statement under Bypass(ctx, reason):
// the plugin's checks are skipped and the statement logged with reason;
// the database guard still refuses writes of records another session
// holds.
func Bypassed(reason string) func(*gorm.DB) *gorm.DB {
	return func(db *gorm.DB) *gorm.DB {
		db.Statement.Context = Bypass(statementContext(db), reason)
		return db
	}
}

func statementContext(db *gorm.DB) context.Context {
	if db.Statement.Context == nil {
		return context.Background()
	}
	return db.Statement.Context
}
