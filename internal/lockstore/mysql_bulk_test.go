package lockstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// bulkStore is a MariaDB lock store on a table of its own, for the tests
// that call the store directly; skipped without OFFLINELOCK_MYSQL_DSN
// (failed under CI=true) or on a server without the bulk statements.
func bulkStore(t *testing.T) (*mysqlStore, *gorm.DB) {
	dsn := os.Getenv("OFFLINELOCK_MYSQL_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true needs MySQL or MariaDB: set OFFLINELOCK_MYSQL_DSN")
		}
		t.Skip("needs OFFLINELOCK_MYSQL_DSN")
	}
	db, err := gorm.Open(mysql.Open(dsn), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB, err := db.DB()
	require.NoError(t, err)
	t.Cleanup(func() { sqlDB.Close() })
	b := make([]byte, 6)
	rand.Read(b)
	name := "ol_bulk_" + hex.EncodeToString(b)
	s := NewMySQL(name, nil).(*mysqlStore)
	t.Cleanup(func() {
		db.Exec("DROP TABLE IF EXISTS `" + name + "`, `" + name + "_generation`, `" + name + "_tables`")
	})
	require.NoError(t, s.Migrate(NewConn(db, context.Background())))
	if !s.bulk.Load() {
		t.Skip("not MariaDB 10.6 or later")
	}
	return s, db
}

// statementCount is a GORM logger that counts statements.
type statementCount struct {
	logger.Interface
	n atomic.Int64
}

func (c *statementCount) LogMode(logger.LogLevel) logger.Interface { return c }
func (c *statementCount) Trace(context.Context, time.Time, func() (string, int64), error) {
	c.n.Add(1)
}

// TestMySQLBulkGrantSpansStatementsAllOrNothing grants more keys than one
// statement of each kind takes (mysqlJSONMax bytes to create, and
// mysqlGrantKeys keys to grant): at most two statements create the Key
// rows, two write the locks, one takes the generations; and a Key held by
// another session in the second half refuses them all.
func TestMySQLBulkGrantSpansStatementsAllOrNothing(t *testing.T) {
	s, db := bulkStore(t)
	keys := make([]Key, mysqlGrantKeys+500)
	rows := make([]row, len(keys))
	for i := range keys {
		keys[i] = Key{"docs", fmt.Sprintf("%0120d", i)}
		rows[i] = row{Lock: Lock{Resource: keys[i].Resource, ID: keys[i].ID}}
	}
	require.Len(t, pkJSON(rows), 2, "the keys take two statements to create")
	count := &statementCount{Interface: logger.Discard}
	c := NewConn(db.Session(&gorm.Session{Logger: count}), context.Background())
	martin, david := Owner{Session: "M1", User: "martin"}, Owner{Session: "D1", User: "david"}

	got, err := s.Grant(c, keys, martin, Write, time.Minute)
	require.NoError(t, err)
	require.Len(t, got, len(keys))
	// The creations are best effort, each bounded by mysqlCreateWait (a
	// loaded machine can pass it, and the grant then inserts the rest).
	assert.GreaterOrEqual(t, count.n.Load(), int64(3), "1 generation statement, 2 grants")
	assert.LessOrEqual(t, count.n.Load(), int64(5), "at most 2 creations, 1 generation statement, 2 grants")
	last := keys[len(keys)-1]
	gens := map[int64]bool{}
	for _, k := range keys {
		g := got[k]
		assert.True(t, g.Fresh, "%s is a fresh grant", k.ID)
		assert.Equal(t, tokenHash(g.Token), g.Hash)
		gens[g.Generation] = true
	}
	assert.Len(t, gens, len(keys), "every lock its own generation")

	n, err := s.ReleaseAll(c, martin.Session)
	require.NoError(t, err)
	require.EqualValues(t, len(keys), n)
	held, err := s.Grant(c, keys[len(keys)-1:], david, Write, time.Minute)
	require.NoError(t, err)
	_, err = s.Grant(c, keys, martin, Write, time.Minute)
	var le *Conflict
	require.True(t, errors.As(err, &le), "%v", err)
	assert.Equal(t, last.ID, le.ID)
	require.Len(t, le.Holders, 1)
	assert.Equal(t, david, le.Holders[0].Owner)
	assert.Equal(t, held[last].Generation, le.Holders[0].Generation)
	mine, err := s.List(c, Filter{Session: martin.Session})
	require.NoError(t, err)
	assert.Empty(t, mine, "nothing Granted, the first statement's locks included")
}

