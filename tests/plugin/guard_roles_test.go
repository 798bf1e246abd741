package plugin_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// The guard holds against an ordinary role: its functions run with their
// owner's rights and read only names they fixed at install (issue 33).

// GdSub is a member two levels down: its root is its line's order.
type GdSub = testkit.GdSub

// pgRole creates a login role of a unique name with the grants given,
// dropped after the test, and opens GORM as it (testkit.PGRole).
func pgRole(t testing.TB, db *gorm.DB, grants ...string) (string, *gorm.DB) {
	return testkit.PGRole(t, db, grants...)
}

// gdSubSetup is gdSetup with GdSub in the catalog, on PostgreSQL
// (testkit.GdSubSetup).
func gdSubSetup(t *testing.T) (*gorm.DB, *offlinelock.Plugin, string) {
	return testkit.GdSubSetup(t, openPostgres(t))
}

// TestGuardHoldsAgainstAnOrdinaryRole: a role with DML on the business
// tables and nothing on the lock table writes free records, is refused
// held ones, cannot touch the lock table, and cannot change what the
// guard sees with its own functions, search_path or temporary tables.
func TestGuardHoldsAgainstAnOrdinaryRole(t *testing.T) {
	db, _, table := gdSubSetup(t)
	role, w := pgRole(t, db, append(testkit.PGWriterGrants, `CREATE SCHEMA ol_evil_%s AUTHORIZATION %s`, `GRANT TEMPORARY ON DATABASE `+currentDB(t, db)+` TO %s`)...)
	locks := func() []string {
		var rows []string
		require.NoError(t, db.Raw(`SELECT resource || ' ' || lock_id || ' ' || session || ' ' || expires_at::text FROM `+table+` ORDER BY 1`).Scan(&rows).Error)
		return rows
	}
	before := locks()

	require.NoError(t, w.Exec(`UPDATE gd_customers SET credit = 1 WHERE id = 130`).Error, "a free record")
	require.NoError(t, w.Exec(`UPDATE gd_subs SET note = 'x' WHERE id = 2`).Error, "a free member")
	err := w.Exec(`SELECT count(*) FROM ` + table).Error
	require.ErrorContains(t, err, "42501", "the lock table is closed to it")

	attacks := []struct {
		name, setup string
	}{
		{"plain", ``},
		{"its own to_regclass, clock_timestamp and current_setting first on its path", `
			CREATE FUNCTION ol_evil_` + role + `.to_regclass(text) RETURNS regclass LANGUAGE sql AS 'SELECT NULL::regclass';
			CREATE FUNCTION ol_evil_` + role + `.clock_timestamp() RETURNS timestamptz LANGUAGE sql AS $$SELECT 'infinity'::timestamptz$$;
			CREATE FUNCTION ol_evil_` + role + `.current_setting(text, boolean) RETURNS text LANGUAGE sql AS $$SELECT 's:M1'$$;
			SET search_path = ol_evil_` + role + `, pg_catalog, public`},
		{"a temporary table of a parent's name", `
			CREATE TEMP TABLE gd_lines (id bigint, gd_order_id bigint, qty bigint);
			INSERT INTO pg_temp.gd_lines VALUES (1, 2, 0)`},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			if a.setup != "" {
				require.NoError(t, w.Exec(a.setup).Error)
				t.Cleanup(func() {
					w.Exec(`RESET search_path; DROP TABLE IF EXISTS pg_temp.gd_lines`)
				})
			}
			for _, held := range []struct{ sql, resource, id string }{
				{`UPDATE public.gd_customers SET credit = 0 WHERE id = 129`, "gd_customers", "129"},
				{`UPDATE public.gd_lines SET qty = 0 WHERE id = 1`, "gd_orders", "1"},
				{`UPDATE public.gd_subs SET note = 'stolen' WHERE id = 1`, "gd_orders", "1"},
				{`DELETE FROM public.gd_subs WHERE id = 1`, "gd_orders", "1"},
			} {
				err := w.Exec(held.sql).Error
				require.True(t, refusedByGuard(err, held.resource, held.id), "%s: want the guard's refusal, got %v", held.sql, err)
			}
			var credit, qty int
			var note string
			require.NoError(t, db.Raw(`SELECT credit FROM gd_customers WHERE id = 129`).Scan(&credit).Error)
			require.NoError(t, db.Raw(`SELECT qty FROM gd_lines WHERE id = 1`).Scan(&qty).Error)
			require.NoError(t, db.Raw(`SELECT note FROM gd_subs WHERE id = 1`).Scan(&note).Error)
			require.Equal(t, []any{100, 1, "held"}, []any{credit, qty, note})
			require.Equal(t, before, locks())
			require.NoError(t, w.Exec(`UPDATE public.gd_customers SET credit = 2 WHERE id = 130`).Error, "a free record still")
		})
	}
}

