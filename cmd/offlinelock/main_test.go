package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// The application's models, as the library sees them: table customers
// (Write locks) and policies (shared Read locks).
type customer struct {
	ID uint `gorm:"primaryKey" lock:"exclusive_write"`
}

// guardedDoc is the guard subtest's table, its own.
type guardedDoc struct {
	ID uint `gorm:"primaryKey" lock:"exclusive_write"`
}

func (guardedDoc) TableName() string { return "cli_guarded_docs" }

type policy struct {
	ID uint `gorm:"primaryKey" lock:"read_write"`
}

var (
	martin = offlinelock.Owner{Session: "M1", User: "martin"}
	david  = offlinelock.Owner{Session: "D1", User: "david"}
)

func acquire(t *testing.T, p *offlinelock.Plugin, db *gorm.DB, o offlinelock.Owner, target any, a offlinelock.Access) offlinelock.Lock {
	t.Helper()
	l, err := p.Acquire(db.WithContext(offlinelock.WithOwner(context.Background(), o)), target, a)
	require.NoError(t, err)
	return *l
}

// header is the first line of list, show and release.
var header = []string{"RESOURCE", "ID", "ACCESS", "USER", "SESSION", "GENERATION", "ACQUIRED", "EXPIRES", "REASON"}

// row is l as a table row, cell by cell.
func row(l offlinelock.Lock) []string {
	return []string{l.Resource, l.ID, string(l.Access), l.Owner.User, l.Owner.Session,
		strconv.FormatInt(l.Generation, 10), tableTime(l.AcquiredAt), tableTime(l.ExpiresAt), cell(l.Reason)}
}

// assertTable checks that out is the header and exactly the rows want, in
// that order, every cell starting in its header's column.
func assertTable(t *testing.T, out string, want ...offlinelock.Lock) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 1+len(want), "header and one line per lock:\n%s", out)
	starts := columnStarts(lines[0])
	assert.Equal(t, header, strings.Fields(lines[0]))
	for i, l := range want {
		assert.Equal(t, row(l), strings.Fields(lines[1+i]), "row %d", i)
		assert.Equal(t, starts, columnStarts(lines[1+i]), "row %d is aligned with the header:\n%s", i, out)
	}
}

