package offlinelock

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// dialect holds what differs between the databases the lock table lives in.
// Everything else in the lock table is plain SQL shared by both.
type dialect struct {
	name string
	// now is the database clock at the moment of the statement, not at the
	// start of the transaction: app nodes disagree, and a transaction may
	// have started long ago.
	now string
	// greatest picks the later of two times.
	greatest string
	// dollar says placeholders are $1, $2 … instead of ?.
	dollar bool
	// ddl creates the lock table, its indexes, its generation counter and
	// the catalog of lockable tables.
	ddl func(table, seq, catalog string) []string
	// nextGeneration returns the next value of the generation counter.
	nextGeneration func(seq string) string
}

// sqliteTime is how times are stored in SQLite: fixed-width UTC text that
// sorts and compares as time does, at the millisecond SQLite's clock offers.
const sqliteTime = "2006-01-02 15:04:05.000"

var postgresDialect = dialect{
	name:     "postgres",
	now:      "clock_timestamp()",
	greatest: "GREATEST",
	dollar:   true,
	ddl: func(t, seq, catalog string) []string {
		return []string{
			`CREATE TABLE IF NOT EXISTS ` + catalog + ` (name varchar(128) COLLATE "C" PRIMARY KEY, spec text NOT NULL)`,
			`CREATE TABLE IF NOT EXISTS ` + t + ` (
	resource    varchar(128) COLLATE "C" NOT NULL,
	lock_id     varchar(255) COLLATE "C" NOT NULL,
	holder      varchar(255) COLLATE "C" NOT NULL,
	access      varchar(5)   NOT NULL,
	session     varchar(255) COLLATE "C" NOT NULL,
	user_name   varchar(255) NOT NULL,
	token       varchar(64)  NOT NULL,
	generation  bigint       NOT NULL,
	acquired_at timestamptz  NOT NULL,
	expires_at  timestamptz  NOT NULL,
	PRIMARY KEY (resource, lock_id, holder))`,
			`CREATE INDEX IF NOT EXISTS ` + indexName(t, "session") + ` ON ` + t + ` (session)`,
			`CREATE INDEX IF NOT EXISTS ` + indexName(t, "expires") + ` ON ` + t + ` (expires_at)`,
			`CREATE INDEX IF NOT EXISTS ` + indexName(t, "token") + ` ON ` + t + ` (token)`,
			`CREATE SEQUENCE IF NOT EXISTS ` + seq + ` AS bigint NO CYCLE`,
		}
	},
	nextGeneration: func(seq string) string { return `SELECT nextval('` + strings.Trim(seq, `"`) + `')` },
}

var sqliteDialect = dialect{
	name:     "sqlite",
	now:      `strftime('%Y-%m-%d %H:%M:%f','now')`,
	greatest: "MAX",
	ddl: func(t, seq, catalog string) []string {
		return []string{
			`CREATE TABLE IF NOT EXISTS ` + catalog + ` (name TEXT PRIMARY KEY, spec TEXT NOT NULL)`,
			`CREATE TABLE IF NOT EXISTS ` + t + ` (
	resource    TEXT    NOT NULL,
	lock_id     TEXT    NOT NULL,
	holder      TEXT    NOT NULL,
	access      TEXT    NOT NULL,
	session     TEXT    NOT NULL,
	user_name   TEXT    NOT NULL,
	token       TEXT    NOT NULL,
	generation  INTEGER NOT NULL,
	acquired_at TEXT    NOT NULL,
	expires_at  TEXT    NOT NULL,
	PRIMARY KEY (resource, lock_id, holder))`,
			`CREATE INDEX IF NOT EXISTS ` + indexName(t, "session") + ` ON ` + t + ` (session)`,
			`CREATE INDEX IF NOT EXISTS ` + indexName(t, "expires") + ` ON ` + t + ` (expires_at)`,
			`CREATE INDEX IF NOT EXISTS ` + indexName(t, "token") + ` ON ` + t + ` (token)`,
			`CREATE TABLE IF NOT EXISTS ` + seq + ` (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL)`,
			`INSERT OR IGNORE INTO ` + seq + ` (id, n) VALUES (1, 0)`,
		}
	},
	nextGeneration: func(seq string) string { return `UPDATE ` + seq + ` SET n = n + 1 WHERE id = 1 RETURNING n` },
}

func dialectFor(name string) (*dialect, error) {
	switch name {
	case "postgres":
		return &postgresDialect, nil
	case "sqlite", "sqlite3":
		return &sqliteDialect, nil
	}
	return nil, fmt.Errorf("offlinelock: database %q is not supported (PostgreSQL and SQLite are)", name)
}

func indexName(quotedTable, suffix string) string {
	return `"` + strings.Trim(quotedTable, `"`) + "_" + suffix + `"`
}

// bind rewrites ? placeholders for databases that number them. The lock
// table's SQL never contains a literal question mark.
func (d *dialect) bind(query string) string {
	if !d.dollar {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// timeArg is how a time is passed to the database.
func (d *dialect) timeArg(t time.Time) any {
	if d.dollar {
		return t.UTC()
	}
	return t.UTC().Format(sqliteTime)
}

// scanTime reads a time the database returned.
func scanTime(v any) (time.Time, error) {
	switch x := v.(type) {
	case time.Time:
		return x.UTC(), nil
	case string:
		return parseSQLiteTime(x)
	case []byte:
		return parseSQLiteTime(string(x))
	}
	return time.Time{}, fmt.Errorf("offlinelock: unexpected time value %T", v)
}

func parseSQLiteTime(s string) (time.Time, error) {
	t, err := time.ParseInLocation(sqliteTime, s, time.UTC)
	if err != nil {
		return time.Time{}, fmt.Errorf("offlinelock: bad time %q in lock table: %w", s, err)
	}
	return t, nil
}
