package lockstore

import (
	"context"
	"database/sql"
	"errors"
)

// poolerProbe is run on two connections held at once: behind PgBouncer in
// transaction mode the second gets the first's server session, where pgx
// has prepared it already.
const poolerProbe = `SELECT pg_backend_pid() /* offlinelock: pooler probe */`

// ServerSessions reports the server session of two connections held at
// once: equal ids, or ErrPreparedTwice, mean a transaction pooler.
func ServerSessions(ctx context.Context, pool *sql.DB) (a, b int, err error) {
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
	if sqlState(err) == "42P05" {
		return a, b, ErrPreparedTwice
	}
	return a, b, err
}

// ErrPreparedTwice is 42P05 on ServerSessions' probe.
var ErrPreparedTwice = errors.New("prepared statement already exists in this server session (42P05)")
