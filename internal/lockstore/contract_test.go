package lockstore

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// TestStoreContract runs one table of steps against the store of every
// database, and checks the lock table's invariants (invariants_test.go)
// after each step. SQLite always; PostgreSQL with OFFLINELOCK_POSTGRES_DSN
// and MySQL or MariaDB with OFFLINELOCK_MYSQL_DSN, required under CI=true.
func TestStoreContract(t *testing.T) {
	for _, d := range []struct {
		name string
		open func(t *testing.T) (*gorm.DB, Store, string)
	}{
		{"sqlite", openContractSQLite},
		// SQLite's grants of several Write locks through the serialised
		// path instead of grantAll: the same decisions, by other SQL.
		{"sqlite-serialised", func(t *testing.T) (*gorm.DB, Store, string) {
			db, s, table := openContractSQLite(t)
			s.(*sqliteStore).SetGrantAll(false)
			return db, s, table
		}},
		{"postgres", openContractPostgres},
		{"mysql", openContractMySQL},
	} {
		t.Run(d.name, func(t *testing.T) {
			db, s, table := d.open(t)
			runContract(t, db, s, table)
		})
	}
}

// contractTable is the lock table of this test alone: other tests use
// offline_locks or tables of random names.
const contractTable = "ol_contract"

func openContractSQLite(t *testing.T) (*gorm.DB, Store, string) {
	path := filepath.Join(t.TempDir(), "contract.db")
	db := openContractDB(t, sqlite.Open("file:"+path+"?_journal_mode=WAL&_busy_timeout=10000&_txlock=immediate&_foreign_keys=1"))
	return db, NewSQLite(`"`+contractTable+`"`, `"`+contractTable+`_generation"`, `"`+contractTable+`_tables"`, nil),
		dropContractTables(t, db, `"`+contractTable+`"`, `DROP TABLE IF EXISTS "`+contractTable+`_generation"`, `"`+contractTable+`_tables"`)
}

func openContractPostgres(t *testing.T) (*gorm.DB, Store, string) {
	db := openContractDB(t, postgres.Open(contractDSN(t, "OFFLINELOCK_POSTGRES_DSN", "PostgreSQL")))
	return db, NewPostgres(`"`+contractTable+`"`, `"`+contractTable+`_generation"`, `"`+contractTable+`_tables"`, nil),
		dropContractTables(t, db, `"`+contractTable+`"`, `DROP SEQUENCE IF EXISTS "`+contractTable+`_generation"`, `"`+contractTable+`_tables"`)
}

func openContractMySQL(t *testing.T) (*gorm.DB, Store, string) {
	db := openContractDB(t, mysql.Open(contractDSN(t, "OFFLINELOCK_MYSQL_DSN", "MySQL or MariaDB")))
	return db, NewMySQL(contractTable, nil),
		dropContractTables(t, db, "`"+contractTable+"`", "DROP TABLE IF EXISTS `"+contractTable+"_generation`", "`"+contractTable+"_tables`")
}

// contractDSN is the DSN in env: the test is skipped without it, and
// fails under CI=true, which always sets both.
func contractDSN(t *testing.T, env, server string) string {
	dsn := os.Getenv(env)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true needs %s: set %s", server, env)
		}
		t.Skipf("set %s to run the contract on %s", env, server)
	}
	return dsn
}

func openContractDB(t *testing.T, d gorm.Dialector) *gorm.DB {
	db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB, err := db.DB()
	require.NoError(t, err)
	require.NoError(t, sqlDB.Ping())
	t.Cleanup(func() { sqlDB.Close() })
	return db
}

// dropContractTables drops the lock table, its generation counter (by
// dropCounter) and its catalog now and when the test ends, and returns
// the lock table's name.
func dropContractTables(t *testing.T, db *gorm.DB, table, dropCounter, catalog string) string {
	drop := func() {
		for _, q := range []string{`DROP TABLE IF EXISTS ` + table, dropCounter, `DROP TABLE IF EXISTS ` + catalog} {
			require.NoError(t, db.Exec(q).Error, q)
		}
	}
	drop()
	t.Cleanup(drop)
	return table
}

