package offlinelock

import (
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock/internal/lockstore"
)

// The writer's identity, carried to the guard inside statements the plugin
// already sends (internal/lockstore's signing.go): the store writes it,
// the plugin says who sends a statement and what it folded into it.

// registerIdentity has the store sign db's writes, once per database
// (with the callbacks).
func (b *binding) registerIdentity(db *gorm.DB) {
	if s := b.t.caps.Signer; s != nil && !b.p.cfg.DisableGuard {
		s.SignWrites(db, writer{b})
	}
}

// rawIdentity gives a raw write (Exec) by a session its identity
// (lockstore.Signer's SignRaw; lockstore.EndRawTx ends what it began).
func (b *binding) rawIdentity(db *gorm.DB) {
	if b.t == nil || b.t.caps.Signer == nil || b.p.cfg.DisableGuard || db.Error != nil || db.DryRun {
		return // no store: a plugin that failed to initialise refuses elsewhere
	}
	b.t.caps.Signer.SignRaw(db, writer{b})
}

// writer is the plugin's side of a signed write (lockstore.Writer).
type writer struct{ b *binding }

// Writer is lockstore.Writer's: the owner in stmt's context; a write the
// plugin checks again before commit (fence.go) is fenced.
func (w writer) Writer(stmt *gorm.Statement) (string, bool) {
	o, _ := OwnerFrom(stmt.Context)
	_, fenced := stmt.Settings.Load(stateKey)
	return o.Session, fenced
}

// GuardKey is lockstore.Writer's.
func (w writer) GuardKey() string { return w.b.guard.Key() }

// Upsert is lockstore.Writer's: the fences foldUpsert chose.
func (w writer) Upsert(stmt *gorm.Statement) (string, clause.Expression, clause.Expression, *int) {
	st := statementState(stmt)
	if st == nil || len(st.m.PK) == 0 {
		return "", nil, nil, nil
	}
	return st.m.PK[0].DBName, st.valuesFence, st.upsertFence, &st.upsertFolds
}

// Conn is lockstore.Writer's.
func (w writer) Conn(db *gorm.DB) lockstore.Conn { return direct(db) }
