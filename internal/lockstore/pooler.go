package lockstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// ErrPooler is the root's ErrPooler: PostgreSQL reached through a
// transaction-pooling proxy while the client prepares named statements.
var ErrPooler = errors.New("offlinelock: PostgreSQL is reached through a transaction-pooling proxy that cannot keep prepared statements")

// poolerProbe is run on two connections of the pool held at once. Without
// a pooler they are two server sessions, with two backend pids; behind
// PgBouncer in transaction mode the second usually gets the session the
// first has just given back, where pgx's statement cache has already
// prepared the probe under its name.
const poolerProbe = `SELECT pg_backend_pid() /* offlinelock: pooler probe */`

// CheckPooler fails, with ErrPooler and the fix, on PostgreSQL behind a
// transaction pooler whose client prepares named statements: every
// statement would fail at random with 42P05 (prepared statement already
// exists). It asks, on two connections of the pool held at once, which
// server session each is on; a pool of one, or one that is not a *sql.DB
// (a caller's own ConnPool), is not probed.
func CheckPooler(db *gorm.DB) error {
	pool, err := db.DB()
	if err != nil || pool.Stats().MaxOpenConnections == 1 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ca, err := pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer ca.Close()
	cb, err := pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer cb.Close()
	var a, b int
	if err := ca.QueryRowContext(ctx, poolerProbe).Scan(&a); err != nil {
		return err
	}
	err = cb.QueryRowContext(ctx, poolerProbe).Scan(&b)
	if coded := (interface{ SQLState() string })(nil); errors.As(err, &coded) && coded.SQLState() == "42P05" {
		// the second connection met the session where the first had prepared the probe
		return fmt.Errorf("%w: pgx's statement cache prepares named statements, and two connections met the same server session (42P05); open GORM with postgres.New(postgres.Config{DSN: dsn, PreferSimpleProtocol: true}), or add default_query_exec_mode=exec to the DSN", ErrPooler)
	}
	if err != nil {
		return err
	}
	if a == b && db.Config.PrepareStmt {
		return fmt.Errorf("%w: two connections share server session %d, and gorm.Config.PrepareStmt prepares named statements there; turn PrepareStmt off", ErrPooler, a)
	}
	return nil
}
