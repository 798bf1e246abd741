package lockstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// ErrPooler reports PostgreSQL behind a transaction pooler that cannot
// keep the client's prepared statements (the root's ErrPooler).
var ErrPooler = errors.New("offlinelock: PostgreSQL is reached through a transaction-pooling proxy that cannot keep prepared statements")

// CheckPooler fails, with ErrPooler naming the fix, a store on PostgreSQL
// behind a transaction pooler whose client prepares named statements; the
// other databases have no such pooler. It takes two connections of db's
// pool for a moment; a pool of one is not probed.
func CheckPooler(s Store, db *gorm.DB) error {
	if _, ok := s.(*postgresStore); !ok {
		return nil
	}
	sqlDB, err := db.DB()
	if err != nil || sqlDB.Stats().MaxOpenConnections == 1 {
		return nil // not a *sql.DB (a caller's own ConnPool): nothing to probe
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pa, pb, err := serverSessions(ctx, sqlDB)
	if errors.Is(err, errPreparedTwice) {
		return fmt.Errorf("%w: pgx's statement cache prepares named statements, and two connections met the same server session (42P05); open GORM with postgres.New(postgres.Config{DSN: dsn, PreferSimpleProtocol: true}), or add default_query_exec_mode=exec to the DSN", ErrPooler)
	}
	if err != nil {
		return err
	}
	if pa == pb && db.Config.PrepareStmt {
		return fmt.Errorf("%w: two connections share server session %d, and gorm.Config.PrepareStmt prepares named statements there; turn PrepareStmt off", ErrPooler, pa)
	}
	return nil
}

// poolerProbe runs on two connections held at once: behind a transaction
// pooler they share a backend, where pgx's cache has prepared it already.
const poolerProbe = `SELECT pg_backend_pid() /* offlinelock: pooler probe */`

// serverSessions asks PostgreSQL, on two connections of pool held at once,
// which server session each is on: equal ids, or errPreparedTwice, mean a
// transaction pooler hands one session to several clients.
func serverSessions(ctx context.Context, pool *sql.DB) (a, b int, err error) {
	ca, err := pool.Conn(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer ca.Close()
	cb, err := pool.Conn(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer cb.Close()
	if err := ca.QueryRowContext(ctx, poolerProbe).Scan(&a); err != nil {
		return 0, 0, err
	}
	err = cb.QueryRowContext(ctx, poolerProbe).Scan(&b)
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) && coded.SQLState() == "42P05" {
		return a, b, errPreparedTwice
	}
	return a, b, err
}

// errPreparedTwice is PostgreSQL's 42P05 on serverSessions' probe: the
// second connection met the session where the first had prepared it.
var errPreparedTwice = errors.New("prepared statement already exists in this server session (42P05)")
