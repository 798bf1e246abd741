package lockstore

import (
	"time"

	"gorm.io/gorm/clause"
)

// HeldCondition lets the holder's re-read be one read-only statement, as
// on the other stores: a point lookup by the primary key's prefix
// (resource, lock_id) and holder, against the database clock.
//
// A plain read inside a REPEATABLE READ transaction sees the transaction's
// snapshot, not the latest committed lock row, so the load uses this only
// outside a transaction (snapshotReads), where each statement reads the
// latest committed rows.
func (s *mysqlStore) HeldCondition(k Key, session string, access Access, margin time.Duration) clause.Expression {
	held := `holder = '' AND access = 'write'`
	if access == Read {
		held = `holder IN ('', session) AND (holder = session OR access = 'write')`
	}
	return clause.Expr{
		SQL: `EXISTS (SELECT 1 FROM ` + s.table + ` WHERE resource = ? AND lock_id = ? AND session = ? AND ` + held +
			` AND expires_at > ` + mysqlClock + ` + INTERVAL ? MICROSECOND)`,
		Vars: []any{k.Resource, k.ID, session, margin.Microseconds()},
	}
}

// snapshotReads: InnoDB's plain reads in a transaction read its snapshot.
