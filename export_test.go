package offlinelock

import (
	"github.com/offlinelock/offlinelock/internal/lockstore"
	"gorm.io/gorm"
)

// GrantStatement is the one statement Acquire takes a Write lock with on
// PostgreSQL, and its arguments for resource, id and session: what
// BenchmarkAcquireStatement sends raw.
func GrantStatement(p *Plugin, resource, id, session string) (string, []any) {
	b, _ := p.newBinding("postgres")
	return lockstore.GrantStatement(b.t.Store, resource, id, session, DefaultTTL)
}

// SweepPlan is the EXPLAIN of one batch of the sweep on PostgreSQL, planned
// under the settings the sweep runs with, in a transaction rolled back.
func SweepPlan(p *Plugin, db *gorm.DB) (plan string, err error) {
	err = db.Transaction(func(tx *gorm.DB) error {
		t, err := p.storeFor(tx)
		if err != nil {
			return err
		}
		plan, err = lockstore.SweepPlan(t.Store, direct(tx))
		return err
	})
	return plan, err
}

// SetSQLiteGrantAll sends the grants of several Write locks p makes on
// db (SQLite) through grantAll (true, the default) or through the
// serialised path.
func SetSQLiteGrantAll(p *Plugin, db *gorm.DB, on bool) {
	b, err := p.bindingOf(db)
	if err != nil {
		panic(err)
	}
	lockstore.SetSQLiteGrantAll(b.t.Store, on)
}

// MySQLPlanStep is one line of MariaDB's EXPLAIN.
type MySQLPlanStep = lockstore.MySQLPlanStep

// MySQLSessionPlans is the EXPLAIN, on MariaDB, of each statement Renew
// and ReleaseAll send for session (lockstore.MySQLSessionPlans).
func MySQLSessionPlans(p *Plugin, db *gorm.DB, session string) (map[string][]MySQLPlanStep, error) {
	t, err := p.storeFor(db)
	if err != nil {
		return nil, err
	}
	return lockstore.MySQLSessionPlans(t.Store, direct(db), session)
}

// SQLiteCachedStatements is the texts the plugin's SQLite store for db
// keeps prepared (lockstore.SQLiteCachedStatements).
func SQLiteCachedStatements(p *Plugin, db *gorm.DB) ([]string, error) {
	t, err := p.storeFor(db)
	if err != nil {
		return nil, err
	}
	return lockstore.SQLiteCachedStatements(t.Store), nil
}

// GuardKeyOf is the guard's key p read for db's database (MySQL/MariaDB):
// what tests that write as the plugin would, by hand, key their marks with.
func GuardKeyOf(p *Plugin, db *gorm.DB) string { return p.guardOf(db).key() }

// IdentityStatement is the statement that gives a PostgreSQL transaction
// a writer's identity, signed in the database: its one $1 is the claim
// ("f:" or "s:" and the session).
func IdentityStatement(p *Plugin) string { return p.pgIdentityStatement }

// LockTableOf is p's lock table's name.
func LockTableOf(p *Plugin) string { return p.cfg.Table }

// CheckGuarded is the check every grant makes (coverage.go).
func CheckGuarded(p *Plugin, db *gorm.DB, resource string) error { return p.checkGuarded(db, resource) }

// SetGuardRevision makes p's store for db install and judge the guard as
// revision r would (lockstore.SetGuardRevision).
func SetGuardRevision(p *Plugin, db *gorm.DB, r int) {
	t, err := p.storeFor(db)
	if err != nil {
		panic(err)
	}
	lockstore.SetGuardRevision(t.Store, r)
}
