package lockstore

import (
	"context"
	"database/sql"
	"errors"
)

// poolerProbe is run on two connections of the pool held at once. Without
// a pooler they are two server sessions, with two backend pids; behind
// PgBouncer in transaction mode the second usually gets the session the
// first has just given back, where pgx's statement cache has already
// prepared the probe under its name.
const poolerProbe = `SELECT pg_backend_pid() /* offlinelock: pooler probe */`

// ServerSessions asks PostgreSQL, on two connections of pool held at once,
// which server session each is on: equal ids, or ErrPreparedTwice, mean a
// transaction pooler hands one session to several clients.
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
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) && coded.SQLState() == "42P05" {
		return a, b, ErrPreparedTwice
	}
	return a, b, err
}

// ErrPreparedTwice is PostgreSQL's 42P05 on ServerSessions' probe: the
// second connection met the session where the first had prepared it.
var ErrPreparedTwice = errors.New("prepared statement already exists in this server session (42P05)")
