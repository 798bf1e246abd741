package plugin_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// EgDoc is a record whose generations the test follows.
type EgDoc struct {
	ID uint `gorm:"primaryKey" lock:"exclusive_write"`
}

// TestGenerationsWithoutTheWALTimeline: where the application's role may
// not read the WAL timeline (a managed service's restriction, made here by
// revoking the WAL functions in a database of the test's own), db.Use
// starts and generations come from the epoch kept in the catalog (issue
// 48). A database whose lock table the owner made on the timeline switches
// to the epoch, and the owner's node, which reads the timeline, follows;
// generations only grow. A failover is then played on the one server: the
// epoch row is made to name another server incarnation (the old primary)
// and the sequence is set back (the values the standby never received):
// until a node moves the epoch the grants take the clock, and after it
// (db.Use here, or any node's catalog refresh) the sequence's lost values
// never come back: every generation is larger than every one before.
func TestGenerationsWithoutTheWALTimeline(t *testing.T) {
	admin := openPostgres(t)
	name := "ol_h3_wal_" + randomHex(4)
	role := "ol_h3_role_" + randomHex(4)
	require.NoError(t, admin.Exec(`CREATE DATABASE `+name).Error)
	t.Cleanup(func() {
		admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`)
		admin.Exec(`DROP ROLE IF EXISTS ` + role) // after its database: its grants there go with it
	})
	dsn := dsnOf("postgres") + " dbname=" + name // a later keyword wins
	owner := egOpen(t, dsn)
	for _, q := range []string{
		`REVOKE EXECUTE ON FUNCTION pg_catalog.pg_walfile_name(pg_lsn) FROM PUBLIC`,
		`REVOKE EXECUTE ON FUNCTION pg_catalog.pg_current_wal_lsn() FROM PUBLIC`,
		`CREATE ROLE ` + role + ` LOGIN`,
		`GRANT ALL ON SCHEMA public TO ` + role,
	} {
		require.NoError(t, owner.Exec(q).Error, q)
	}
	const table = "ol_h3_gens"
	cfg := offlinelock.Config{Table: table, DisableGuard: true, Models: []any{&EgDoc{}}}
	ownerP := offlinelock.New(cfg)
	require.NoError(t, owner.Use(ownerP), "the owner reads the timeline")
	require.NoError(t, owner.AutoMigrate(&EgDoc{}))
	for _, q := range []string{`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ` + role, `GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ` + role} {
		require.NoError(t, owner.Exec(q).Error, q)
	}
	var gens []int64
	grant := func(db *gorm.DB, p *offlinelock.Plugin, id uint) int64 {
		t.Helper()
		l, err := p.Acquire(as(db, martin), &EgDoc{ID: id}, offlinelock.Write)
		require.NoError(t, err)
		require.NoError(t, p.Release(as(db, martin), &EgDoc{ID: id}))
		if len(gens) > 0 {
			require.Greater(t, l.Generation, gens[len(gens)-1], "generations only grow: %v", gens)
		}
		gens = append(gens, l.Generation)
		return l.Generation
	}
	require.Less(t, grant(owner, ownerP, 1), int64(1)<<41, "on the timeline: timeline 1 above 2^40")
	require.Empty(t, egEpoch(t, owner, table), "no epoch while every node reads the timeline")

	app := egOpen(t, dsn+" user="+role)
	walErr := app.Exec(`SELECT pg_walfile_name(pg_current_wal_lsn())`).Error
	require.ErrorContains(t, walErr, "permission denied", "the application's role cannot read the timeline")
	appP := offlinelock.New(cfg)
	require.NoError(t, app.Use(appP), "db.Use starts without the timeline")
	server, _ := egEpochParts(t, owner, table)
	require.Equal(t, egServer(t, owner), server, "the epoch names this server incarnation")
	clock := egClock(t, owner)
	require.Greater(t, grant(app, appP, 1), clock-1_000_000, "the epoch's values are the clock in microseconds, near enough")
	grant(app, appP, 2)
	grant(owner, ownerP, 1) // the owner's node follows the epoch
	grant(app, appP, 1)

	// The failover: the row names the old primary, and the sequence lost
	// its last values.
	_, offset := egEpochParts(t, owner, table)
	require.NoError(t, owner.Exec(`UPDATE `+table+`_tables SET spec = '1.5 ' || ? WHERE name = 'offlinelock:generation epoch'`, strconv.FormatInt(offset, 10)).Error)
	require.NoError(t, owner.Exec(`SELECT setval('`+table+`_generation', 1)`).Error)
	grant(app, appP, 1) // before the epoch moves: the clock
	grant(owner, ownerP, 2)
	app2P := offlinelock.New(cfg)
	require.NoError(t, egOpen(t, dsn+" user="+role).Use(app2P), "a node that starts moves the epoch")
	server, moved := egEpochParts(t, owner, table)
	require.Equal(t, egServer(t, owner), server)
	require.GreaterOrEqual(t, moved, offset, "the offset never goes back")
	for id := uint(1); id <= 3; id++ {
		grant(app, appP, id)
		grant(owner, ownerP, id)
	}
}

func egOpen(t *testing.T, dsn string) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(dialectorOf("postgres", dsn), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	t.Cleanup(func() { d, _ := db.DB(); d.Close() })
	return db
}

// egEpoch is the catalog's epoch row ("" where there is none).
func egEpoch(t *testing.T, db *gorm.DB, table string) string {
	t.Helper()
	var spec []string
	require.NoError(t, db.Raw(`SELECT spec FROM `+table+`_tables WHERE name = 'offlinelock:generation epoch'`).Scan(&spec).Error)
	if len(spec) == 0 {
		return ""
	}
	return spec[0]
}

// egEpochParts is the epoch row's server incarnation and offset.
func egEpochParts(t *testing.T, db *gorm.DB, table string) (string, int64) {
	t.Helper()
	var row struct {
		Server string
		Offset int64
	}
	require.NoError(t, db.Raw(`SELECT split_part(spec, ' ', 1) AS server, split_part(spec, ' ', 2)::bigint AS "offset" FROM `+table+`_tables WHERE name = 'offlinelock:generation epoch'`).Scan(&row).Error)
	require.NotEmpty(t, row.Server, "the epoch row exists")
	return row.Server, row.Offset
}

func egServer(t *testing.T, db *gorm.DB) string {
	t.Helper()
	var s string
	require.NoError(t, db.Raw(`SELECT extract(epoch FROM pg_postmaster_start_time())::text`).Scan(&s).Error)
	return s
}

func egClock(t *testing.T, db *gorm.DB) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.Raw(`SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint`).Scan(&n).Error)
	return n
}
