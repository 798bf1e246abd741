package lockstore

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
)

// The lock table's invariants, checked with plain SQL on the raw table
// after every step of the contract test, as x/net/webdav's lock tests check
// consistent() (sql.go documents the layout):
//
//	(a) at most one key row (holder = '') per record;
//	(b) no reader row (holder <> '') for a record whose key row is a Write
//	    lock (access 'write');
//	(c) a key row's expiry is at least each of its readers' (live or not:
//	    the key row is never shortened below a reader, so the sweep never
//	    removes it before them);
//	(d) every reader row has a key row, in 'read' mode: a free key row
//	    (access '', which MySQL keeps for a day after a lock ends) never has
//	    readers either;
//	(e) a record's generations never go backwards: every lock row (a Write
//	    key row or a reader row) carries a generation seen on that record
//	    before, or a larger one than any seen on it;
//	(f) each row has its kind's shape: a Write key row and a reader row
//	    have a session, a token hash (64 hex digits, never a token) and a
//	    generation, a reader row's holder is its session, and a read-mode or
//	    free key row has no session or token (it may keep the record's last
//	    generation: MariaDB's bulk release carries the readers' onto it); no
//	    row expires before it was acquired.

// contractRow is one raw row of the lock table.
type contractRow struct {
	resource, lockID, holder, access, session, user, token string
	generation                                             int64
	acquired, expires                                      time.Time
}

func (r contractRow) key() Key { return Key{r.resource, r.lockID} }

func (r contractRow) String() string {
	return fmt.Sprintf("(%s, %s, holder %q, access %q, session %q, generation %d, acquired %s, expires %s)",
		r.resource, r.lockID, r.holder, r.access, r.session, r.generation,
		r.acquired.Format(time.RFC3339Nano), r.expires.Format(time.RFC3339Nano))
}

// lockRow says whether r is a lock: a Write key row or a reader row.
func (r contractRow) lockRow() bool { return r.holder != "" || r.access == string(Write) }

