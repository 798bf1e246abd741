package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// lpDoc is the least-privilege tests' business table, their own.
type lpDoc struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Title string
}

func (lpDoc) TableName() string { return "h1_lp_docs" }

// roleGrants are the grants docs/guard.md lists for each role on each
// database ("Roles and grants"); {role} is the role, {db} the database,
// {owner} the owner role (PostgreSQL's default privileges), {tables}
// the business tables and {lock} the lock table. The owner's and the
// application's are run by TestLeastPrivilegeInEitherOrder and
// TestPrintedSQLInstallsTheGuard, the others' by TestDocumentedRoles.
var roleGrants = map[string]map[string][]string{
	"postgres": {
		"owner": {`GRANT USAGE, CREATE ON SCHEMA public TO {role}`, `ALTER TABLE {tables} OWNER TO {role}`},
		"application": {`GRANT USAGE ON SCHEMA public TO {role}`,
			`GRANT SELECT, INSERT, UPDATE, DELETE ON {tables} TO {role}`,
			`ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {role}`,
			`ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public GRANT USAGE ON SEQUENCES TO {role}`},
		"operator": {`GRANT USAGE ON SCHEMA public TO {role}`,
			`GRANT SELECT, INSERT, UPDATE, DELETE ON {lock}, {lock}_tables, {lock}_notes TO {role}`,
			`GRANT USAGE ON SEQUENCE {lock}_generation, {lock}_notes_id_seq TO {role}`},
		"service":   {`GRANT USAGE ON SCHEMA public TO {role}`, `GRANT SELECT, INSERT, UPDATE, DELETE ON {tables} TO {role}`},
		"read-only": {`GRANT USAGE ON SCHEMA public TO {role}`, `GRANT SELECT ON {tables}, {lock} TO {role}`},
	},
	"mysql": {
		"owner":       {`GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX, TRIGGER, CREATE VIEW, CREATE ROUTINE, ALTER ROUTINE, EXECUTE ON {db}.* TO {role}`},
		"application": {`GRANT SELECT, INSERT, UPDATE, DELETE, EXECUTE ON {db}.* TO {role}`},
		"operator": {`GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.{lock} TO {role}`, `GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.{lock}_tables TO {role}`,
			`GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.{lock}_generation TO {role}`, `GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.{lock}_notes TO {role}`},
		"service":   {`GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.{tables} TO {role}`},
		"read-only": {`GRANT SELECT ON {db}.{tables} TO {role}`, `GRANT SELECT ON {db}.{lock} TO {role}`},
	},
}

// grantsOf are role's grants on d with owner and tables filled in.
func grantsOf(d testDB, role, owner, tables string) []string {
	return grantsOn(d, role, owner, tables, "")
}

// grantsOn are role's grants on d with owner, tables and the lock table
// filled in.
func grantsOn(d testDB, role, owner, tables, lock string) []string {
	var out []string
	for _, g := range roleGrants[d.name][role] {
		out = append(out, strings.NewReplacer("{owner}", `"`+owner+`"`, "{tables}", tables, "{lock}", lock).Replace(g))
	}
	return out
}

// TestLeastPrivilegeInEitherOrder: docs/guard.md's roles on a fresh
// database, the owner's `guard install` first or the application first.
// Either way the application (DML only, no Config.Models needed beyond its
// own) starts once the owner has installed, its grants are refused naming
// the command until the owner's install guards what it declared, and then
// every feature works under its role: Acquire, TakeOver, RequestEdit,
// Watch and View (the notes and viewers tables made by the owner's
// install, which the application's role could not make).
func TestLeastPrivilegeInEitherOrder(t *testing.T) {
	for _, name := range []string{"postgres", "mysql"} {
		for _, appFirst := range []bool{false, true} {
			order := map[bool]string{false: "owner first", true: "application first"}[appFirst]
			t.Run(name+"/"+order, func(t *testing.T) {
				d := openDB(t, name)
				runLeastPrivilege(t, d, appFirst)
			})
		}
	}
}

