package lockstore

import "errors"

// IsLockTimeout says whether err is a wait for a lock that timed out or
// was chosen to end a deadlock: PostgreSQL 55P03 (lock_timeout) and 40P01,
// MySQL/MariaDB 1205 (innodb_lock_wait_timeout, lock_wait_timeout for a
// metadata lock) and 1213. Another try later may succeed.
func IsLockTimeout(err error) bool {
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		switch coded.SQLState() {
		case "55P03", "40P01":
			return true
		}
	}
	code := mysqlCode(err)
	return code == 1205 || code == 1213
}
