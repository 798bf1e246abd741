package plugin_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// The guard's own functions (PostgreSQL): owned by the role that installs
// them and closed to every other, whoever made a function of that name
// first.

// TestGuardFunctionsAreClosedToWriters: the guard's functions run with
// their owner's rights (here a superuser's), and a trigger fires its
// function without EXECUTE, which only CREATE TRIGGER checks. A role with
// DML and TEMP may not hang a guard function on a table of its own (whose
// key could have a type with a cast of its own, which the function would
// run with its owner's rights).
func TestGuardFunctionsAreClosedToWriters(t *testing.T) {
	table := "ol_et" + randomHex(5)
	db, p := guardedPtHeirs(t, table)
	fns, err := func() (fns []string, err error) {
		err = db.Raw(`SELECT DISTINCT tgfoid::regproc::text FROM pg_trigger WHERE tgrelid = 'pt_heirs'::regclass AND NOT tgisinternal`).Scan(&fns).Error
		return fns, err
	}()
	require.NoError(t, err)
	require.Len(t, fns, 4)
	var grant string // the lock table's own trigger function, which orders grants
	require.NoError(t, db.Raw(`SELECT tgfoid::regproc::text FROM pg_trigger WHERE tgrelid = ?::regclass AND NOT tgisinternal`, table).Scan(&grant).Error)
	require.NotEmpty(t, grant)
	fns = append(fns, grant)

	_, w := pgRole(t, db, `GRANT USAGE ON SCHEMA public TO %s`, `GRANT SELECT, INSERT, UPDATE, DELETE ON pt_heirs TO %s`)
	require.NoError(t, w.Exec(`CREATE TEMP TABLE zz_mine (id bigint, title text)`).Error)
	for _, fn := range fns {
		err = w.Exec(`CREATE TRIGGER zz_hung AFTER UPDATE ON zz_mine FOR EACH STATEMENT EXECUTE FUNCTION ` + fn + `()`).Error
		require.ErrorContains(t, err, "permission denied for function", fn)
	}
	require.NoError(t, p.RemoveGuard(db))
}

// TestGuardOwnsItsFunctions: a role that may create in the lock table's
// schema (PUBLIC could in public before PostgreSQL 15) makes functions of
// the guard's names before the install (they can be computed). A
// superuser's CREATE OR REPLACE keeps a function's owner, so the role
// would own, and could later rewrite, what the guard runs as a superuser,
// and its grants to an accomplice would stay; the install takes each
// function over and closes it instead, the role can no longer replace
// one, the accomplice may not execute one, and the guard refuses the
// role's write of a held row.
func TestGuardOwnsItsFunctions(t *testing.T) {
	table := "ol_ow" + randomHex(5)
	db, p := guardedPtHeirs(t, table)
	var upd string
	require.NoError(t, db.Raw(`SELECT tgname FROM pg_trigger WHERE tgrelid = 'pt_heirs'::regclass AND tgname LIKE '%\_upd'`).Scan(&upd).Error)
	prefix := strings.TrimSuffix(upd, "_upd")
	var signatures []string
	require.NoError(t, db.Raw(`SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.proname LIKE ? || '\_%'`, prefix).Scan(&signatures).Error)
	require.NotEmpty(t, signatures)
	require.NoError(t, p.RemoveGuard(db))

	_, w := pgRole(t, db, `GRANT USAGE, CREATE ON SCHEMA public TO %s`, `GRANT SELECT, INSERT, UPDATE, DELETE ON pt_heirs TO %s`)
	accomplice, w2 := pgRole(t, db, `GRANT USAGE ON SCHEMA public TO %s`)
	for _, sig := range signatures {
		name, args, _ := strings.Cut(sig, "(")
		ret, body := "trigger", "RETURN NULL;"
		if args != ")" {
			ret, body = "void", ""
		}
		require.NoError(t, w.Exec(`CREATE FUNCTION public.`+name+`(`+args+` RETURNS `+ret+` LANGUAGE plpgsql AS $$BEGIN `+body+` END$$`).Error, sig)
		require.NoError(t, w.Exec(`GRANT EXECUTE ON FUNCTION public.`+name+`(`+args+` TO `+accomplice).Error, sig)
	}
	require.NoError(t, p.InstallGuard(db))
	var foreign int64
	require.NoError(t, db.Raw(`SELECT count(*) FROM pg_proc WHERE proname LIKE ? || '\_%' AND proowner <> (SELECT oid FROM pg_roles WHERE rolname = current_user)`, prefix).Scan(&foreign).Error)
	require.Zero(t, foreign, "the install owns every function of the guard")
	for _, sig := range signatures {
		name, args, _ := strings.Cut(sig, "(")
		err := w.Exec(`ALTER FUNCTION public.` + name + `(` + args + ` SECURITY INVOKER`).Error
		require.ErrorContains(t, err, "must be owner of function", sig)
		var may bool // nor may its accomplice hang one on a table of its own
		require.NoError(t, w2.Raw(`SELECT has_function_privilege(?, 'EXECUTE')`, "public."+sig).Scan(&may).Error)
		require.False(t, may, sig)
	}
	states, err := p.GuardStatus(db)
	require.NoError(t, err)
	require.Contains(t, states, offlinelock.GuardState{Table: "pt_heirs", State: "ok"})
	require.NoError(t, db.Exec(`INSERT INTO pt_heirs VALUES (7, 'held')`).Error)
	_, err = p.Acquire(as(db, martin), &PtHeir{ID: 7}, offlinelock.Write)
	require.NoError(t, err)
	err = w.Exec(`UPDATE pt_heirs SET title = 'x' WHERE id = 7`).Error
	require.True(t, refusedByGuard(err, "pt_heirs", "7"), "want the guard's refusal, got %v", err)
}