func runLeastPrivilege(t *testing.T, d testDB, appFirst bool) {
	table := "h1lp_" + randomName()
	require.NoError(t, d.db.Migrator().DropTable(&lpDoc{}))
	require.NoError(t, d.db.AutoMigrate(&lpDoc{}))
	t.Cleanup(func() { d.db.Migrator().DropTable(&lpDoc{}) })
	require.NoError(t, d.db.Create(&[]lpDoc{{ID: 1, Title: "a"}, {ID: 2, Title: "b"}}).Error)
	dropLockTables(t, d, table)
	owner, ownerDSN := serverRole(t, d, "own", grantsOf(d, "owner", "", "h1_lp_docs")...)
	_, appDSN := serverRole(t, d, "app", grantsOf(d, "application", owner, "h1_lp_docs")...)
	app := openAs(t, d, appDSN)
	install := func() result { return cmd("guard", "install", "--dsn", ownerDSN, "--table", table) }

	start := func() *offlinelock.Plugin {
		p := offlinelock.New(lpConfig(table))
		require.NoError(t, app.Use(p), "the application's db.Use verifies what the owner made")
		return p
	}
	if appFirst {
		p := offlinelock.New(lpConfig(table))
		err := app.Use(p)
		require.ErrorContains(t, err, "offlinelock guard install", "nothing in place yet: the application names the owner's step")
	}
	r := install()
	require.Equal(t, exitNoTables, r.code, "nothing declared yet: %s %s", r.stdout, r.stderr)

	// A new gorm.DB: a failed db.Use leaves its plugin registered, failing closed.
	if appFirst {
		app = openAs(t, d, appDSN)
	}
	p := start()
	_, err := p.Acquire(as(app, martin), &lpDoc{ID: 1}, offlinelock.Write)
	require.ErrorIs(t, err, offlinelock.ErrUnguarded)
	require.ErrorContains(t, err, "offlinelock guard install")

	r = install()
	require.Equal(t, exitOK, r.code, "%s %s", r.stdout, r.stderr)
	require.Equal(t, "h1_lp_docs: guarded\n", r.stdout)
	r = cmd("guard", "status", "--dsn", ownerDSN, "--table", table)
	require.Equal(t, result{exitOK, "h1_lp_docs: guarded\n", ""}, r)
	runFeatures(t, p, app)
}

// runFeatures runs every feature of the plugin on app (the application's
// role): each must work.
func runFeatures(t *testing.T, p *offlinelock.Plugin, app *gorm.DB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events, err := p.Watch(ctx, as(app, david), &lpDoc{ID: 1})
	require.NoError(t, err, "Watch")
	require.NoError(t, p.View(ctx, app, &lpDoc{ID: 1}, "david"), "View")
	_, err = p.Acquire(as(app, martin), &lpDoc{ID: 1}, offlinelock.Write)
	require.NoError(t, err, "Acquire")
	require.NoError(t, p.RequestEdit(as(app, david), &lpDoc{ID: 1}), "RequestEdit")
	_, err = p.TakeOver(as(app, david), &lpDoc{ID: 1}, "urgent")
	require.NoError(t, err, "TakeOver")
	require.NoError(t, as(app, david).Model(&lpDoc{ID: 1}).Update("title", "x").Error, "the new holder writes")
	for {
		select {
		case e := <-events:
			if e.Kind == offlinelock.EventTakenOver {
				return
			}
		case <-ctx.Done():
			t.Fatal("Watch never told the take-over")
		}
	}
}

// as is db for owner o.
func as(db *gorm.DB, o offlinelock.Owner) *gorm.DB {
	return db.WithContext(offlinelock.WithOwner(context.Background(), o))
}

