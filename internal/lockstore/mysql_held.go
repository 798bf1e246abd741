package lockstore

import (
	"time"

	"gorm.io/gorm/clause"
)

// HeldCondition makes the holder's re-read one statement, a primary-key
// lookup; used only outside transactions (SnapshotReads).
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