// contract is the state one run of the steps shares.
type contract struct {
	t     *testing.T
	db    *gorm.DB
	s     Store
	c     Conn
	table string // quoted
	mysql bool
	gens  *genHistory

	ttl    time.Duration      // of the last grant
	held   map[string]Granted // the last grant seen of each "session id"
	tokens map[string]string  // the tokens fresh grants returned, by "session id"
}

// contractStep is one operation by a session and what must come of it.
type contractStep struct {
	name string
	run  func(x *contract) (any, error)
	want func(x *contract, got any, err error)
}

const (
	ctTTL   = time.Hour
	ctShort = 50 * time.Millisecond // expires within the test: opWaitExpired waits for the database clock to pass it
)

var ctUsers = map[string]string{"A": "alice", "B": "bob", "C": "carol"}

func ctOwner(session string) Owner { return Owner{Session: session, User: ctUsers[session]} }

func ctKey(id string) Key { return Key{"docs", id} }

func ctKeys(ids ...string) []Key {
	out := make([]Key, len(ids))
	for i, id := range ids {
		out[i] = ctKey(id)
	}
	return out
}

var errContractDenied = errors.New("denied by allow")

// contractSteps is the one table of steps every database runs, in order:
// each step starts from the state the steps before it left.
func contractSteps() []contractStep {
	return []contractStep{
		// Write and Read locks, refusals, re-acquisition.
		{"A writes k1", opGrant("A", Write, ctTTL, "k1"), wantFresh("A", Write, "k1")},
		{"B cannot write k1: A writes it", opGrant("B", Write, ctTTL, "k1"), wantConflict("k1", Write, "A")},
		{"C cannot read k1: A writes it", opGrant("C", Read, ctTTL, "k1"), wantConflict("k1", Read, "A")},
		{"A writes k1 again: same token and generation", opGrant("A", Write, ctTTL, "k1"), wantKept("A", Write, "k1")},
		{"A asks to read k1: keeps its Write lock", opGrant("A", Read, ctTTL, "k1"), wantKept("A", Write, "k1")},
		{"B reads k2", opGrant("B", Read, ctTTL, "k2"), wantFresh("B", Read, "k2")},
		{"C reads k2", opGrant("C", Read, ctTTL, "k2"), wantFresh("C", Read, "k2")},
		{"B reads k2 again: same token and generation", opGrant("B", Read, ctTTL, "k2"), wantKept("B", Read, "k2")},
		{"C renews for 3h: its reader row and k2's key row follow", opRenew("C", 3*time.Hour), wantCount(1)},
		{"A cannot write k2: B and C read it", opGrant("A", Write, ctTTL, "k2"), wantConflict("k2", Write, "B", "C")},
		{"B cannot upgrade k2 while C reads it", opGrant("B", Write, ctTTL, "k2"), wantConflict("k2", Write, "C")},
		{"C releases k2", opRelease("C", "k2"), wantReleased(Read)},
		{"B upgrades k2 to Write, as its only reader", opGrant("B", Write, ctTTL, "k2"), wantUpgraded("B", "k2")},
		{"C cannot read k2: B writes it", opGrant("C", Read, ctTTL, "k2"), wantConflict("k2", Read, "B")},

		// Check and Release.
		{"A checks k1, k3: k1 is A's, k3 free", opCheck("A", "k1", "k3"), wantChecked([]string{"k1"}, []string{"k3"})},
		{"B checks k1: A writes it", opCheck("B", "k1"), wantConflict("k1", Write, "A")},
		{"A checks k2: B writes it", opCheck("A", "k2"), wantConflict("k2", Write, "B")},
		{"B cannot release k1: A's", opRelease("B", "k1"), wantErr(ErrNotLocked)},
		{"C cannot release k3: never locked", opRelease("C", "k3"), wantErr(ErrNotLocked)},

		// Renew and List.
		{"A renews for 2h", opRenew("A", 2*time.Hour), wantCount(1)},
		{"List of A: k1, renewed", opList(Filter{Session: "A"}), wantListedRenewed(2*time.Hour, "k1 write A")},
		{"List of B: k2", opList(Filter{Session: "B"}), wantListed("k2 write B")},

		// All or nothing: a refused grant leaves nothing (the fault check).
		{"A cannot write k3, k2 together: B writes k2", opGrant("A", Write, ctTTL, "k3", "k2"), wantConflict("k2", Write, "B")},
		{"the refused grant left no lock on k3", opList(Filter{ID: "k3"}), wantListed()},
		{"the refused grant left no lock row of k3 in the table", opLockRows("k3"), wantCount(0)},
		{"C cannot read k12, k2 together: B writes k2", opGrant("C", Read, ctTTL, "k12", "k2"), wantConflict("k2", Read, "B")},
		{"the refused grant left no lock row of k12 in the table", opLockRows("k12"), wantCount(0)},
		{"A writes k3, k4 together", opGrant("A", Write, ctTTL, "k3", "k4"), wantFresh("A", Write, "k3", "k4")},
		{"A writes k1, k4 again and k5 new together", opGrant("A", Write, ctTTL, "k1", "k4", "k5"),
			wantGranted("A", Write, []string{"k5"}, []string{"k1", "k4"})},

		// Drop and DropGrant.
		{"A drops k3", opDrop("A", "k3"), wantOK()},
		{"List of A: k1, k4, k5", opList(Filter{Session: "A"}), wantListed("k1 write A", "k4 write A", "k5 write A")},
		{"DropGrant of k4 with k1's token changes nothing", opDropGrant("k4", "A k1"), wantOK()},
		{"k4 is still A's", opList(Filter{ID: "k4"}), wantListed("k4 write A")},
		{"DropGrant of k4 with its token", opDropGrant("k4", "A k4"), wantOK()},
		{"k4 is free", opList(Filter{ID: "k4"}), wantListed()},

		// ReleaseAll, and a key row its readers left.
		{"B reads k6", opGrant("B", Read, ctTTL, "k6"), wantFresh("B", Read, "k6")},
		{"ReleaseAll of B: its Write lock on k2, its Read lock on k6", opReleaseAll("B"), wantCount(2)},
		{"List of B: nothing", opList(Filter{Session: "B"}), wantListed()},
		{"A checks k6: free", opCheck("A", "k6"), wantChecked(nil, []string{"k6"})},
		{"A writes k6", opGrant("A", Write, ctTTL, "k6"), wantFresh("A", Write, "k6")},

		// ByToken.
		{"ByToken finds k6 by its token", opByToken("A k6"), wantLock("k6 write A")},
		{"ByToken of an unknown token", opByToken(""), wantErr(ErrNotLocked)},

		// ForceRelease.
		{"B reads k7", opGrant("B", Read, ctTTL, "k7"), wantFresh("B", Read, "k7")},
		{"C reads k7", opGrant("C", Read, ctTTL, "k7"), wantFresh("C", Read, "k7")},
		{"ForceRelease of k7 refused by allow keeps its readers", opForceRelease("k7", errContractDenied), wantForced(errContractDenied, "k7 read B", "k7 read C")},
		{"k7 is still read by B and C", opList(Filter{ID: "k7"}), wantListed("k7 read B", "k7 read C")},
		{"ForceRelease of k7", opForceRelease("k7", nil), wantForced(nil, "k7 read B", "k7 read C")},
		{"k7 is free", opList(Filter{ID: "k7"}), wantListed()},
		{"ForceRelease of free k7", opForceRelease("k7", nil), wantForced(ErrNotLocked)},

		// Expiry, on the database clock.
		{"A writes k8 for 50ms", opGrant("A", Write, ctShort, "k8"), wantFresh("A", Write, "k8")},
		{"the database clock passes k8's expiry", opWaitExpired("k8"), wantOK()},
		{"A checks k8: free, its lock expired", opCheck("A", "k8"), wantChecked(nil, []string{"k8"})},
		{"List of expired locks: k8", opList(Filter{Expired: true}), wantListed("k8 write A")},
		{"B takes k8 over: a larger generation", opGrant("B", Write, ctTTL, "k8"), wantFresh("B", Write, "k8")},
		{"A cannot release k8: B's now", opRelease("A", "k8"), wantErr(ErrNotLocked)},
		{"A writes k9 for 50ms", opGrant("A", Write, ctShort, "k9"), wantFresh("A", Write, "k9")},
		{"the database clock passes k9's expiry", opWaitExpired("k9"), wantOK()},
		{"A releases expired k9: not locked, and gone", opRelease("A", "k9"), wantErr(ErrNotLocked)},
		{"k9 has no lock, live or expired", opList(Filter{ID: "k9", Expired: true}), wantListed()},
		{"C reads k10 for 50ms", opGrant("C", Read, ctShort, "k10"), wantFresh("C", Read, "k10")},
		{"the database clock passes k10's expiry", opWaitExpired("k10"), wantOK()},
		{"A writes k10 over the expired reader", opGrant("A", Write, ctTTL, "k10"), wantFresh("A", Write, "k10")},

		// Sweep.
		{"A writes k11 for 50ms", opGrant("A", Write, ctShort, "k11"), wantFresh("A", Write, "k11")},
		{"the database clock passes k11's expiry", opWaitExpired("k11"), wantOK()},
		{"Sweep deletes every expired row", opSweep(), wantSwept()},
		{"no expired row is left", opExpiredRows(), wantCount(0)},
		{"no expired lock is listed", opList(Filter{Expired: true}), wantListed()},

		// A load's one-key grant (KeyGranter; Grant where a store has none).
		{"A writes k20", opGrant("A", Write, ctTTL, "k20"), wantFresh("A", Write, "k20")},
		{"A loads k20: kept", opLoadKey("A", Write, "k20"), wantLoaded(false)},
		{"B cannot load k20: A writes it", opLoadKey("B", Write, "k20"), wantConflict("k20", Write, "A")},
		{"C cannot load k20 for reading: A writes it", opLoadKey("C", Read, "k20"), wantConflict("k20", Read, "A")},
		{"A releases k20", opRelease("A", "k20"), wantReleased(Write)},
		{"B loads k21: fresh", opLoadKey("B", Write, "k21"), wantLoaded(true)},
		{"B loads k21 again: kept", opLoadKey("B", Write, "k21"), wantLoaded(false)},
		{"C cannot check k21: B writes it", opCheck("C", "k21"), wantHeldBy("k21", "B")},
		{"B releases k21", opRelease("B", "k21"), wantReleased(Write)},
		{"C loads k22 for reading: fresh", opLoadKey("C", Read, "k22"), wantLoaded(true)},
		{"C releases k22", opRelease("C", "k22"), wantReleased(Read)},

		// The end.
		{"List of all: A's k1, k5, k6, k10, B's k8", opList(Filter{}),
			wantListed("k1 write A", "k10 write A", "k5 write A", "k6 write A", "k8 write B")},
		{"ReleaseAll of A", opReleaseAll("A"), wantCount(4)},
		{"B releases k8", opRelease("B", "k8"), wantReleased(Write)},
		{"no lock is left", opList(Filter{}), wantListed()},
	}
}