// TestGuardTakesBackWhatItsFunctionsGaveAway: a guard installed before its
// functions were closed (or opened since by a grant) let a writer hang one
// on a table of its own, and that trigger goes on firing it after a
// REVOKE, since only CREATE TRIGGER checks EXECUTE; a grant with GRANT
// OPTION passed on keeps a grant of its own. guard status reports the
// table replaced, and the next install makes the function anew (the
// planted trigger goes with the old one) and takes every grant back.
func TestGuardTakesBackWhatItsFunctionsGaveAway(t *testing.T) {
	table := "ol_tb" + randomHex(5)
	db, p := guardedPtHeirs(t, table)
	var ins, refuse string
	require.NoError(t, db.Raw(`SELECT tgfoid::regprocedure::text FROM pg_trigger WHERE tgrelid = 'pt_heirs'::regclass AND tgname LIKE '%\_ins'`).Scan(&ins).Error)
	require.NoError(t, db.Raw(`SELECT oid::regprocedure::text FROM pg_proc WHERE proname = ?`, strings.SplitN(ins, "_", 2)[0]+"_refuse").Scan(&refuse).Error)
	require.NotEmpty(t, refuse)

	_, w := pgRole(t, db, `GRANT USAGE ON SCHEMA public TO %s`, `GRANT SELECT, INSERT, UPDATE, DELETE ON pt_heirs TO %s`)
	heir, _ := pgRole(t, db, `GRANT USAGE ON SCHEMA public TO %s`)
	heir2, _ := pgRole(t, db, `GRANT USAGE ON SCHEMA public TO %s`)
	// as before the functions were closed
	require.NoError(t, db.Exec(`GRANT EXECUTE ON FUNCTION `+ins+` TO PUBLIC`).Error)
	require.NoError(t, w.Exec(`CREATE TEMP TABLE zz_planted (id bigint, title text)`).Error)
	require.NoError(t, w.Exec(`CREATE TRIGGER zz_planted AFTER INSERT ON zz_planted REFERENCING NEW TABLE AS offlinelock_new FOR EACH STATEMENT EXECUTE FUNCTION `+ins).Error)
	require.NoError(t, db.Exec(`REVOKE EXECUTE ON FUNCTION `+ins+` FROM PUBLIC`).Error)
	// a grant passed on
	require.NoError(t, db.Exec(`GRANT EXECUTE ON FUNCTION `+refuse+` TO `+heir+` WITH GRANT OPTION`).Error)
	require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec(`SET LOCAL ROLE ` + heir).Error; err != nil {
			return err
		}
		return tx.Exec(`GRANT EXECUTE ON FUNCTION ` + refuse + ` TO ` + heir2).Error
	}))

	states, err := p.GuardStatus(db)
	require.NoError(t, err)
	require.Contains(t, states, offlinelock.GuardState{Table: "pt_heirs", State: "replaced"})
	require.NoError(t, p.InstallGuard(db))
	states, err = p.GuardStatus(db)
	require.NoError(t, err)
	require.Contains(t, states, offlinelock.GuardState{Table: "pt_heirs", State: "ok"})
	var planted int64
	require.NoError(t, w.Raw(`SELECT count(*) FROM pg_trigger WHERE tgrelid = 'zz_planted'::regclass`).Scan(&planted).Error)
	require.Zero(t, planted, "the planted trigger went with the old function")
	for _, role := range []string{heir, heir2} {
		var may bool
		require.NoError(t, db.Raw(`SELECT has_function_privilege(?, ?, 'EXECUTE')`, role, refuse).Scan(&may).Error)
		require.False(t, may, role)
	}
	var guarded int64
	require.NoError(t, db.Raw(`SELECT count(*) FROM pg_trigger WHERE tgrelid = 'pt_heirs'::regclass AND NOT tgisinternal`).Scan(&guarded).Error)
	require.Equal(t, int64(4), guarded)
}

// guardedPtHeirs is a fresh pt_heirs table (PostgreSQL) guarded by a
// plugin on lock table table, dropped after the test.
func guardedPtHeirs(t *testing.T, table string) (*gorm.DB, *offlinelock.Plugin) {
	t.Helper()
	db, p := setup(t, database{"postgres", openPostgres}, offlinelock.Config{Table: table, Models: []any{&PtHeir{}}})
	drop := func() { db.Exec(`DROP TABLE IF EXISTS pt_heirs CASCADE`) }
	drop()
	t.Cleanup(drop)
	require.NoError(t, db.Exec(`CREATE TABLE pt_heirs (id bigint PRIMARY KEY, title text NOT NULL DEFAULT '')`).Error)
	require.NoError(t, p.InstallGuard(db))
	return db, p
}
