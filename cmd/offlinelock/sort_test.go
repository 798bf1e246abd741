package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
)

// sortedLock is one lock of TestListSorts: its holder and record, and the
// times the test gives it (UTC, as SQLite stores them), all distinct but
// two, so that each order is the test's, not the clock's.
type sortedLock struct {
	name         string
	owner        offlinelock.Owner
	target       any
	access       offlinelock.Access
	since, until string
}

// sortedLocks are six locks whose orders by each column all differ, and
// differ from List's own (by resource, id and holder) in their first two,
// so that sorting List's first n instead of all would show.
var sortedLocks = []sortedLock{
	{"c1", offlinelock.Owner{Session: "C1", User: "carol"}, &customer{ID: 1}, offlinelock.Write, "2001-01-01 00:00:05.000", "2100-01-01 00:00:02.000"},
	{"c10", offlinelock.Owner{Session: "A1", User: "alice"}, &customer{ID: 10}, offlinelock.Write, "2001-01-01 00:00:04.000", "2100-01-01 00:00:04.000"},
	{"c2", offlinelock.Owner{Session: "E1", User: "eve"}, &customer{ID: 2}, offlinelock.Write, "2001-01-01 00:00:02.000", "2100-01-01 00:00:05.000"},
	// Taken at the same time as c10: the tie goes by resource, then id as
	// text, "10" before "3".
	{"c3", offlinelock.Owner{Session: "B1", User: "bob"}, &customer{ID: 3}, offlinelock.Write, "2001-01-01 00:00:04.000", "2100-01-01 00:00:06.000"},
	// Bob again: by user his two locks go by resource, customers first.
	{"p1bob", offlinelock.Owner{Session: "B1", User: "bob"}, &policy{ID: 1}, offlinelock.Read, "2001-01-01 00:00:03.000", "2100-01-01 00:00:01.000"},
	{"p1dave", offlinelock.Owner{Session: "D1", User: "dave"}, &policy{ID: 1}, offlinelock.Read, "2001-01-01 00:00:01.000", "2100-01-01 00:00:03.000"},
}

// TestListSorts: list orders by each of the console's columns, since by
// default, and --limit keeps the first n of that order over every lock that
// matches, not a sort of List's first n; an unknown column is a usage
// error.
func TestListSorts(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		table, p := lockTable(t, d)
		on := []string{"--dsn", d.dsn, "--table", table}
		byName := takeSorted(t, d, table, p)
		all := func(names ...string) []offlinelock.Lock {
			out := make([]offlinelock.Lock, len(names))
			for i, n := range names {
				out[i] = byName[n]
			}
			return out
		}

		for _, c := range []struct {
			sort     string // "" for none
			resource string
			limit    int // -1 for none (the default, 1000)
			want     []string
		}{
			{"", "", -1, []string{"p1dave", "c2", "p1bob", "c10", "c3", "c1"}},
			{"since", "", -1, []string{"p1dave", "c2", "p1bob", "c10", "c3", "c1"}},
			{"until", "", -1, []string{"p1bob", "c1", "p1dave", "c10", "c2", "c3"}},
			{"resource", "", -1, []string{"c1", "c10", "c2", "c3", "p1bob", "p1dave"}},
			{"user", "", -1, []string{"c10", "c3", "p1bob", "c1", "p1dave", "c2"}},
			{"", "", 2, []string{"p1dave", "c2"}},
			{"since", "", 2, []string{"p1dave", "c2"}},
			{"until", "", 2, []string{"p1bob", "c1"}},
			{"resource", "", 2, []string{"c1", "c10"}},
			{"user", "", 2, []string{"c10", "c3"}},
			{"since", "", 5, []string{"p1dave", "c2", "p1bob", "c10", "c3"}},
			{"since", "customers", 1, []string{"c2"}},
			{"user", "customers", 3, []string{"c10", "c3", "c1"}},
			{"until", "", 6, []string{"p1bob", "c1", "p1dave", "c10", "c2", "c3"}},
			{"since", "", 0, []string{"p1dave", "c2", "p1bob", "c10", "c3", "c1"}},
		} {
			args := append([]string{"list"}, on...)
			if c.sort != "" {
				args = append(args, "--sort", c.sort)
			}
			if c.resource != "" {
				args = append(args, "--resource", c.resource)
			}
			if c.limit >= 0 {
				args = append(args, "--limit", strconv.Itoa(c.limit))
			}
			name := strings.Join(args[len(on)+1:], " ")
			if name == "" {
				name = "defaults"
			}
			t.Run(name, func(t *testing.T) {
				r := cmd(args...)
				require.Equal(t, exitOK, r.code, r.stderr)
				assertTable(t, r.stdout, all(c.want...)...)
				matching := 6
				if c.resource == "customers" {
					matching = 4
				}
				if c.limit > 0 && c.limit < matching {
					assert.Equal(t, fmt.Sprintf("offlinelock list: more than %d locks match; these are the first %d (raise --limit, or 0 for all)\n", c.limit, c.limit), r.stderr)
					assertNotNaive(t, p, d, c.sort, c.resource, c.limit, all(c.want...))
				} else {
					assert.Empty(t, r.stderr)
				}
			})
		}

		t.Run("json", func(t *testing.T) {
			r := cmd(append([]string{"list", "--json", "--sort", "until", "--limit", "3"}, on...)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			var got []map[string]any
			decodeJSON(t, r.stdout, &got)
			var want []map[string]any
			for _, l := range all("p1bob", "c1", "p1dave") {
				want = append(want, jsonLock(l))
			}
			assert.Equal(t, want, got)
		})

		t.Run("unknown column", func(t *testing.T) {
			before, err := p.List(d.db, offlinelock.Filter{})
			require.NoError(t, err)
			for _, bad := range []string{"oldest", "", "-since", "USER"} {
				r := cmd(append([]string{"list", "--sort", bad, "--limit", "2"}, on...)...)
				assert.Equal(t, exitUsage, r.code, "%q", bad)
				want := fmt.Sprintf("offlinelock list: --sort %q is not one of resource, since, until, user\n", bad)
				assert.True(t, strings.HasPrefix(r.stderr, want+"usage: offlinelock list "), "%q: stderr starts with %q:\n%s", bad, want, r.stderr)
				assert.Empty(t, r.stdout, "%q", bad)
			}
			after, err := p.List(d.db, offlinelock.Filter{})
			require.NoError(t, err)
			assert.Equal(t, before, after, "a refused list changes nothing")
		})
	})
}