func runContract(t *testing.T, db *gorm.DB, s Store, table string) {
	x := &contract{t: t, db: db, s: s, c: NewConn(db, t.Context()), table: table, gens: newGenHistory(),
		held: map[string]Granted{}, tokens: map[string]string{}}
	_, x.mysql = s.(*mysqlStore)
	require.NoError(t, s.Migrate(x.c))
	for i, st := range contractSteps() {
		if !t.Run(st.name, func(t *testing.T) {
			x.t = t
			got, err := st.run(x)
			st.want(x, got, err)
			bad, err := consistent(db, table, x.gens)
			require.NoError(t, err)
			require.Empty(t, bad, "the lock table's invariants after step %d", i+1)
		}) {
			t.FailNow() // the steps after it start from its state
		}
	}
}

// clock is the store's database clock, as SQL.
func (x *contract) clock() string {
	switch s := x.s.(type) {
	case *sqliteStore:
		return s.clock
	case *postgresStore:
		return s.clock
	case *mysqlStore:
		return s.clock
	}
	panic("unknown store")
}

func (x *contract) count(q string, args ...any) (int64, error) {
	var n int64
	err := x.db.Raw(q, args...).Scan(&n).Error
	return n, err
}

// The operations.

func opGrant(session string, access Access, ttl time.Duration, ids ...string) func(*contract) (any, error) {
	return func(x *contract) (any, error) {
		x.ttl = ttl
		return x.s.Grant(x.c, ctKeys(ids...), ctOwner(session), access, ttl)
	}
}

