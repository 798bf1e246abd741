package lockstore

// GuardTraits is how a database's guard meets the plugin's identity and
// the application's transactions: the plugin asks these instead of the
// database's name.
type GuardTraits interface {
	// KeyedMark: the plugin keys the identity's mark itself with the
	// guard's key (GuardKey), read once per database (MySQL/MariaDB);
	// false where the database signs the claim in the statement
	// (PostgreSQL).
	KeyedMark() bool
	// InstallWaitsForTransactions: the guard's DDL waits for the metadata
	// locks of open transactions, and a metadata-lock deadlock fails the
	// transaction's statement (MySQL/MariaDB). Such a database is not
	// guarded on a statement's way beside a caller's transaction, and is
	// guarded at once after DDL outside one, when nobody holds the table.
	InstallWaitsForTransactions() bool
	// InstallEndsWithContext: an install cancelled by its context drops
	// the lock it queued for, which the table's readers wait behind
	// (PostgreSQL), so a background retry bounds each try by a deadline;
	// MySQL/MariaDB go on waiting after the client gave up, bounded by
	// the install's own lock_wait_timeout.
	InstallEndsWithContext() bool
	// InstallOnStatementsWay: the guard may be installed on the way of a
	// statement that finds its table unguarded. Not on Galera, where
	// CREATE TRIGGER is DDL ordered cluster-wide and installs raced from
	// several nodes under load stalled every writer (docs/scaling.md).
	InstallOnStatementsWay() bool
}

// KeyedMark: PostgreSQL signs the claim in the statement.
func (*postgresStore) KeyedMark() bool { return false }

// InstallWaitsForTransactions: PostgreSQL's DDL queues for its lock
// transactionally, beside the caller's.
func (*postgresStore) InstallWaitsForTransactions() bool { return false }

// InstallEndsWithContext: a cancelled statement drops its queued lock.
func (*postgresStore) InstallEndsWithContext() bool { return true }

// InstallOnStatementsWay: always on PostgreSQL.
func (*postgresStore) InstallOnStatementsWay() bool { return true }

// KeyedMark: the mark in SET STATEMENT is keyed by the plugin.
func (*mysqlStore) KeyedMark() bool { return true }

// InstallWaitsForTransactions: CREATE TRIGGER waits for metadata locks.
func (*mysqlStore) InstallWaitsForTransactions() bool { return true }

// InstallEndsWithContext: the server goes on waiting for the metadata
// lock after the client gave up.
func (*mysqlStore) InstallEndsWithContext() bool { return false }

// InstallOnStatementsWay: not on Galera (GuardTraits).
func (s *mysqlStore) InstallOnStatementsWay() bool { return !s.galera.Load() }
