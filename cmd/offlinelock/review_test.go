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