// readTable reads every row of the lock table (quoted name table) in
// primary-key order.
func readLockTable(db *gorm.DB, table string) ([]contractRow, error) {
	rows, err := db.Raw(`SELECT resource, lock_id, holder, access, session, user_name, token, generation, acquired_at, expires_at FROM ` +
		table + ` ORDER BY resource, lock_id, holder`).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []contractRow
	for rows.Next() {
		var r contractRow
		var acquired, expires any
		if err := rows.Scan(&r.resource, &r.lockID, &r.holder, &r.access, &r.session, &r.user, &r.token, &r.generation,
			&acquired, &expires); err != nil {
			return nil, err
		}
		if r.acquired, err = scanTime(acquired); err != nil {
			return nil, err
		}
		if r.expires, err = scanTime(expires); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// genHistory remembers, per record, the generations its lock rows have
// carried: invariant (e) across steps.
type genHistory struct {
	seen map[Key]map[int64]bool
	max  map[Key]int64
}

func newGenHistory() *genHistory {
	return &genHistory{seen: map[Key]map[int64]bool{}, max: map[Key]int64{}}
}

// consistent checks the invariants on the lock table's rows and returns
// the violations, none when it holds; gens is updated with the lock rows'
// generations.
func consistent(db *gorm.DB, table string, gens *genHistory) ([]string, error) {
	rows, err := readLockTable(db, table)
	if err != nil {
		return nil, err
	}
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }

	keyRows := map[Key][]contractRow{}
	readers := map[Key][]contractRow{}
	for _, r := range rows {
		if r.holder == "" {
			keyRows[r.key()] = append(keyRows[r.key()], r)
		} else {
			readers[r.key()] = append(readers[r.key()], r)
		}
		// (f) each row's shape.
		if r.expires.Before(r.acquired) {
			fail("(f) row %s expires before it was acquired", r)
		}
		switch {
		case r.lockRow():
			if r.session == "" || len(r.token) != hashLen || !isHex(r.token) || r.generation <= 0 {
				fail("(f) lock row %s lacks a session, a token hash (token %q) or a generation", r, r.token)
			}
			if r.holder != "" && (r.holder != r.session || r.access != string(Read)) {
				fail("(f) reader row %s is not a Read lock of its holder", r)
			}
		case r.access == string(Read) || r.access == accessFree:
			if r.session != "" || r.user != "" || r.token != "" || r.generation < 0 {
				fail("(f) key row %s in mode %q has an owner or a token", r, r.access)
			}
		default:
			fail("(f) key row %s has access %q", r, r.access)
		}
	}
	for k, krs := range keyRows {
		if len(krs) > 1 { // (a); the primary key makes this impossible, and the check cheap
			fail("(a) %v has %d key rows", k, len(krs))
		}
	}
	for k, rs := range readers {
		krs := keyRows[k]
		if len(krs) == 0 {
			fail("(d) %v has %d reader rows and no key row", k, len(rs))
			continue
		}
		kr := krs[0]
		switch kr.access {
		case string(Write):
			fail("(b) %v has reader rows %v under the Write lock %s", k, rs, kr)
		case string(Read):
		default:
			fail("(d) %v has reader rows %v under key row %s in mode %q", k, rs, kr, kr.access)
		}
		for _, r := range rs {
			if kr.expires.Before(r.expires) {
				fail("(c) key row %s expires before its reader %s", kr, r)
			}
		}
	}
	// (e) generations, against the steps before; then remembered.
	fresh := map[Key][]int64{}
	for _, r := range rows {
		if !r.lockRow() {
			continue
		}
		k := r.key()
		if !gens.seen[k][r.generation] && r.generation <= gens.max[k] {
			fail("(e) %v went back to generation %d after %d: row %s", k, r.generation, gens.max[k], r)
		}
		fresh[k] = append(fresh[k], r.generation)
	}
	for k, gs := range fresh {
		if gens.seen[k] == nil {
			gens.seen[k] = map[int64]bool{}
		}
		for _, g := range gs {
			gens.seen[k][g] = true
		}
		gens.max[k] = max(gens.max[k], slices.Max(gs))
	}
	slices.Sort(bad)
	return bad, nil
}

// TestConsistentCatchesViolations shows that consistent is not vacuous:
// rows written by hand that break each invariant are reported, under the
// invariant's letter. (a) cannot be broken: the primary key (resource,
// lock_id, holder) forbids a second key row.
func TestConsistentCatchesViolations(t *testing.T) {
	db, s, table := openContractSQLite(t)
	require.NoError(t, s.Migrate(NewConn(db, t.Context())))
	hash := tokenHash(strings.Repeat("1", tokenLen))
	const later, sooner = "2999-01-01 00:00:00.000", "2998-01-01 00:00:00.000"
	put := func(id, holder, access, session, token string, generation int64, expires string) {
		t.Helper()
		user := ""
		if session != "" {
			user = "u"
		}
		require.NoError(t, db.Exec(`INSERT INTO `+table+` (`+lockColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, '2000-01-01 00:00:00.000', ?)`,
			"docs", id, holder, access, session, user, token, generation, expires).Error)
	}
	gens := newGenHistory()
	check := func(want ...string) {
		t.Helper()
		bad, err := consistent(db, table, gens)
		require.NoError(t, err)
		var got []string
		for _, b := range bad {
			got = append(got, b[:3])
		}
		assert.Equal(t, want, got, "violations: %q", bad)
		require.NoError(t, db.Exec(`DELETE FROM `+table).Error)
	}

	put("w", "", "write", "A", hash, 10, later)
	put("r", "", "read", "", "", 0, later)
	put("r", "B", "read", "B", hash, 11, later)
	check() // a Write lock, and a Read lock with its key row

	put("w", "", "write", "A", hash, 12, later)
	put("w", "B", "read", "B", hash, 13, later)
	check("(b)")

	put("r", "", "read", "", "", 0, sooner)
	put("r", "B", "read", "B", hash, 14, later)
	check("(c)")

	put("r", "B", "read", "B", hash, 15, later)
	check("(d)")

	put("f", "", "", "", "", 0, later)
	put("f", "B", "read", "B", hash, 16, later)
	check("(d)")

	put("w", "", "write", "A", hash, 5, later) // w had 10 and 12
	check("(e)")

	put("w", "", "write", "A", strings.Repeat("1", tokenLen), 20, later) // a token, not its hash
	check("(f)")
}