// takeSorted takes sortedLocks with the library, gives them their times
// and returns them as List reads them back, by name.
func takeSorted(t *testing.T, d testDB, table string, p *offlinelock.Plugin) map[string]offlinelock.Lock {
	t.Helper()
	for _, s := range sortedLocks {
		l := acquire(t, p, d.db, s.owner, s.target, s.access)
		setTimes(t, d, table, l, s.since, s.until)
	}
	held, err := p.List(d.db, offlinelock.Filter{})
	require.NoError(t, err)
	require.Len(t, held, len(sortedLocks))
	byName := map[string]offlinelock.Lock{}
	for _, s := range sortedLocks {
		for _, l := range held {
			if l.Owner == s.owner && l.Resource+" "+l.ID == recordOf(s.target) {
				byName[s.name] = l
			}
		}
	}
	require.Len(t, byName, len(sortedLocks), "every lock read back")
	return byName
}

// recordOf is target's record as List names it: resource and id.
func recordOf(target any) string {
	switch v := target.(type) {
	case *customer:
		return fmt.Sprintf("customers %d", v.ID)
	case *policy:
		return fmt.Sprintf("policies %d", v.ID)
	}
	panic(fmt.Sprintf("no record for %T", target))
}

// setTimes sets the acquired_at and expires_at of l's row to since and
// until: literals the three databases all read as times, in the text form
// SQLite's lock table keeps.
func setTimes(t *testing.T, d testDB, table string, l offlinelock.Lock, since, until string) {
	t.Helper()
	q := `"` + table + `"`
	if d.name == "mysql" {
		q = "`" + table + "`"
	}
	res := d.db.Exec(`UPDATE `+q+` SET acquired_at = '`+since+`', expires_at = '`+until+`' WHERE resource = ? AND lock_id = ? AND session = ?`,
		l.Resource, l.ID, l.Owner.Session)
	require.NoError(t, res.Error)
	require.EqualValues(t, 1, res.RowsAffected, "one row for %s %s %s", l.Resource, l.ID, l.Owner.Session)
}

// assertNotNaive checks that the data tells list's answer from the naive
// one, List's first n (by resource, id and holder) sorted afterwards.
func assertNotNaive(t *testing.T, p *offlinelock.Plugin, d testDB, sort, resource string, n int, want []offlinelock.Lock) {
	t.Helper()
	if sort == "" {
		sort = defaultSort
	}
	if sort == "resource" {
		return // List's own order: both answers agree
	}
	first, err := p.List(d.db, offlinelock.Filter{Resource: resource, Limit: n})
	require.NoError(t, err)
	sortLocks(first, sort)
	assert.NotEqual(t, want, first, "sorting List's first %d would give another answer", n)
}
