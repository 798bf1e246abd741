package lockstore

import (
	"errors"
)

// What the plugin needs of the store besides the Store interface: the
// spelling of tokens and keys it shares with the lock table, and the
// reading of database errors, so that no driver's error type is needed
// outside this package.

// BatchSize bounds the keys or rows one statement carries: a load of many
// rows locks them in a number of statements that grows with
// rows/BatchSize, not with rows.
const BatchSize = batchSize

// SortKeys sorts keys in place in the one order every statement takes key
// rows in, (resource, lock_id) byte order, and returns them.
func SortKeys(keys []Key) []Key { return sortKeys(keys) }

// NewToken is a new lock token: 128 bits from crypto/rand, in hex.
func NewToken() (string, error) { return newToken() }

// TokenHash is the hash of token the lock table keeps instead of it.
func TokenHash(token string) string { return tokenHash(token) }

// WellFormedToken says whether token is spelt as NewToken spells tokens.
func WellFormedToken(token string) bool { return len(token) == tokenLen && isHex(token) }

// GuardVersion hashes generated SQL: a changed plugin or catalog changes it.
func GuardVersion(sql ...string) string { return guardVersion(sql...) }

// IsServerError says whether err is the database server's own answer
// (an error it raised with a code), not a failure to reach it.
func IsServerError(err error) bool {
	var coded interface{ SQLState() string }
	return errors.As(err, &coded) || mysqlCode(err) != 0
}

// IsMissingTable says whether err reports a table that does not exist.
func IsMissingTable(err error) bool {
	var coded interface{ SQLState() string }
	return errors.As(err, &coded) && coded.SQLState() == "42P01" || mysqlCode(err) == 1146
}

// IsDeadlock says whether err is MySQL's or MariaDB's 1213: InnoDB chose
// the statement's transaction as a deadlock's victim, or Galera refused it
// at COMMIT, and rolled the whole transaction back.
func IsDeadlock(err error) bool { return mysqlCode(err) == 1213 }

// IsGalera says whether s is on a node of a Galera cluster with
// replication on (detected by Migrate).
func IsGalera(s Store) bool {
	my, ok := s.(*mysqlStore)
	return ok && my.galera.Load()
}

// IsMariaDB says whether s is on MariaDB rather than MySQL (detected by
// Migrate): MariaDB takes SET STATEMENT.
func IsMariaDB(s Store) bool {
	my, ok := s.(*mysqlStore)
	return ok && my.mariadb.Load()
}
