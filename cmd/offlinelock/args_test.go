package main

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
)

// TestListLimitAtTheLargestInt: list asks for one lock more than --limit to
// tell whether there are more; at the largest int that one more wrapped
// around to a negative limit, and list failed with "limit … is negative".
func TestListLimitAtTheLargestInt(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		table, p := lockTable(t, d)
		l := acquire(t, p, d.db, martin, &customer{ID: 1}, offlinelock.Write)
		l.Token = ""
		r := cmd("list", "--dsn", d.dsn, "--table", table, "--limit", strconv.Itoa(int(^uint(0)>>1)))
		require.Equal(t, exitOK, r.code, r.stderr)
		assertTable(t, r.stdout, l)
		assert.Empty(t, r.stderr)
	})
}

// TestStrayArgumentsAreShownWithoutPasswords: a DSN given without --dsn
// ("offlinelock list postgres://…") is a stray argument, which the usage
// error quotes: never with its password.
func TestStrayArgumentsAreShownWithoutPasswords(t *testing.T) {
	for _, args := range [][]string{
		{"list", "postgres://app:s3cret@db/app"},
		{"stats", "mysql://app:s3cret@db/app"},
		{"sweep", "app:s3cret@tcp(db:3306)/app"},
		{"list", "host=db user=app password=s3cret dbname=app"},
		{"list", "--user", "martin", "postgresql://app:s3cret@db:5432/app?sslmode=disable"},
	} {
		r := cmd(args...)
		assert.Equal(t, exitUsage, r.code, "%q", args)
		assert.Contains(t, r.stderr, "takes no arguments", "%q", args)
		assert.NotContains(t, r.stderr, "s3cret", "%q", args)
	}
	r := cmd("list", "orders")
	assert.Contains(t, r.stderr, `got ["orders"]`, "other arguments are still quoted")
}
