package offlinelock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"gorm.io/gorm"
)

// ErrPooler reports, from db.Use, a PostgreSQL connection through a
// transaction-pooling proxy (PgBouncer in pool_mode=transaction) that hands
// one server session to several client connections in turn, while the
// client prepares named statements there: pgx's default statement cache
// or GORM's PrepareStmt. Every statement would fail at random with 42P05
// (prepared statement already exists). The message names the fix;
// docs/scaling.md.
var ErrPooler = errors.New("offlinelock: PostgreSQL is reached through a transaction-pooling proxy that cannot keep prepared statements")

// checkPooler fails db.Use on PostgreSQL behind a transaction pooler whose
// client prepares named statements. It takes two connections for a moment;
// a pool of one is not probed.
func checkPooler(db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil || sqlDB.Stats().MaxOpenConnections == 1 {
		return nil // not a *sql.DB (a caller's own ConnPool): nothing to probe
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pa, pb, err := lockstore.ServerSessions(ctx, sqlDB)
	if errors.Is(err, lockstore.ErrPreparedTwice) {
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