// opLoadKey is a load's grant of one key: the store's KeyGranter where it
// has one, else Grant; it returns whether the lock is new.
func opLoadKey(session string, access Access, id string) func(*contract) (any, error) {
	return func(x *contract) (any, error) {
		if kg, ok := x.s.(KeyGranter); ok {
			return kg.GrantKey(x.c, ctKey(id), ctOwner(session), access, ctTTL)
		}
		got, err := x.s.Grant(x.c, ctKeys(id), ctOwner(session), access, ctTTL)
		return got[ctKey(id)].Fresh, err
	}
}

func opCheck(session string, ids ...string) func(*contract) (any, error) {
	return func(x *contract) (any, error) {
		mine, free, err := x.s.Check(x.c, ctKeys(ids...), ctOwner(session), false)
		return [2][]Key{mine, free}, err
	}
}

func opRelease(session, id string) func(*contract) (any, error) {
	return func(x *contract) (any, error) { return x.s.Release(x.c, ctKey(id), session) }
}

func opRenew(session string, ttl time.Duration) func(*contract) (any, error) {
	return func(x *contract) (any, error) { return x.s.Renew(x.c, session, ttl) }
}

func opList(f Filter) func(*contract) (any, error) {
	return func(x *contract) (any, error) { return x.s.List(x.c, f) }
}

