package main

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
)

// TestDocumentedRoles: each role docs/guard.md lists beside the owner and
// the application, created with exactly its grants (roleGrants), does what
// the page says it may, and no more: the operator lists and releases
// locks; another service writes a free record and is refused a held one
// by the guard, and cannot read the lock table; a read-only role reads the
// held record and lists the locks, and may write nothing.
func TestDocumentedRoles(t *testing.T) {
	for _, name := range []string{"postgres", "mysql"} {
		for _, role := range []string{"operator", "service", "read-only"} {
			t.Run(name+"/"+role, func(t *testing.T) {
				d := openDB(t, name)
				table := "h1rl_" + randomName()
				require.NoError(t, d.db.Migrator().DropTable(&lpDoc{}))
				require.NoError(t, d.db.AutoMigrate(&lpDoc{}))
				t.Cleanup(func() { d.db.Migrator().DropTable(&lpDoc{}) })
				require.NoError(t, d.db.Create(&[]lpDoc{{ID: 1, Title: "a"}, {ID: 2, Title: "b"}}).Error)
				dropLockTables(t, d, table)
				p := offlinelock.New(offlinelock.Config{Table: table, LeaveGuard: true, Models: []any{&lpDoc{}}, Logger: slog.New(slog.DiscardHandler)})
				require.NoError(t, d.db.Use(p))
				require.Equal(t, exitOK, cmd("guard", "install", "--dsn", d.dsn, "--table", table).code)
				_, err := p.Acquire(as(d.db, martin), &lpDoc{ID: 1}, offlinelock.Write)
				require.NoError(t, err)

				_, dsn := serverRole(t, d, "rl", grantsOn(d, role, "", "h1_lp_docs", table)...)
				runRole(t, d, role, dsn, table, p)
			})
		}
	}
}

// runRole runs what role may do, and one thing it may not.
func runRole(t *testing.T, d testDB, role, dsn, table string, p *offlinelock.Plugin) {
	t.Helper()
	on := []string{"--dsn", dsn, "--table", table}
	switch role {
	case "operator":
		r := cmd(append([]string{"list"}, on...)...)
		require.Equal(t, exitOK, r.code, r.stderr)
		require.Contains(t, r.stdout, "martin")
		r = cmd(append([]string{"release", "h1_lp_docs", "1", "--reason", "holder left", "--operator", "alice"}, on...)...)
		require.Equal(t, exitOK, r.code, r.stderr)
		held, err := p.Holders(d.db, &lpDoc{ID: 1})
		require.NoError(t, err)
		require.Empty(t, held, "released")
		require.Equal(t, exitFailed, cmd(append([]string{"guard", "remove"}, on...)...).code, "the guard is the owner's")
	case "service":
		svc := openAs(t, d, dsn)
		require.NoError(t, svc.Exec(`UPDATE h1_lp_docs SET title = 'free' WHERE id = 2`).Error, "a free record")
		err := svc.Exec(`UPDATE h1_lp_docs SET title = 'held' WHERE id = 1`).Error
		require.ErrorContains(t, err, "offlinelock: h1_lp_docs 1 is locked by martin")
		require.Regexp(t, `(?i)denied`, svc.Exec(`SELECT count(*) FROM `+quoted(d, table)).Error, "the lock table is closed to it")
	case "read-only":
		ro := openAs(t, d, dsn)
		var title string
		require.NoError(t, ro.Raw(`SELECT title FROM h1_lp_docs WHERE id = 1`).Scan(&title).Error, "reads the held record")
		require.Equal(t, "a", title)
		r := cmd(append([]string{"list"}, on...)...)
		require.Equal(t, exitOK, r.code, r.stderr)
		require.Contains(t, r.stdout, "martin")
		require.Regexp(t, `(?i)denied`, ro.Exec(`UPDATE h1_lp_docs SET title = 'x' WHERE id = 2`).Error)
	}
}

// quoted is table quoted for d.
func quoted(d testDB, table string) string {
	if d.name == "mysql" {
		return "`" + table + "`"
	}
	return `"` + table + `"`
}