// randomName is 10 hex digits.
func randomName() string {
	b := make([]byte, 5)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// lpConfig is the application's Config: its model declared, take-overs
// allowed.
func lpConfig(table string) offlinelock.Config {
	return offlinelock.Config{Table: table, Models: []any{&lpDoc{}}, Logger: slog.New(slog.DiscardHandler),
		Authorize: func(context.Context, string, offlinelock.Lock) error { return nil }}
}

// TestApplicationWithoutExecuteIsToldTheGrant: on MariaDB an application
// user without EXECUTE (which the plugin's statements need to call the
// fence function) finds the guard's routines hidden; its db.Use names the
// missing GRANT EXECUTE rather than advising an install, and starts once
// it is granted. (PostgreSQL's guard functions are closed to every role
// but their owner on purpose, and its triggers fire without EXECUTE: the
// application needs none there, TestLeastPrivilegeInEitherOrder.)
func TestApplicationWithoutExecuteIsToldTheGrant(t *testing.T) {
	d := openDB(t, "mysql")
	table := "h1ex_" + randomName()
	require.NoError(t, d.db.Migrator().DropTable(&lpDoc{}))
	require.NoError(t, d.db.AutoMigrate(&lpDoc{}))
	t.Cleanup(func() { d.db.Migrator().DropTable(&lpDoc{}) })
	dropLockTables(t, d, table)
	p := offlinelock.New(offlinelock.Config{Table: table, LeaveGuard: true, Models: []any{&lpDoc{}}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, d.db.Use(p))
	require.Equal(t, exitOK, cmd("guard", "install", "--dsn", d.dsn, "--table", table).code)

	user, dsn := serverRole(t, d, "app", `GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.* TO {role}`)
	err := openAs(t, d, dsn).Use(offlinelock.New(lpConfig(table)))
	require.ErrorIs(t, err, offlinelock.ErrGrantExecute)
	require.ErrorContains(t, err, "GRANT EXECUTE ON `"+dbOf(t, d)+"`.* TO '"+user+"'@'%'")
	require.NotContains(t, err.Error(), "guard install")

	require.NoError(t, d.db.Exec("GRANT EXECUTE ON `"+dbOf(t, d)+"`.* TO '"+user+"'@'%'").Error)
	app := openAs(t, d, dsn)
	p2 := offlinelock.New(lpConfig(table))
	require.NoError(t, app.Use(p2))
	_, err = p2.Acquire(as(app, martin), &lpDoc{ID: 1}, offlinelock.Write)
	require.NoError(t, err)
}

// dbOf is the name of d's database (MySQL/MariaDB).
func dbOf(t *testing.T, d testDB) string {
	t.Helper()
	var name string
	require.NoError(t, d.db.Raw(`SELECT DATABASE()`).Scan(&name).Error)
	return name
}

// TestApplicationWithoutGrantsOnTheNotesTableIsToldThem: on PostgreSQL an
// application role with the lock table's grants but none on the notes
// table the owner's install made fails at db.Use, naming both grants
// (the table and its id sequence), rather than at its first TakeOver with
// a bare "permission denied"; granted them, it starts.
func TestApplicationWithoutGrantsOnTheNotesTableIsToldThem(t *testing.T) {
	d := openDB(t, "postgres")
	table := "h1nt_" + randomName()
	require.NoError(t, d.db.Migrator().DropTable(&lpDoc{}))
	require.NoError(t, d.db.AutoMigrate(&lpDoc{}))
	t.Cleanup(func() { d.db.Migrator().DropTable(&lpDoc{}) })
	dropLockTables(t, d, table)
	p := offlinelock.New(offlinelock.Config{Table: table, LeaveGuard: true, Models: []any{&lpDoc{}}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, d.db.Use(p))
	require.Equal(t, exitOK, cmd("guard", "install", "--dsn", d.dsn, "--table", table).code)

	role, dsn := serverRole(t, d, "app", `GRANT USAGE ON SCHEMA public TO {role}`,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON h1_lp_docs, `+table+`, `+table+`_tables TO {role}`,
		`GRANT USAGE ON SEQUENCE `+table+`_generation TO {role}`)
	err := openAs(t, d, dsn).Use(offlinelock.New(lpConfig(table)))
	require.EqualError(t, err, `offlinelock: permission denied: this role may not use the notes table `+table+`_notes, which TakeOver, RequestEdit, ForceRelease and Watch write; as the owner, run: `+
		`GRANT SELECT, INSERT, UPDATE, DELETE ON "`+table+`_notes" TO <this role>; GRANT USAGE ON SEQUENCE public.`+table+`_notes_id_seq TO <this role>`)

	require.NoError(t, d.db.Exec(`GRANT SELECT, INSERT, UPDATE, DELETE ON "`+table+`_notes" TO "`+role+`"`).Error)
	require.NoError(t, d.db.Exec(`GRANT USAGE ON SEQUENCE "`+table+`_notes_id_seq" TO "`+role+`"`).Error)
	require.NoError(t, openAs(t, d, dsn).Use(offlinelock.New(lpConfig(table))))
}
