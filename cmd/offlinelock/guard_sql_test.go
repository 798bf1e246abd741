package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// runPrinted runs the output of `guard install --print-sql` on db as a DBA
// would: PostgreSQL's as one script, MySQL/MariaDB's statement by
// statement, as its DELIMITER marks them.
func runPrinted(t *testing.T, d testDB, db *gorm.DB, out string) {
	t.Helper()
	if d.name == "postgres" {
		require.NoError(t, db.Exec(out).Error)
		return
	}
	var stmt []string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "--"), strings.HasPrefix(line, "DELIMITER"):
		case line == "//":
			q := strings.Join(stmt, "\n")
			require.NoError(t, db.Exec(q).Error, q)
			stmt = nil
		default:
			stmt = append(stmt, line)
		}
	}
	require.Empty(t, strings.TrimSpace(strings.Join(stmt, "")), "every statement ends with its delimiter")
}

// TestPrintedSQLInstallsTheGuard: `guard install --print-sql` changes
// nothing, and its output, run by hand as the owner (docs/guard.md's
// grants), makes the lock table and the feature tables on a fresh
// database, and, once the application has declared its tables, a guard
// that `guard status` reports complete; the DML-only application then
// works, and another client's write of a held record is refused.
func TestPrintedSQLInstallsTheGuard(t *testing.T) {
	for _, name := range []string{"postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			d := openDB(t, name)
			table := "h1ps_" + randomName()
			require.NoError(t, d.db.Migrator().DropTable(&lpDoc{}))
			require.NoError(t, d.db.AutoMigrate(&lpDoc{}))
			t.Cleanup(func() { d.db.Migrator().DropTable(&lpDoc{}) })
			require.NoError(t, d.db.Create(&[]lpDoc{{ID: 1, Title: "a"}, {ID: 2, Title: "b"}}).Error)
			dropLockTables(t, d, table)
			owner, ownerDSN := serverRole(t, d, "own", grantsOf(d, "owner", "", "h1_lp_docs")...)
			_, appDSN := serverRole(t, d, "app", grantsOf(d, "application", owner, "h1_lp_docs")...)
			ownerDB := openAs(t, d, ownerDSN)
			printSQL := func() result { return cmd("guard", "install", "--print-sql", "--dsn", ownerDSN, "--table", table) }

			r := printSQL()
			require.Equal(t, exitNoTables, r.code, r.stderr)
			require.Contains(t, r.stdout, "No lockable table is declared yet")
			require.False(t, d.db.Migrator().HasTable(table), "printing changes nothing")
			runPrinted(t, d, ownerDB, r.stdout)
			for _, made := range []string{table, table + "_tables", table + "_notes", table + "_viewers"} {
				require.True(t, d.db.Migrator().HasTable(made), made)
			}

			app := openAs(t, d, appDSN)
			p := offlinelock.New(lpConfig(table))
			require.NoError(t, app.Use(p), "the application starts on what the printed SQL made")
			_, err := p.Acquire(as(app, martin), &lpDoc{ID: 1}, offlinelock.Write)
			require.ErrorIs(t, err, offlinelock.ErrUnguarded)

			r = printSQL()
			require.Equal(t, exitOK, r.code, r.stderr)
			require.Contains(t, r.stdout, "h1_lp_docs")
			status := cmd("guard", "status", "--dsn", ownerDSN, "--table", table)
			require.Equal(t, exitUnguard, status.code, "printing changes nothing: %s", status.stdout)
			runPrinted(t, d, ownerDB, r.stdout)
			status = cmd("guard", "status", "--dsn", ownerDSN, "--table", table)
			require.Equal(t, result{exitOK, "h1_lp_docs: guarded\n", ""}, status)
			r = printSQL()
			require.Equal(t, exitOK, r.code, r.stderr)
			require.NotContains(t, r.stdout, "CREATE", "nothing left to do")

			runFeatures(t, p, app)
			err = d.db.Exec(`UPDATE h1_lp_docs SET title = 'z' WHERE id = 1`).Error
			require.ErrorContains(t, err, "offlinelock: h1_lp_docs 1 is locked by david")
		})
	}
}

// TestPrintedSQLOnSQLite: SQLite has no guard, and says so; nothing else
// is printed and nothing is made.
func TestPrintedSQLOnSQLite(t *testing.T) {
	d := openDB(t, "sqlite")
	require.NoError(t, d.db.Exec(`SELECT 1`).Error) // the file exists
	r := cmd("guard", "install", "--print-sql", "--dsn", d.dsn, "--table", "h1_locks")
	require.Equal(t, result{exitOK, "-- SQLite has no guard: db.Use creates the lock table\n", ""}, r)
	require.False(t, d.db.Migrator().HasTable("h1_locks"))
}

// TestGuardInstallMakesTheFeatureTables: on every database guard install
// makes the notes and viewers tables the plugin's features need (SQLite
// too, which has no guard); GuardSQL has nothing for SQLite.
func TestGuardInstallMakesTheFeatureTables(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		table, p := lockTable(t, d)
		dropLockTables(t, d, table)
		require.Equal(t, []string{table + "_notes", table + "_viewers"}, p.FeatureTables())
		for _, f := range p.FeatureTables() {
			require.False(t, d.db.Migrator().HasTable(f), f)
		}
		r := cmd("guard", "install", "--dsn", d.dsn, "--table", table)
		want := exitNoTables // nothing declared: the guard comes later, the tables now
		if d.name == "sqlite" {
			want = exitOK // no guard to report
		}
		require.Equal(t, want, r.code, r.stderr)
		for _, f := range p.FeatureTables() {
			require.True(t, d.db.Migrator().HasTable(f), f)
		}
		if d.name == "sqlite" {
			stmts, err := p.GuardSQL(d.db)
			require.NoError(t, err)
			require.Nil(t, stmts)
		}
	})
}
