package lockstore

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPlanWritesArgumentsAsLiterals: a planned statement's arguments are
// written into its placeholders as the dialect reads them: quotes doubled,
// MySQL's backslashes doubled, PostgreSQL's $n in any order and a text
// array as ARRAY[…]::text[]; a placeholder without an argument, or an
// argument without a literal, is an error, never a statement.
func TestPlanWritesArgumentsAsLiterals(t *testing.T) {
	pg, my := &Plan{}, &Plan{mysql: true}
	for _, tc := range []struct {
		p     *Plan
		query string
		args  []any
		want  string
	}{
		{pg, `INSERT INTO c (name, spec) VALUES ($1, $2)`, []any{"offlinelock:guard key", "it's"}, `INSERT INTO c (name, spec) VALUES ('offlinelock:guard key', 'it''s')`},
		{pg, `SELECT $2, $1, $10`, []any{1, int64(2), 3, 4, 5, 6, 7, 8, 9, "ten"}, `SELECT 2, 1, 'ten'`},
		{pg, `INSERT INTO o SELECT * FROM unnest($1::text[])`, []any{[]string{"a", `b\c`}}, `INSERT INTO o SELECT * FROM unnest(ARRAY['a', 'b\c']::text[]::text[])`},
		{pg, `CREATE FUNCTION f() AS $offlinelock$ … $offlinelock$`, nil, `CREATE FUNCTION f() AS $offlinelock$ … $offlinelock$`},
		{my, `INSERT IGNORE INTO c (name, spec) VALUES (?, ?)`, []any{"k", `a\'b`}, `INSERT IGNORE INTO c (name, spec) VALUES ('k', 'a\\''b')`},
	} {
		got, err := tc.p.inline(tc.query, tc.args)
		require.NoError(t, err, tc.query)
		require.Equal(t, tc.want, got)
	}
	_, err := my.inline(`SELECT ?, ?`, []any{"one"})
	require.ErrorContains(t, err, "more placeholders than arguments")
	_, err = pg.inline(`SELECT $2`, []any{"one"})
	require.ErrorContains(t, err, "placeholder $2 without an argument")
	_, err = pg.inline(`SELECT $1`, []any{3.5})
	require.ErrorContains(t, err, "no literal for a float64")
}

// TestPlannedConnRunsReadsAndSettingsOnly: what a planning Conn runs for
// real and what it records.
func TestPlannedConnRunsReadsAndSettingsOnly(t *testing.T) {
	for q, runs := range map[string]bool{
		"SELECT GET_LOCK(?, 5)":                  true,
		"  set local lock_timeout = '1s'":        true,
		"SET SESSION lock_wait_timeout = 1":      true,
		"LOCK TABLE t IN SHARE MODE":             false,
		"CREATE OR REPLACE PROCEDURE p() …":      false,
		"INSERT INTO c (name) VALUES (?)":        false,
		"DO $x$BEGIN NULL; END$x$":               false,
		"SELECTED_NOTHING":                       false,
		"ALTER TABLE t RENAME INDEX a TO b":      false,
		"DROP TRIGGER IF EXISTS x ON t":          false,
		"COMMENT ON FUNCTION f() IS 'x'":         false,
		"REVOKE ALL ON FUNCTION f() FROM PUBLIC": false,
	} {
		require.Equal(t, runs, runsWhenPlanned(q), q)
	}
}
