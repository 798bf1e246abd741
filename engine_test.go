package offlinelock_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// PostgreSQL: where the application's role may not read the WAL timeline
// (a managed service's restriction, made here by revoking the functions
// in a database of the test's own), db.Use says so and what to grant,
// having created nothing; granted, it starts (issue 48).
func TestUseNamesAnUnreadableWALTimeline(t *testing.T) {
	admin := openPostgres(t)
	name := "ol_wal_" + randomHex(4)
	role := "ol_wal_role_" + randomHex(4)
	require.NoError(t, admin.Exec(`CREATE DATABASE `+name).Error)
	t.Cleanup(func() {
		admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`)
		admin.Exec(`DROP ROLE IF EXISTS ` + role) // after its database: its grants there go with it
	})
	dsn := dsnOf("postgres") + " dbname=" + name // a later keyword wins
	owner, err := gorm.Open(dialectorOf("postgres", dsn), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	t.Cleanup(func() { d, _ := owner.DB(); d.Close() })
	require.NoError(t, owner.Exec(`REVOKE EXECUTE ON FUNCTION pg_catalog.pg_walfile_name(pg_lsn) FROM PUBLIC`).Error)
	require.NoError(t, owner.Exec(`CREATE ROLE `+role+` LOGIN`).Error)
	require.NoError(t, owner.Exec(`GRANT ALL ON SCHEMA public TO `+role).Error)
	app, err := gorm.Open(dialectorOf("postgres", dsn+" user="+role), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	t.Cleanup(func() { d, _ := app.DB(); d.Close() })
	p := offlinelock.New(offlinelock.Config{Table: "ol_wal_locks"})
	err = app.Use(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot read the server's WAL timeline")
	assert.Contains(t, err.Error(), "GRANT EXECUTE ON FUNCTION pg_catalog.pg_current_wal_lsn(), pg_catalog.pg_walfile_name(pg_lsn)")
	var n int
	require.NoError(t, owner.Raw(`SELECT count(*) FROM pg_class WHERE relname LIKE 'ol_wal_locks%'`).Scan(&n).Error)
	assert.Zero(t, n, "nothing was created")
	require.NoError(t, owner.Exec(`GRANT EXECUTE ON FUNCTION pg_catalog.pg_walfile_name(pg_lsn) TO `+role).Error)
	require.NoError(t, app.Use(offlinelock.New(offlinelock.Config{Table: "ol_wal_locks"})))
}

// PostgreSQL: an application role that finds the lock table in place but
// lacks USAGE on the generation sequence is told at db.Use which grant it
// lacks, not by a bare "permission denied" at the first Acquire (issue 48).
func TestUseNamesAMissingSequenceGrant(t *testing.T) {
	db, p := gdSetup(t, database{"postgres", openPostgres}, offlinelock.Config{})
	lt := p.TableName()
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
