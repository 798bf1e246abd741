package plugin_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
)

// PostgreSQL: an application role that finds the lock table in place but
// lacks USAGE on the generation sequence is told at db.Use which grant it
// lacks, not by a bare "permission denied" at the first Acquire (issue 48).
func TestUseNamesAMissingSequenceGrant(t *testing.T) {
	db, p := gdSetup(t, database{"postgres", openPostgres}, offlinelock.Config{})
	lt := lockTableOf(p)
	role, app := pgRole(t, db, `GRANT USAGE ON SCHEMA public TO %s`, `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO %s`)
	err := app.Use(offlinelock.New(offlinelock.Config{Table: lt}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `GRANT USAGE ON SEQUENCE "`+lt+`_generation" TO <this role>`)
	require.NoError(t, db.Exec(`GRANT USAGE ON SEQUENCE "`+lt+`_generation" TO `+role).Error)
	p2 := offlinelock.New(offlinelock.Config{Table: lt, Models: []any{&GdCustomer{}}})
	require.NoError(t, app.Use(p2))
	_, err = p2.Acquire(as(app, david), &GdCustomer{ID: 130}, offlinelock.Write)
	require.NoError(t, err)
}
