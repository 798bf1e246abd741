package offlinelock

import "net/url"

// SQLiteDSN returns a DSN for gorm.io/driver/sqlite (mattn/go-sqlite3) that
// the lock table needs under concurrency: WAL, so readers never block the
// writer; a busy timeout, so a writer waits its turn instead of failing with
// "database is locked"; and immediate transactions, so a transaction takes
// the write lock when it begins rather than failing to upgrade later.
func SQLiteDSN(path string) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_journal_mode=WAL&_busy_timeout=10000&_txlock=immediate&_foreign_keys=1"
}