// TestGuardHolderUnderAnApplicationRole: the plugin run as an application
// role with DML on the business tables and the lock table (no CREATE, no
// ownership): the holder writes, another session is refused by the
// plugin, and a raw write of the held record by it is refused by the guard.
func TestGuardHolderUnderAnApplicationRole(t *testing.T) {
	db, _, table := gdSubSetup(t)
	_, app := pgRole(t, db, append(testkit.PGWriterGrants,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO %s`)...)
	p := offlinelock.New(offlinelock.Config{Table: table, Models: []any{&GdCustomer{}, &GdOrder{}, &GdLine{}, &GdNote{}, &GdSub{}}})
	require.NoError(t, app.Use(p), "the application role's db.Use finds the lock table and the guard in place")
	_, err := p.Acquire(as(app, david), &GdCustomer{ID: 130}, offlinelock.Write)
	require.NoError(t, err)
	require.NoError(t, as(app, david).Model(&GdCustomer{ID: 130}).Update("credit", 7).Error, "the holder writes")
	err = as(app, martin).Model(&GdCustomer{ID: 130}).Update("credit", 8).Error
	require.ErrorIs(t, err, offlinelock.ErrLocked)
	err = app.Exec(`UPDATE gd_customers SET credit = 9 WHERE id = 130`).Error
	require.ErrorIs(t, err, offlinelock.ErrLocked, "a raw write without an owner is refused")
	var credit int
	require.NoError(t, db.Raw(`SELECT credit FROM gd_customers WHERE id = 130`).Scan(&credit).Error)
	require.Equal(t, 7, credit)

	// An operator: the lock table, its catalog and its sequence, nothing
	// of the business tables; it lists and force-releases.
	_, op := pgRole(t, db, `GRANT USAGE ON SCHEMA public TO %s`,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON `+table+`, `+table+`_tables TO %s`, `GRANT USAGE ON SEQUENCE `+table+`_generation TO %s`)
	po := offlinelock.New(offlinelock.Config{Table: table, Models: []any{&GdCustomer{}, &GdOrder{}, &GdLine{}, &GdNote{}, &GdSub{}},
		Authorize: func(context.Context, string, offlinelock.Lock) error { return nil }})
	require.NoError(t, op.Use(po), "the operator's db.Use verifies")
	require.NoError(t, po.ForceRelease(as(op, offlinelock.Owner{Session: "OP", User: "operator"}), "gd_customers", "130"))
	require.ErrorContains(t, op.Exec(`UPDATE gd_customers SET credit = 0 WHERE id = 129`).Error, "42501", "no business tables")
	_, err = p.Acquire(as(app, martin), &GdCustomer{ID: 130}, offlinelock.Write)
	require.NoError(t, err, "released: another session takes it")
}

func currentDB(t *testing.T, db *gorm.DB) string {
	t.Helper()
	var name string
	require.NoError(t, db.Raw(`SELECT current_database()`).Scan(&name).Error)
	return name
}

// TestDisableGuardWithAGuardInstalled: DisableGuard on a database that
// still carries the lock table's guard fails db.Use, saying how to remove
// it; once removed, it starts.
func TestDisableGuardWithAGuardInstalled(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setup(t, d, offlinelock.Config{Models: []any{&GdCustomer{}}})
			fcDropCleanup(t, db, &GdCustomer{})
			require.NoError(t, db.AutoMigrate(&GdCustomer{}))
			require.NoError(t, p.InstallGuard(db))

			off := offlinelock.New(offlinelock.Config{Table: lockTableOf(p), DisableGuard: true})
			err := d.open(t).Use(off)
			require.ErrorContains(t, err, "Config.DisableGuard is set, but the database guard of lock table "+lockTableOf(p)+" is still installed on gd_customers")
			require.ErrorContains(t, err, "offlinelock guard remove")

			require.NoError(t, p.RemoveGuard(db))
			require.NoError(t, d.open(t).Use(offlinelock.New(offlinelock.Config{Table: lockTableOf(p), DisableGuard: true})))
		})
	}
}

