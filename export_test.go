package offlinelock

import (
	"fmt"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"gorm.io/gorm"
)

// The stores' test hooks are methods of the stores that have them and of
// no lockstore interface (internal/lockstore/testhooks.go): the seams
// below reach them through these interfaces.
type (
	grantStatementer interface {
		GrantStatement(resource, id, session string, ttl time.Duration) (string, []any)
	}
	releaseStatementer interface{ ReleaseStatement() string }
	sweepPlanner       interface {
		SweepPlan(c lockstore.Conn) (string, error)
	}
	grantAllSetter interface{ SetGrantAll(on bool) }
	sessionPlanner interface {
		SessionPlans(c lockstore.Conn, session string) (map[string][]MySQLPlanStep, error)
	}
	statementCache  interface{ CachedStatements() []string }
	revisionSetter  interface{ SetGuardRevision(r int) }
	mysqlIdentifier interface {
		SessionMark(key, session string, fenced bool) uint64
		IdentityPrefix(key, session string, fenced bool) string
	}
)

// GrantStatement is the one statement Acquire takes a Write lock with on
// PostgreSQL, and its arguments for resource, id and session: what
// BenchmarkAcquireStatement sends raw.
func GrantStatement(p *Plugin, resource, id, session string) (string, []any) {
	b, _ := p.newBinding("postgres")
	return b.t.Store.(grantStatementer).GrantStatement(resource, id, session, DefaultTTL)
}

// OwnStatements are the statements p's store on db (PostgreSQL) takes
// and frees a Write lock with, as Acquire and Release send them: the
// grant's text and arguments for a key and session, and the release's
// text (its arguments: resource, id, session).
func OwnStatements(p *Plugin, db *gorm.DB) (grant func(resource, id, session string) (string, []any), release string) {
	b, err := p.bindingOf(db)
	if err != nil {
		panic(err)
	}
	st := b.t.Store
	return func(resource, id, session string) (string, []any) {
		return st.(grantStatementer).GrantStatement(resource, id, session, DefaultTTL)
	}, st.(releaseStatementer).ReleaseStatement()
}

// SweepPlan is the EXPLAIN of one batch of the sweep on PostgreSQL, planned
// under the settings the sweep runs with, in a transaction rolled back.
func SweepPlan(p *Plugin, db *gorm.DB) (plan string, err error) {
	err = db.Transaction(func(tx *gorm.DB) error {
		t, err := p.storeFor(tx)
		if err != nil {
			return err
		}
		if pg, ok := t.Store.(sweepPlanner); ok {
			plan, err = pg.SweepPlan(direct(tx))
		}
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
	if st, ok := b.t.Store.(grantAllSetter); ok {
		st.SetGrantAll(on)
	}
}

// MySQLPlanStep is one line of MariaDB's EXPLAIN: the table it reads, how
// (type) and through which index (key).
type MySQLPlanStep = struct{ Table, Type, Key string }

// MySQLSessionPlans is the EXPLAIN, on MariaDB, of each statement Renew
// and ReleaseAll send for session (the MySQL store's SessionPlans).
func MySQLSessionPlans(p *Plugin, db *gorm.DB, session string) (map[string][]MySQLPlanStep, error) {
	t, err := p.storeFor(db)
	if err != nil {
		return nil, err
	}
	s, ok := t.Store.(sessionPlanner)
	if !ok {
		return nil, fmt.Errorf("not a MariaDB 10.6+ lock store: %T", t.Store)
	}
	return s.SessionPlans(direct(db), session)
}

// SQLiteCachedStatements is the texts the plugin's SQLite store for db
// keeps prepared (the SQLite store's CachedStatements), nil for another
// database's.
func SQLiteCachedStatements(p *Plugin, db *gorm.DB) ([]string, error) {
	t, err := p.storeFor(db)
	if err != nil {
		return nil, err
	}
	if st, ok := t.Store.(statementCache); ok {
		return st.CachedStatements(), nil
	}
	return nil, nil
}

// GuardKeyOf is the guard's key p read for db's database (MySQL/MariaDB):
// what tests that write as the plugin would, by hand, key their marks with.
func GuardKeyOf(p *Plugin, db *gorm.DB) string {
	b, err := p.bindingOf(db)
	if err != nil {
		return ""
	}
	return b.guard.Key()
}

// IdentityStatement is the statement that gives a PostgreSQL transaction
// a writer's identity, signed in the database: its one $1 is the claim
// ("f:" or "s:" and the session).
func IdentityStatement(p *Plugin) string {
	b, _ := p.newBinding("postgres")
	q, _ := b.t.Store.(interface{ IdentityStatement(string) (string, []any) }).IdentityStatement("")
	return q
}

// LockTableOf is p's lock table's name.
func LockTableOf(p *Plugin) string { return p.cfg.Table }

// CheckGuarded is the check every grant makes (coverage.go).
func CheckGuarded(p *Plugin, db *gorm.DB, resource string) error { return p.checkGuarded(db, resource) }

// SetGuardRevision makes p's store for db install and judge the guard as
// revision r would (the PostgreSQL and MySQL stores' SetGuardRevision).
func SetGuardRevision(p *Plugin, db *gorm.DB, r int) {
	t, err := p.storeFor(db)
	if err != nil {
		panic(err)
	}
	if st, ok := t.Store.(revisionSetter); ok {
		st.SetGuardRevision(r)
	}
}

// SessionMark is the number a MySQL statement of session carries, keyed
// with the guard's key: what a test that forges a write computes.
func SessionMark(key, session string, fenced bool) uint64 {
	return lockstore.NewMySQL("", nil).(mysqlIdentifier).SessionMark(key, session, fenced)
}

// MariaDBIdentityPrefix is the SET STATEMENT prefix of a MariaDB write of
// session, keyed with the guard's key: what a test that replays a write
// sends.
func MariaDBIdentityPrefix(key, session string, fenced bool) string {
	return lockstore.NewMySQL("", nil).(mysqlIdentifier).IdentityPrefix(key, session, fenced)
}