// TestMySQLBulkGrantUpgradesTheOnlyReader: a Read lock's Key row makes
// the bulk statement refuse; the serialised path then upgrades the only
// reader, and refuses a record another session reads too.
func TestMySQLBulkGrantUpgradesTheOnlyReader(t *testing.T) {
	s, db := bulkStore(t)
	c := NewConn(db, context.Background())
	martin, david := Owner{Session: "M1", User: "martin"}, Owner{Session: "D1", User: "david"}
	a, b, free := Key{"docs", "1"}, Key{"docs", "2"}, Key{"docs", "3"}
	read, err := s.Grant(c, []Key{a, b}, martin, Read, time.Minute)
	require.NoError(t, err)
	got, err := s.Grant(c, []Key{a, free}, martin, Write, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, Write, got[a].Access)
	assert.True(t, got[a].Fresh, "an upgrade is fresh")
	assert.Equal(t, read[a].Hash, got[a].Hash, "and keeps the reader's token")

	_, err = s.Grant(c, []Key{b}, david, Read, time.Minute)
	require.NoError(t, err)
	_, err = s.Grant(c, []Key{b, free}, martin, Write, time.Minute)
	var le *Conflict
	require.True(t, errors.As(err, &le))
	assert.Equal(t, b.ID, le.ID)
	require.Len(t, le.Holders, 1)
	assert.Equal(t, david, le.Holders[0].Owner)
}

// TestMySQLSweepDeletesGenerationRows: the counter rows the bulk grants
// leave go with the sweep, and the counter goes on past them.
func TestMySQLSweepDeletesGenerationRows(t *testing.T) {
	s, db := bulkStore(t)
	c := NewConn(db, context.Background())
	o := Owner{Session: "M1", User: "martin"}
	keys := []Key{{Resource: "docs", ID: "1"}, {Resource: "docs", ID: "2"}}
	first, err := s.Grant(c, keys, o, Write, time.Minute)
	require.NoError(t, err)
	rows := func() (n int64) {
		require.NoError(t, db.Raw("SELECT COUNT(*) FROM "+s.seq).Scan(&n).Error)
		return n
	}
	require.EqualValues(t, 1, rows())
	_, _, err = s.Sweep(c, &SweepCursor{})
	require.NoError(t, err)
	assert.Zero(t, rows())
	_, err = s.ReleaseAll(c, o.Session)
	require.NoError(t, err)
	again, err := s.Grant(c, keys, o, Write, time.Minute)
	require.NoError(t, err)
	assert.Greater(t, again[keys[0]].Generation, first[keys[1]].Generation)
}

func TestJSONArraysEscapeWhatIsNotHex(t *testing.T) {
	got := jsonArrays([][]string{{"6162", "", "12"}, {`a"b\c`, "é"}})
	require.Len(t, got, 1)
	assert.Equal(t, `[["6162","","12"],["a\"b\\c","é"]]`, got[0])
	var back [][]string
	require.NoError(t, json.Unmarshal([]byte(got[0]), &back))
	assert.Equal(t, [][]string{{"6162", "", "12"}, {`a"b\c`, "é"}}, back)
}

func TestKeyRowHints(t *testing.T) {
	var h keyRowHints
	keys := []Key{{"r", "1"}, {"r", "2"}, {"r", "3"}}
	assert.Equal(t, keys, h.unknown(keys))
	h.granted(keys[1:2], time.Hour)
	assert.Equal(t, []Key{keys[0], keys[2]}, h.unknown(keys))
	h.granted(keys, time.Hour)
	assert.Empty(t, h.unknown(keys))
	h.granted(keys[:1], 0)
	h.until[keys[0]] = time.Now().Add(-time.Second)
	assert.Equal(t, keys[:1], h.unknown(keys), "a hint past its time is forgotten")
}

// TestMySQLBulkGrantOddBytes: keys and owners with quotes, backslashes,
// bytes that are not UTF-8 and NULs come back from the bulk grant as they
// were,
// and a second grant of the same keys (their key rows known, keyRowHints)
// refreshes them.
func TestMySQLBulkGrantOddBytes(t *testing.T) {
	s, db := bulkStore(t)
	c := NewConn(db, context.Background())
	keys := []Key{{`it's`, `a\b`}, {"r\x00", "\xff\xfe"}, {"r", `'); DROP TABLE x; --`}}
	for _, o := range []Owner{{Session: `S'\1`, User: "märtin's"}, {Session: "S\xff", User: `back\slash`}} {
		for round := range 2 {
			got, err := s.Grant(c, keys, o, Write, time.Minute)
			require.NoError(t, err)
			require.Len(t, got, len(keys))
			for _, k := range keys {
				g, ok := got[k]
				require.True(t, ok, "%q", k)
				assert.Equal(t, o, g.Owner)
				assert.Equal(t, round == 0, g.Fresh, "round %d", round)
			}
			mine, _, err := s.Check(c, keys, o, false)
			require.NoError(t, err)
			assert.ElementsMatch(t, keys, mine)
		}
		_, err := s.ReleaseAll(c, o.Session)
		require.NoError(t, err)
	}
}