func opDrop(session string, ids ...string) func(*contract) (any, error) {
	return func(x *contract) (any, error) { return nil, x.s.Drop(x.c, ctKeys(ids...), session) }
}

// opDropGrant drops the Write lock on id with the token the fresh grant of
// tokenOf ("session id") returned.
func opDropGrant(id, tokenOf string) func(*contract) (any, error) {
	return func(x *contract) (any, error) {
		tok := x.tokens[tokenOf]
		require.NotEmpty(x.t, tok, "no token of %s", tokenOf)
		return nil, x.s.DropGrant(x.c, ctKey(id), tok)
	}
}

func opReleaseAll(session string) func(*contract) (any, error) {
	return func(x *contract) (any, error) { return x.s.ReleaseAll(x.c, session) }
}

// opByToken looks up the token the fresh grant of tokenOf returned; "" is
// a well-formed token nobody was given.
func opByToken(tokenOf string) func(*contract) (any, error) {
	return func(x *contract) (any, error) {
		tok := strings.Repeat("0", tokenLen)
		if tokenOf != "" {
			tok = x.tokens[tokenOf]
			require.NotEmpty(x.t, tok, "no token of %s", tokenOf)
		}
		return x.s.ByToken(x.c, tok)
	}
}

// opForceRelease force-releases id with an allow that returns deny, and
// returns the holders allow was shown.
func opForceRelease(id string, deny error) func(*contract) (any, error) {
	return func(x *contract) (any, error) {
		var shown []Lock
		err := x.s.ForceRelease(x.c, ctKey(id), func(now time.Time, held []Lock) error {
			assert.False(x.t, now.IsZero(), "allow's now")
			shown = append(shown, held...)
			return deny
		})
		return shown, err
	}
}

