package lockstore

// GuardTraits is how a database's guard meets the plugin's identity and
// transactions, asked instead of the database's name.
type GuardTraits interface {
	// KeyedMark: the plugin keys the mark with GuardKey itself (MySQL).
	KeyedMark() bool
	// InstallWaitsForTransactions: the guard's DDL waits for open transactions'
	// metadata locks (MySQL), so it is not installed beside a caller's one.
	InstallWaitsForTransactions() bool
	// InstallEndsWithContext: a cancelled install drops its queued lock
	// (PostgreSQL), so background retries take deadlines.
	InstallEndsWithContext() bool
	// InstallOnStatementsWay: a statement may install a missing guard; not on
	// Galera, where cluster-wide DDL stalled writers (docs/scaling.md).
	InstallOnStatementsWay() bool
}

// KeyedMark: PostgreSQL signs the claim in the statement.
func (*postgresStore) KeyedMark() bool { return false }

// InstallWaitsForTransactions: PostgreSQL's DDL queues transactionally.
func (*postgresStore) InstallWaitsForTransactions() bool { return false }

// InstallEndsWithContext: a cancelled statement drops its queued lock.
func (*postgresStore) InstallEndsWithContext() bool { return true }

// InstallOnStatementsWay: always on PostgreSQL.
func (*postgresStore) InstallOnStatementsWay() bool { return true }

// KeyedMark: the mark in SET STATEMENT is keyed by the plugin.
func (*mysqlStore) KeyedMark() bool { return true }

// InstallWaitsForTransactions: CREATE TRIGGER waits for metadata locks.
func (*mysqlStore) InstallWaitsForTransactions() bool { return true }

// InstallEndsWithContext: the server waits on after the client gives up.
func (*mysqlStore) InstallEndsWithContext() bool { return false }

// InstallOnStatementsWay: not on Galera (GuardTraits).
func (s *mysqlStore) InstallOnStatementsWay() bool { return !s.galera.Load() }