// TestGuardLeastPrivilegeOnMariaDB: the owner (root here) installs; an
// application user with DML and EXECUTE runs the plugin, its db.Use
// verifying; another service with DML on the business tables only is
// refused held records, writes free ones, and cannot read the lock table.
func TestGuardLeastPrivilegeOnMariaDB(t *testing.T) {
	table := "ol_roles_" + randomHex(4)
	db, _ := gdSetup(t, database{"mysql", openMySQL}, offlinelock.Config{Table: table})

	svc := testkit.MyUser(t, db, `GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.gd_customers TO %s`, `GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.gd_lines TO %s`)
	require.NoError(t, svc.Exec(`UPDATE gd_customers SET credit = 1 WHERE id = 130`).Error, "a free record")
	require.True(t, refusedByGuard(svc.Exec(`UPDATE gd_customers SET credit = 0 WHERE id = 129`).Error, "gd_customers", "129"))
	require.True(t, refusedByGuard(svc.Exec(`UPDATE gd_lines SET qty = 0 WHERE id = 1`).Error, "gd_orders", "1"))
	require.ErrorContains(t, svc.Exec(`SELECT count(*) FROM `+table).Error, "1142", "the lock table is closed to it")

	app := testkit.MyUser(t, db, `GRANT SELECT, INSERT, UPDATE, DELETE, EXECUTE ON {db}.* TO %s`)
	p := offlinelock.New(offlinelock.Config{Table: table, Models: []any{&GdCustomer{}, &GdOrder{}, &GdLine{}, &GdNote{}}})
	require.NoError(t, app.Use(p), "the application user's db.Use finds the lock table and the guard in place")
	_, err := p.Acquire(as(app, david), &GdCustomer{ID: 130}, offlinelock.Write)
	require.NoError(t, err)
	require.NoError(t, as(app, david).Model(&GdCustomer{ID: 130}).Update("credit", 7).Error, "the holder writes")
	require.ErrorIs(t, as(app, martin).Model(&GdCustomer{ID: 130}).Update("credit", 8).Error, offlinelock.ErrLocked)
	err = svc.Exec(`UPDATE gd_customers SET credit = 9 WHERE id = 130`).Error
	require.ErrorContains(t, err, "OL423")
	require.ErrorContains(t, err, "offlinelock: gd_customers 130 is locked by david")
	var credit int
	require.NoError(t, db.Raw(`SELECT credit FROM gd_customers WHERE id = 130`).Scan(&credit).Error)
	require.Equal(t, 7, credit)
}

// TestGuardRefusesSchemasOpenToEveryone: where every role may create in a
// schema on the installing session's search_path (PUBLIC has CREATE, as on
// public before PostgreSQL 15), any role could make the functions and
// operators the install's queries pick and run them with the installer's
// rights: db.Use fails saying which schema and what to revoke, and
// creates nothing; after the REVOKE it installs.
func TestGuardRefusesSchemasOpenToEveryone(t *testing.T) {
	admin := openPostgres(t)
	schema := "ol_open_" + randomHex(4)
	require.NoError(t, admin.Exec(`CREATE SCHEMA `+schema).Error)
	t.Cleanup(func() { admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`) })
	require.NoError(t, admin.Exec(`GRANT CREATE ON SCHEMA `+schema+` TO PUBLIC`).Error)
	db, err := gorm.Open(dialectorOf("postgres", dsnOf("postgres")+" search_path="+schema), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB, _ := db.DB()
	t.Cleanup(func() { sqlDB.Close() })
	require.NoError(t, db.AutoMigrate(&GdCustomer{}))
	table := "ol_" + randomHex(5)
	cfg := offlinelock.Config{Table: table, Models: []any{&GdCustomer{}}, Logger: slog.New(slog.DiscardHandler)}
	err = db.Use(offlinelock.New(cfg))
	require.ErrorContains(t, err, `REVOKE CREATE ON SCHEMA "`+schema+`" FROM PUBLIC`)
	var made int64
	require.NoError(t, admin.Raw(`SELECT count(*) FROM pg_proc WHERE pronamespace = ?::regnamespace`, schema).Scan(&made).Error)
	require.Zero(t, made, "nothing created")
	var triggers int64
	require.NoError(t, admin.Raw(`SELECT count(*) FROM pg_trigger WHERE tgrelid = ?::regclass AND NOT tgisinternal`, schema+".gd_customers").Scan(&triggers).Error)
	require.Zero(t, triggers, "nothing created")

	require.NoError(t, admin.Exec(`REVOKE CREATE ON SCHEMA `+schema+` FROM PUBLIC`).Error)
	db2, err := gorm.Open(dialectorOf("postgres", dsnOf("postgres")+" search_path="+schema), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB2, _ := db2.DB()
	t.Cleanup(func() { sqlDB2.Close() })
	p := offlinelock.New(cfg)
	require.NoError(t, db2.Use(p))
	tables, err := p.GuardedTables(db2)
	require.NoError(t, err)
	require.Equal(t, []string{"gd_customers"}, tables)
	require.NoError(t, p.RemoveGuard(db2))
}