// opSweep sweeps once (the few rows here are one batch), and returns how
// many rows had expired before it and how many it deleted.
func opSweep() func(*contract) (any, error) {
	return func(x *contract) (any, error) {
		expired, err := x.count(`SELECT COUNT(*) FROM ` + x.table + ` WHERE expires_at <= ` + x.clock())
		if err != nil {
			return nil, err
		}
		n, more, err := x.s.Sweep(x.c, &SweepCursor{})
		if err == nil && more {
			err = errors.New("Sweep says more rows wait, in a table of a few rows")
		}
		return [2]int64{expired, n}, err
	}
}

// opLockRows counts the raw lock rows of id (its Write key row and its
// reader rows; a free key row, which MySQL may keep, is no lock).
func opLockRows(id string) func(*contract) (any, error) {
	return func(x *contract) (any, error) {
		return x.count(`SELECT COUNT(*) FROM `+x.table+` WHERE resource = ? AND lock_id = ? AND `+isLockRow, "docs", id)
	}
}

func opExpiredRows() func(*contract) (any, error) {
	return func(x *contract) (any, error) {
		return x.count(`SELECT COUNT(*) FROM ` + x.table + ` WHERE expires_at <= ` + x.clock())
	}
}

// opWaitExpired polls the database clock until every row of id has expired
// on it: expiry is decided by the database's clock, not the test's.
func opWaitExpired(id string) func(*contract) (any, error) {
	return func(x *contract) (any, error) {
		deadline := time.Now().Add(10 * time.Second)
		for {
			live, err := x.count(`SELECT COUNT(*) FROM `+x.table+` WHERE resource = ? AND lock_id = ? AND expires_at > `+x.clock(), "docs", id)
			if err != nil || live == 0 {
				return nil, err
			}
			if time.Now().After(deadline) {
				return nil, errors.New("the database clock did not pass the expiry of " + id + " in 10s")
			}
			time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
		}
	}
}

// The outcomes.

func wantOK() func(*contract, any, error) {
	return func(x *contract, _ any, err error) { require.NoError(x.t, err) }
}

func wantCount(want int64) func(*contract, any, error) {
	return func(x *contract, got any, err error) {
		require.NoError(x.t, err)
		assert.Equal(x.t, want, got)
	}
}

func wantErr(target error) func(*contract, any, error) {
	return func(x *contract, _ any, err error) { require.ErrorIs(x.t, err, target) }
}

// wantFresh: new locks, each with a new token and a generation larger than
// any the record had.
func wantFresh(session string, access Access, ids ...string) func(*contract, any, error) {
	return wantGranted(session, access, ids, nil)
}

// wantKept: locks the session held already, with their token (not returned),
// generation and acquisition, and an expiry never shortened.
func wantKept(session string, access Access, ids ...string) func(*contract, any, error) {
	return wantGranted(session, access, nil, ids)
}

func wantGranted(session string, access Access, freshIDs, keptIDs []string) func(*contract, any, error) {
	return func(x *contract, got any, err error) {
		t := x.t
		require.NoError(t, err)
		gs := got.(map[Key]Granted)
		require.ElementsMatch(t, ctKeys(append(slices.Clone(freshIDs), keptIDs...)...), slices.Collect(maps.Keys(gs)))
		for _, id := range freshIDs {
			g := gs[ctKey(id)]
			ctAssertLock(t, g.Lock, id, access, session)
			assert.True(t, g.Fresh, "%s: Fresh", id)
			assert.True(t, WellFormedToken(g.Token), "%s: token %q", id, g.Token)
			assert.Equal(t, tokenHash(g.Token), g.Hash, "%s: Hash", id)
			assert.Greater(t, g.Generation, x.gens.max[ctKey(id)], "%s: generation", id)
			if d := g.ExpiresAt.Sub(g.AcquiredAt); d < x.ttl || d > x.ttl+time.Second {
				t.Errorf("%s: expires %v after its acquisition, want %v", id, d, x.ttl)
			}
			x.held[session+" "+id], x.tokens[session+" "+id] = g, g.Token
		}
		for _, id := range keptIDs {
			g, before := gs[ctKey(id)], x.held[session+" "+id]
			ctAssertLock(t, g.Lock, id, access, session)
			assert.False(t, g.Fresh, "%s: Fresh", id)
			assert.Empty(t, g.Token, "%s: a kept lock's token is not returned", id)
			assert.Equal(t, before.Hash, g.Hash, "%s: Hash", id)
			assert.Equal(t, before.Generation, g.Generation, "%s: generation", id)
			assert.True(t, before.AcquiredAt.Equal(g.AcquiredAt), "%s: acquired %v, was %v", id, g.AcquiredAt, before.AcquiredAt)
			assert.False(t, g.ExpiresAt.Before(before.ExpiresAt), "%s: expiry shortened from %v to %v", id, before.ExpiresAt, g.ExpiresAt)
			x.held[session+" "+id] = g
		}
	}
}

