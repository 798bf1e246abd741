package main

import (
	"net/url"
	"os"
	"strings"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
)

// TestReadOnlyRoleListsButCannotChange: list, show and stats work for a
// database role that may only SELECT the lock table (a monitoring job);
// release and sweep, which change rows, are refused by the database, and
// change nothing. SQLite has no roles.
func TestReadOnlyRoleListsButCannotChange(t *testing.T) {
	for _, name := range []string{"postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			d := openDB(t, name)
			table, p := lockTable(t, d)
			held := acquire(t, p, d.db, martin, &customer{ID: 1}, offlinelock.Write)
			held.Token = ""
			expire(t, d, table, "customers", "1")
			held.ExpiresAt = held.AcquiredAt
			held2 := acquire(t, p, d.db, david, &customer{ID: 2}, offlinelock.Write)
			held2.Token = ""
			ro := readOnlyDSN(t, d, table)
			full := []string{"--dsn", d.dsn, "--table", table}
			for _, args := range [][]string{{"list"}, {"list", "--expired", "--json"}, {"show", "customers", "2"}, {"stats", "--json"}} {
				want := cmd(append(args, full...)...)
				require.Equal(t, exitOK, want.code, want.stderr)
				assert.Equal(t, want, cmd(append(args, "--dsn", ro, "--table", table)...), "%q", args)
			}
			for _, args := range [][]string{{"sweep"}, {"release", "customers", "2", "--reason", "r", "--operator", "o"}} {
				r := cmd(append(args, "--dsn", ro, "--table", table)...)
				assert.Equal(t, exitFailed, r.code, "%q: %s", args, r.stderr)
				assert.Regexp(t, `(?i)denied`, r.stderr, "%q", args)
			}
			expired, err := p.List(d.db, offlinelock.Filter{Expired: true})
			require.NoError(t, err)
			assert.Equal(t, []offlinelock.Lock{held}, expired, "not swept")
			live, err := p.List(d.db, offlinelock.Filter{})
			require.NoError(t, err)
			assert.Equal(t, []offlinelock.Lock{held2}, live, "not released")
		})
	}
}

// readOnlyDSN creates a role that may only SELECT table, dropped when the
// test ends, and returns d's DSN with it.
func readOnlyDSN(t *testing.T, d testDB, table string) string {
	t.Helper()
	role, pw := "ro_"+strings.TrimPrefix(table, "cli_"), "pw_"+table
	if d.name == "mysql" {
		if err := d.db.Exec("CREATE USER '" + role + "'@'%' IDENTIFIED BY '" + pw + "'").Error; err != nil {
			notHere(t, "the test's MySQL user may not create users: %v", err)
		}
		t.Cleanup(func() { d.db.Exec("DROP USER '" + role + "'@'%'") })
		require.NoError(t, d.db.Exec("GRANT SELECT ON `"+table+"` TO '"+role+"'@'%'").Error)
		cfg, err := mysqldriver.ParseDSN(d.dsn)
		require.NoError(t, err)
		cfg.User, cfg.Passwd = role, pw
		return cfg.FormatDSN()
	}
	if err := d.db.Exec(`CREATE ROLE "` + role + `" LOGIN PASSWORD '` + pw + `'`).Error; err != nil {
		notHere(t, "the test's PostgreSQL role may not create roles: %v", err)
	}
	t.Cleanup(func() {
		d.db.Exec(`DROP OWNED BY "` + role + `"`)
		d.db.Exec(`DROP ROLE "` + role + `"`)
	})
	require.NoError(t, d.db.Exec(`GRANT SELECT ON "`+table+`" TO "`+role+`"`).Error)
	if !strings.Contains(d.dsn, "://") {
		return d.dsn + " user=" + role + " password=" + pw // the last value of a key wins
	}
	u, err := url.Parse(d.dsn)
	require.NoError(t, err)
	u.User = url.UserPassword(role, pw)
	return u.String()
}

// notHere skips a test this database's user cannot run, and fails it under
// CI=true, where every database test must run.
func notHere(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}