func columnStarts(line string) []int {
	var starts []int
	for i := range line {
		if line[i] != ' ' && (i == 0 || line[i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	return starts
}

// jsonLock is l as list --json prints it: every field, no token.
func jsonLock(l offlinelock.Lock) map[string]any {
	return map[string]any{
		"resource": l.Resource, "id": l.ID, "access": string(l.Access), "user": l.Owner.User, "session": l.Owner.Session,
		"generation": json.Number(strconv.FormatInt(l.Generation, 10)),
		"acquiredAt": l.AcquiredAt.UTC().Format("2006-01-02T15:04:05.999999999Z07:00"),
		"expiresAt":  l.ExpiresAt.UTC().Format("2006-01-02T15:04:05.999999999Z07:00"),
		"reason":     l.Reason,
	}
}

func decodeJSON(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	require.NoError(t, dec.Decode(v), out)
}

// TestCommandsEndToEnd takes locks with the library as two users on two
// resources and runs every command on them.
func TestCommandsEndToEnd(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		table, p := lockTable(t, d)
		on := []string{"--dsn", d.dsn, "--table", table}
		c1 := acquire(t, p, d.db, martin, &customer{ID: 1}, offlinelock.Write)
		c2 := acquire(t, p, d.db, david, &customer{ID: 2}, offlinelock.Write)
		pm := acquire(t, p, d.db, martin, &policy{ID: 1}, offlinelock.Read)
		pd := acquire(t, p, d.db, david, &policy{ID: 1}, offlinelock.Read)
		tokens := []string{c1.Token, c2.Token, pm.Token, pd.Token}
		for _, l := range []*offlinelock.Lock{&c1, &c2, &pm, &pd} {
			l.Token = ""
		}
		noTokens := func(t *testing.T, r result) {
			t.Helper()
			for _, tok := range tokens {
				assert.NotContains(t, r.stdout+r.stderr, tok, "a token was shown")
			}
		}

		t.Run("list", func(t *testing.T) {
			// --sort resource: the locks were taken within a moment, so by
			// since the readers' order would depend on the clock's precision.
			byResource := append([]string{"--sort", "resource"}, on...)
			r := cmd(append([]string{"list"}, byResource...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			assertTable(t, r.stdout, c1, c2, pd, pm) // by resource, id, then user: david before martin
			assert.Empty(t, r.stderr)
			noTokens(t, r)

			r = cmd(append([]string{"list", "--user", "martin"}, byResource...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			assertTable(t, r.stdout, c1, pm)

			r = cmd(append([]string{"list", "--resource", "customers", "--id", "2", "--session", "D1"}, on...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			assertTable(t, r.stdout, c2)

			r = cmd(append([]string{"list", "--expired"}, on...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			assertTable(t, r.stdout)

			r = cmd(append([]string{"list", "--limit", "3"}, byResource...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			assertTable(t, r.stdout, c1, c2, pd)
			assert.Equal(t, "offlinelock list: more than 3 locks match; these are the first 3 (raise --limit, or 0 for all)\n", r.stderr)
			r = cmd(append([]string{"list", "--limit", "4"}, byResource...)...)
			assertTable(t, r.stdout, c1, c2, pd, pm)
			assert.Empty(t, r.stderr, "exactly 4: nothing left out")

			r = cmd(append([]string{"list", "--json", "--resource", "policies"}, byResource...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			var got []map[string]any
			decodeJSON(t, r.stdout, &got)
			assert.Equal(t, []map[string]any{jsonLock(pd), jsonLock(pm)}, got)
			noTokens(t, r)

			r = cmd(append([]string{"list", "--json", "--user", "nobody"}, on...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			assert.Equal(t, "[]\n", r.stdout)
		})

		t.Run("show", func(t *testing.T) {
			r := cmd(append([]string{"show", "policies", "1"}, on...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			assertTable(t, r.stdout, pd, pm) // both readers
			r = cmd(append([]string{"show", "customers", "2", "--json"}, on...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			var got []map[string]any
			decodeJSON(t, r.stdout, &got)
			assert.Equal(t, []map[string]any{jsonLock(c2)}, got)

			r = cmd(append([]string{"show", "customers", "9"}, on...)...)
			assert.Equal(t, result{exitNotFound, "", "offlinelock show: customers 9: nobody holds a lock on it\n"}, r)
		})

		t.Run("stats", func(t *testing.T) {
			r := cmd(append([]string{"stats"}, on...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			assert.Equal(t, fmt.Sprintf(`live locks     4
expired locks  0
expired rows   0
oldest lock    customers 1 write by martin (session M1) since %s until %s
by resource    customers  2
               policies   2
by user        david      2
               martin     2
`, tableTime(c1.AcquiredAt), tableTime(c1.ExpiresAt)), r.stdout)

			r = cmd(append([]string{"stats", "--json"}, on...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			var got map[string]any
			decodeJSON(t, r.stdout, &got)
			assert.Equal(t, map[string]any{
				"live": json.Number("4"), "expiredRows": json.Number("0"), "expiredLocks": json.Number("0"), "oldest": jsonLock(c1),
				"byResource": []any{
					map[string]any{"name": "customers", "locks": json.Number("2")},
					map[string]any{"name": "policies", "locks": json.Number("2")},
				},
				"byUser": []any{
					map[string]any{"name": "david", "locks": json.Number("2")},
					map[string]any{"name": "martin", "locks": json.Number("2")},
				},
			}, got)
		})

		t.Run("release", func(t *testing.T) {
			before, err := p.List(d.db, offlinelock.Filter{})
			require.NoError(t, err)
			for _, args := range [][]string{
				{"release", "customers", "1"},
				{"release", "customers", "1", "--reason", "  ", "--operator", "alice"},
			} {
				r := cmd(append(args, on...)...)
				assert.Equal(t, exitUsage, r.code, "%q", args)
				assert.Contains(t, r.stderr, "offlinelock release: release needs --reason, at most 1000 bytes", "%q", args)
				assert.Empty(t, r.stdout)
			}
			after, err := p.List(d.db, offlinelock.Filter{})
			require.NoError(t, err)
			assert.Equal(t, before, after, "a refused release changes nothing")

			r := cmd(append([]string{"release", "customers", "1", "--reason", "holder crashed", "--operator", "alice"}, on...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			assertTable(t, r.stdout, c1)
			assertLogged(t, r.stderr, "holder crashed", "alice", c1)
			noTokens(t, r)
			left, err := p.List(d.db, offlinelock.Filter{})
			require.NoError(t, err)
			assert.Equal(t, []offlinelock.Lock{c2, pd, pm}, left)

			r = cmd(append([]string{"release", "customers", "1", "--reason", "again", "--operator", "alice"}, on...)...)
			assert.Equal(t, result{exitNotFound, "", "offlinelock release: customers 1: nobody holds a lock on it; nothing released\n"}, r)

			// Both readers of a record at once; the operator from $USER.
			t.Setenv("USER", "bob")
			r = cmd(append([]string{"release", "policies", "1", "--reason", "stale reads", "--json"}, on...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			var got []map[string]any
			decodeJSON(t, r.stdout, &got)
			assert.Equal(t, []map[string]any{jsonLock(pd), jsonLock(pm)}, got)
			assertLogged(t, r.stderr, "stale reads", "bob", pd, pm)
			left, err = p.List(d.db, offlinelock.Filter{})
			require.NoError(t, err)
			assert.Equal(t, []offlinelock.Lock{c2}, left)
		})

		t.Run("sweep", func(t *testing.T) {
			live := acquire(t, p, d.db, martin, &customer{ID: 3}, offlinelock.Write)
			live.Token = ""
			expire(t, d, table, "customers", "2")
			r := cmd(append([]string{"stats", "--json"}, on...)...)
			var s map[string]any
			decodeJSON(t, r.stdout, &s)
			assert.Equal(t, json.Number("1"), s["expiredRows"], "customers 2's row waits for the sweep")
			assert.Equal(t, json.Number("1"), s["expiredLocks"], "as list --expired shows it")

			r = cmd(append([]string{"sweep"}, on...)...)
			assert.Equal(t, result{exitOK, "deleted 1 expired rows\n", ""}, r)
			r = cmd(append([]string{"list", "--expired"}, on...)...)
			assertTable(t, r.stdout)
			r = cmd(append([]string{"list"}, on...)...)
			assertTable(t, r.stdout, live)
			r = cmd(append([]string{"sweep"}, on...)...)
			assert.Equal(t, result{exitOK, "deleted 0 expired rows\n", ""}, r)
		})

		t.Run("guard", func(t *testing.T) {
			// A table of this test's own: other packages' tests share customers.
			require.NoError(t, d.db.Migrator().DropTable(&guardedDoc{}))
			require.NoError(t, d.db.AutoMigrate(&guardedDoc{}))
			t.Cleanup(func() { d.db.Migrator().DropTable(&guardedDoc{}) })
			acquire(t, p, d.db, martin, &guardedDoc{ID: 1}, offlinelock.Write)
			// Only this subtest's table is declared: other packages' tests,
			// running beside this one, drop and make customers and policies
			// meanwhile, and a guard of them could not be shown.
			require.NoError(t, d.db.Exec("DELETE FROM "+table+"_tables WHERE name IN ('customers', 'policies')").Error)
			r := cmd(append([]string{"guard", "install"}, on...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			if d.name == "sqlite" { // SQLite has no guard (docs/guard.md)
				assert.Equal(t, "no table carries the guard\n", r.stdout)
			} else {
				assert.Contains(t, r.stdout, "cli_guarded_docs")
				r = cmd(append([]string{"guard", "status"}, on...)...)
				assert.Contains(t, r.stdout, "cli_guarded_docs")
			}
			r = cmd(append([]string{"guard", "remove"}, on...)...)
			assert.Equal(t, result{exitOK, "no table carries the guard\n", ""}, r)
			r = cmd(append([]string{"guard", "status"}, on...)...)
			if d.name == "sqlite" {
				assert.Equal(t, result{exitOK, "no table carries the guard\n", ""}, r)
			} else {
				// A declared table without its guard: status says so,
				// per table, and exits 4 (issue 48).
				assert.Equal(t, exitUnguard, r.code, r.stderr)
				assert.Contains(t, r.stdout, "cli_guarded_docs: not guarded (dropped)")
				assert.Contains(t, r.stderr, "a declared table is not fully guarded")
				r = cmd(append([]string{"guard", "install"}, on...)...)
				assert.Equal(t, exitOK, r.code, r.stderr)
				assert.Contains(t, r.stdout, "cli_guarded_docs: guarded\n")

				// A lock table whose catalog declares nothing: install
				// guards nothing and says so, with exit code 5.
				b := make([]byte, 5)
				rand.Read(b)
				fresh := []string{"--dsn", d.dsn, "--table", "cli_" + hex.EncodeToString(b)}
				t.Cleanup(func() {
					for _, suffix := range []string{"", "_generation", "_tables", "_notes", "_order"} {
						d.db.Exec("DROP TABLE IF EXISTS " + fresh[3] + suffix)
					}
					d.db.Exec("DROP SEQUENCE IF EXISTS " + fresh[3] + "_generation")
				})
				r = cmd(append([]string{"guard", "install"}, fresh...)...)
				assert.Equal(t, exitNoTables, r.code, r.stderr)
				assert.Contains(t, r.stdout, "no lockable table is declared in the catalog yet")
				r = cmd(append([]string{"guard", "status"}, fresh...)...)
				assert.Equal(t, exitNoTables, r.code, r.stderr)
			}
			r = cmd(append([]string{"guard", "remove"}, on...)...)
			assert.Equal(t, result{exitOK, "no table carries the guard\n", ""}, r)
			r = cmd(append([]string{"guard", "off"}, on...)...)
			assert.Equal(t, exitUsage, r.code)
			assert.Contains(t, r.stderr, "guard takes one of status, install or remove")
		})

		t.Run("dsn from the environment", func(t *testing.T) {
			t.Setenv("OFFLINELOCK_DSN", d.dsn)
			r := cmd("stats", "--json", "--table", table)
			require.Equal(t, exitOK, r.code, r.stderr)
		})

		t.Run("url dsn", func(t *testing.T) {
			want := cmd(append([]string{"list"}, on...)...)
			require.Equal(t, exitOK, want.code, want.stderr)
			got := cmd("list", "--dsn", urlDSN(t, d), "--table", table)
			assert.Equal(t, want, got)
		})

		t.Run("bad input", func(t *testing.T) {
			r := cmd(append([]string{"list", "--user", strings.Repeat("u", 300)}, on...)...)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Contains(t, r.stderr, "offlinelock list: offlinelock: invalid input: user")
			assert.Empty(t, r.stdout)
		})

		t.Run("missing lock table", func(t *testing.T) {
			r := cmd("list", "--dsn", d.dsn, "--table", table+"_nosuch")
			assert.Equal(t, exitFailed, r.code)
			assert.Contains(t, r.stderr, fmt.Sprintf("no lock table %q in this", table+"_nosuch"))
			assert.Contains(t, r.stderr, "check --dsn and --table (the command never creates one)")
			assert.False(t, d.db.Migrator().HasTable(table+"_nosuch"), "nothing was created")
		})
	})
}

// assertLogged checks that stderr has one audit line per released lock,
// with the operator and the reason.
func assertLogged(t *testing.T, stderr, reason, operator string, released ...offlinelock.Lock) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	require.Len(t, lines, len(released), stderr)
	for i, l := range released {
		for _, want := range []string{
			`level=WARN msg="offlinelock: admin action"`, "reason=" + strconv.Quote(reason), "action=force_release",
			"resource=" + l.Resource, "id=" + l.ID, "holder_session=" + l.Owner.Session, "holder_user=" + l.Owner.User,
			"by_session=offlinelock-cli", "by_user=" + operator,
		} {
			assert.Contains(t, lines[i], want)
		}
	}
}

// urlDSN is d's DSN in URL form: sqlite:PATH, postgres://… from the
// key=value form, mysql://… without parseTime (the command adds it).
func urlDSN(t *testing.T, d testDB) string {
	t.Helper()
	switch d.name {
	case "sqlite":
		return "sqlite:" + d.dsn
	case "mysql":
		cfg, err := mysqldriver.ParseDSN(d.dsn)
		require.NoError(t, err)
		u := url.URL{Scheme: "mysql", User: url.UserPassword(cfg.User, cfg.Passwd), Host: cfg.Addr, Path: "/" + cfg.DBName}
		return u.String()
	}
	if strings.Contains(d.dsn, "://") {
		return d.dsn
	}
	kv := map[string]string{}
	for _, f := range strings.Fields(d.dsn) {
		k, v, ok := strings.Cut(f, "=")
		require.True(t, ok && !strings.ContainsAny(v, `'\`), "a plain key=value DSN: %s", d.dsn)
		kv[k] = v
	}
	u := url.URL{Scheme: "postgres", User: url.User(kv["user"]), Host: kv["host"] + ":" + kv["port"], Path: "/" + kv["dbname"]}
	if p, ok := kv["password"]; ok {
		u.User = url.UserPassword(kv["user"], p)
	}
	if m, ok := kv["sslmode"]; ok {
		u.RawQuery = "sslmode=" + m
	}
	return u.String()
}

// TestReleaseInBulk: release --user and --session remove the records
// that user or session locks, only those nobody else shares (skipped,
// named on stderr), and with --older-than only locks taken long enough
// ago; each release is logged with the reason.
func TestReleaseInBulk(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		table, p := lockTable(t, d)
		on := []string{"--dsn", d.dsn, "--table", table, "--operator", "alice"}
		c1 := acquire(t, p, d.db, martin, &customer{ID: 1}, offlinelock.Write)
		c3 := acquire(t, p, d.db, martin, &customer{ID: 3}, offlinelock.Write)
		c2 := acquire(t, p, d.db, david, &customer{ID: 2}, offlinelock.Write)
		pm := acquire(t, p, d.db, martin, &policy{ID: 1}, offlinelock.Read)
		pd := acquire(t, p, d.db, david, &policy{ID: 1}, offlinelock.Read)
		for _, l := range []*offlinelock.Lock{&c1, &c2, &c3, &pm, &pd} {
			l.Token = ""
		}
		for _, args := range [][]string{
			{"release", "--user", "martin"},
			{"release", "customers", "1", "--user", "martin", "--reason", "x"},
			{"release", "customers", "1", "--older-than", "1h", "--reason", "x"},
		} {
			r := cmd(append(args, on...)...)
			assert.Equal(t, exitUsage, r.code, "%q: %s", args, r.stderr)
		}

		r := cmd(append([]string{"release", "--user", "martin", "--older-than", "1h", "--reason", "none so old"}, on...)...)
		require.Equal(t, exitOK, r.code, r.stderr)
		assertTable(t, r.stdout)
		left, err := p.List(d.db, offlinelock.Filter{})
		require.NoError(t, err)
		assert.Len(t, left, 5, "--older-than 1h: nothing that old")

		r = cmd(append([]string{"release", "--user", "martin", "--reason", "martin left"}, on...)...)
		require.Equal(t, exitOK, r.code, r.stderr)
		assertTable(t, r.stdout, c1, c3)
		assert.Contains(t, r.stderr, "skipped policies 1: other sessions hold it too")
		left, err = p.List(d.db, offlinelock.Filter{})
		require.NoError(t, err)
		assert.Equal(t, []offlinelock.Lock{c2, pd, pm}, left)

		r = cmd(append([]string{"release", "--session", david.Session, "--reason", "david's session ended", "--json"}, on...)...)
		require.Equal(t, exitOK, r.code, r.stderr)
		var got []map[string]any
		decodeJSON(t, r.stdout, &got)
		assert.Equal(t, []map[string]any{jsonLock(c2)}, got, "policy 1 is shared with martin's reader")
	})
}