// wantUpgraded: the only reader's lock became Write, with its token (not
// returned again) and a new generation.
func wantUpgraded(session, id string) func(*contract, any, error) {
	return func(x *contract, got any, err error) {
		t := x.t
		require.NoError(t, err)
		gs := got.(map[Key]Granted)
		require.Len(t, gs, 1)
		g, before := gs[ctKey(id)], x.held[session+" "+id]
		ctAssertLock(t, g.Lock, id, Write, session)
		assert.True(t, g.Fresh, "an upgrade is fresh")
		assert.Empty(t, g.Token, "an upgrade keeps the token its client has")
		assert.Equal(t, before.Hash, g.Hash, "the read lock's token")
		assert.Greater(t, g.Generation, x.gens.max[ctKey(id)], "generation")
		x.held[session+" "+id] = g
	}
}

func ctAssertLock(t *testing.T, l Lock, id string, access Access, session string) {
	t.Helper()
	assert.Equal(t, "docs", l.Resource, id)
	assert.Equal(t, id, l.ID)
	assert.Equal(t, access, l.Access, id)
	assert.Equal(t, ctOwner(session), l.Owner, id)
}

// wantConflict: a *Conflict on id for wanted, naming the sessions holding it,
// sorted, with the generations they were granted and without tokens.
func wantConflict(id string, wanted Access, holders ...string) func(*contract, any, error) {
	return func(x *contract, _ any, err error) {
		t := x.t
		var cf *Conflict
		require.ErrorAs(t, err, &cf)
		assert.Equal(t, "docs", cf.Resource)
		assert.Equal(t, id, cf.ID)
		assert.Equal(t, wanted, cf.Wanted)
		var sessions []string
		for _, h := range cf.Holders {
			sessions = append(sessions, h.Owner.Session)
			held := x.held[h.Owner.Session+" "+id]
			ctAssertLock(t, h, id, held.Access, h.Owner.Session)
			assert.Empty(t, h.Token, "a holder's token")
			assert.Equal(t, held.Generation, h.Generation, "%s's generation", h.Owner.Session)
		}
		slices.Sort(sessions)
		assert.Equal(t, holders, sessions, "holders")
	}
}

// wantHeldBy: a refusal naming session as id's one holder.
func wantHeldBy(id, session string) func(*contract, any, error) {
	return func(x *contract, _ any, err error) {
		var cf *Conflict
		require.ErrorAs(x.t, err, &cf)
		require.Len(x.t, cf.Holders, 1)
		assert.Equal(x.t, id, cf.ID)
		assert.Equal(x.t, session, cf.Holders[0].Owner.Session)
	}
}

// wantLoaded: a load's grant that succeeded, new or not.
func wantLoaded(fresh bool) func(*contract, any, error) {
	return func(x *contract, got any, err error) {
		require.NoError(x.t, err)
		assert.Equal(x.t, fresh, got.(bool), "fresh")
	}
}

