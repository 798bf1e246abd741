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

// poolerProbe is run on two connections held at once: behind PgBouncer in
// transaction mode the second gets the first's server session, where pgx
// has prepared it already.
const poolerProbe = `SELECT pg_backend_pid() /* offlinelock: pooler probe */`

// CheckPooler fails with ErrPooler, naming the fix, on PostgreSQL behind a
// transaction pooler whose client prepares named statements (42P05 at
// random). A pool of one, or not a *sql.DB, is not probed.
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
	if sqlState(err) == "42P05" { // the second met the session where the first prepared the probe
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
