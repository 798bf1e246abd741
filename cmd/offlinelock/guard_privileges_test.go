package main

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
)

// TestGuardInstallAndRemoveCheckPrivilegesFirst: a role lacking one
// privilege the install (or the removal) needs is refused before anything
// is changed, with an error naming the privilege, its object and the
// grant: the install makes no lock-table feature table and guards
// nothing; the removal leaves the guard complete.
func TestGuardInstallAndRemoveCheckPrivilegesFirst(t *testing.T) {
	for _, tc := range []struct {
		db, action string
		grants     []string // the role's, {tables} the business table
		want       []string // in the error
	}{
		{"postgres", "install", []string{`GRANT USAGE, CREATE ON SCHEMA public TO {role}`, `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}`, `GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}`},
			[]string{`ownership of table "h1_lp_docs" (ALTER TABLE "h1_lp_docs" OWNER TO`, "nothing was changed"}},
		{"postgres", "remove", []string{`GRANT USAGE, CREATE ON SCHEMA public TO {role}`, `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}`, `GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}`},
			[]string{`ownership of table "h1_lp_docs"`, "ownership of function", "nothing was changed"}},
		{"mysql", "install", []string{`GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX, CREATE VIEW, CREATE ROUTINE, ALTER ROUTINE, EXECUTE ON {db}.* TO {role}`},
			[]string{"the TRIGGER privileges on database", "(GRANT TRIGGER ON", "nothing was changed"}},
		{"mysql", "remove", []string{`GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, TRIGGER, CREATE VIEW, CREATE ROUTINE, ALTER ROUTINE, EXECUTE ON {db}.* TO {role}`},
			[]string{"the DROP privileges on database", "(GRANT DROP ON", "nothing was changed"}},
	} {
		t.Run(tc.db+"/"+tc.action, func(t *testing.T) {
			d := openDB(t, tc.db)
			table := "h1pv_" + randomName()
			require.NoError(t, d.db.Migrator().DropTable(&lpDoc{}))
			require.NoError(t, d.db.AutoMigrate(&lpDoc{}))
			t.Cleanup(func() { d.db.Migrator().DropTable(&lpDoc{}) })
			dropLockTables(t, d, table)
			// The superuser declares the table; the guard is installed
			// where the role is to remove it.
			p := offlinelock.New(offlinelock.Config{Table: table, LeaveGuard: true, Models: []any{&lpDoc{}}, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, d.db.Use(p))
			if tc.action == "remove" {
				require.Equal(t, exitOK, cmd("guard", "install", "--dsn", d.dsn, "--table", table).code)
			}
			var grants []string
			for _, g := range tc.grants {
				grants = append(grants, strings.ReplaceAll(g, "{tables}", "h1_lp_docs"))
			}
			_, dsn := serverRole(t, d, "weak", grants...)
			before := cmd("guard", "status", "--dsn", d.dsn, "--table", table)

			r := cmd("guard", tc.action, "--dsn", dsn, "--table", table)
			require.Equal(t, exitFailed, r.code, "%s %s", r.stdout, r.stderr)
			for _, w := range tc.want {
				require.Contains(t, r.stderr, w)
			}
			require.Equal(t, before, cmd("guard", "status", "--dsn", d.dsn, "--table", table), "nothing changed")
			if tc.action == "install" {
				require.False(t, d.db.Migrator().HasTable(table+"_notes"), "no feature table made")
				tables, err := p.GuardedTables(d.db)
				require.NoError(t, err)
				require.Empty(t, tables)
			}
		})
	}
}