func wantChecked(mine, free []string) func(*contract, any, error) {
	return func(x *contract, got any, err error) {
		require.NoError(x.t, err)
		mf := got.([2][]Key)
		assert.Equal(x.t, ctIDs(ctKeys(mine...)), ctIDs(mf[0]), "mine")
		assert.Equal(x.t, ctIDs(ctKeys(free...)), ctIDs(mf[1]), "free")
	}
}

func ctIDs(ks []Key) []string {
	out := []string{}
	for _, k := range ks {
		out = append(out, k.Resource+"/"+k.ID)
	}
	return out
}

func wantReleased(access Access) func(*contract, any, error) {
	return func(x *contract, got any, err error) {
		require.NoError(x.t, err)
		held := got.(time.Duration)
		if x.mysql && access == Write {
			assert.Equal(x.t, HeldUnknown, held, "MySQL does not learn a Write lock's hold time")
			return
		}
		assert.True(x.t, held >= 0 && held < time.Hour, "held %v", held)
	}
}

// wantListed: exactly these locks, as "id access session", in List's order,
// without tokens and with the generations they were granted.
func wantListed(want ...string) func(*contract, any, error) {
	return func(x *contract, got any, err error) {
		require.NoError(x.t, err)
		assert.Equal(x.t, append([]string{}, want...), ctDescribe(x, got.([]Lock)))
	}
}

// wantListedRenewed is wantListed, with each lock expiring at least renewal after
// its grant.
func wantListedRenewed(renewal time.Duration, want ...string) func(*contract, any, error) {
	return func(x *contract, got any, err error) {
		wantListed(want...)(x, got, err)
		for _, l := range got.([]Lock) {
			g := x.held[l.Owner.Session+" "+l.ID]
			assert.False(x.t, l.ExpiresAt.Before(g.AcquiredAt.Add(renewal)), "%s expires %v, renewed for %v after %v", l.ID, l.ExpiresAt, renewal, g.AcquiredAt)
		}
	}
}

func wantLock(want string) func(*contract, any, error) {
	return func(x *contract, got any, err error) {
		require.NoError(x.t, err)
		assert.Equal(x.t, []string{want}, ctDescribe(x, []Lock{*got.(*Lock)}))
	}
}

// wantForced: ForceRelease returned err (nil: none) after showing allow the
// holders want (none where err is ErrNotLocked).
func wantForced(err error, want ...string) func(*contract, any, error) {
	return func(x *contract, got any, gotErr error) {
		if err == nil {
			require.NoError(x.t, gotErr)
		} else {
			require.ErrorIs(x.t, gotErr, err)
		}
		shown := got.([]Lock)
		slices.SortFunc(shown, func(a, b Lock) int { return strings.Compare(a.Owner.Session, b.Owner.Session) })
		assert.Equal(x.t, append([]string{}, want...), ctDescribe(x, shown))
	}
}

// wantSwept: Sweep deleted as many rows as had expired, at least one.
func wantSwept() func(*contract, any, error) {
	return func(x *contract, got any, err error) {
		require.NoError(x.t, err)
		n := got.([2]int64)
		assert.Positive(x.t, n[0], "expired rows before the sweep")
		assert.Equal(x.t, n[0], n[1], "rows swept")
	}
}

// ctDescribe is locks as "id access session", checking each against the
// grant the test saw of it: no token, its owner and generation.
func ctDescribe(x *contract, locks []Lock) []string {
	out := []string{}
	for _, l := range locks {
		out = append(out, l.ID+" "+string(l.Access)+" "+l.Owner.Session)
		g, ok := x.held[l.Owner.Session+" "+l.ID]
		if !assert.True(x.t, ok, "%s: a lock the test never granted", l.ID) {
			continue
		}
		ctAssertLock(x.t, l, l.ID, g.Access, l.Owner.Session)
		assert.Empty(x.t, l.Token, "%s: token", l.ID)
		assert.Equal(x.t, g.Generation, l.Generation, "%s: generation", l.ID)
	}
	return out
}
