package plugin_test

// Tokens at rest: the lock table holds only SHA-256 of each token, so that
// a read of the table, a backup or a log gives no usable token; a table
// written by an older version (tokens themselves) is migrated when the
// plugin registers.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

func sha256Hex(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

// lockRow is one row of the lock table as a reader of the table sees it.
type lockRow = testkit.LockRow

// lockRows reads every row of the lock table, raw (testkit.LockRows).
func lockRows(t *testing.T, db *gorm.DB, table string) []lockRow {
	return testkit.LockRows(t, db, table)
}

// tokenOf is the token column of the row (resource, id, holder).
func tokenOf(t *testing.T, rows []lockRow, resource, id, holder string) string {
	t.Helper()
	for _, r := range rows {
		if r.Resource == resource && r.ID == id && r.Holder == holder {
			return r.Token
		}
	}
	t.Fatalf("no lock row %s %s %q in %v", resource, id, holder, rows)
	return ""
}

var hashShape = regexp.MustCompile(`^([0-9a-f]{64})?$`)

// assertNoToken checks that no column of any row is, or contains, any of
// tokens, and that every token column is a hash or empty.
func assertNoToken(t *testing.T, rows []lockRow, tokens ...string) {
	t.Helper()
	require.NotEmpty(t, rows)
	for _, r := range rows {
		for _, col := range []string{r.Resource, r.ID, r.Holder, r.Access, r.Session, r.User, r.Token} {
			for _, tok := range tokens {
				require.Len(t, tok, 32)
				assert.NotContains(t, col, tok, "row %v", r)
			}
		}
		assert.Regexp(t, hashShape, r.Token, "row %v holds a hash or nothing", r)
	}
}

func TestTokensAreStoredOnlyAsHashes(t *testing.T) {
	cfg := offlinelock.Config{Table: "ol_" + randomHex(6)}
	eachDBWithModels(t, cfg, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		w, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write) // one statement where the store has it
		require.NoError(t, err)
		r, err := p.Acquire(as(db, david), &Doc{ID: 2}, offlinelock.Read) // the serialised path
		require.NoError(t, err)
		require.Regexp(t, `^[0-9a-f]{32}$`, w.Token)
		require.Regexp(t, `^[0-9a-f]{32}$`, r.Token)

		rows := lockRows(t, db, cfg.Table)
		assertNoToken(t, rows, w.Token, r.Token)
		assert.Equal(t, sha256Hex(w.Token), tokenOf(t, rows, "docs", "1", ""))
		assert.Equal(t, sha256Hex(r.Token), tokenOf(t, rows, "docs", "2", david.Session))

		for _, l := range []*offlinelock.Lock{w, r} {
			got, err := p.LockByToken(db, l.Token)
			require.NoError(t, err)
			assert.Equal(t, l.ID, got.ID)
			assert.Equal(t, l.Owner, got.Owner)
			assert.Equal(t, l.Access, got.Access)
			assert.Equal(t, l.Generation, got.Generation)
			assert.Empty(t, got.Token, "LockByToken returns no token")

			// Whoever read the table has the hash: it is no token.
			_, err = p.LockByToken(db, sha256Hex(l.Token))
			assert.ErrorIs(t, err, offlinelock.ErrNotLocked)
			_, err = p.LockByToken(db, sha256Hex(l.Token)[:32])
			assert.ErrorIs(t, err, offlinelock.ErrNotLocked)
		}

		// Re-acquiring returns no token; the first one still stands.
		for _, c := range []struct {
			o      offlinelock.Owner
			id     uint
			access offlinelock.Access
			first  *offlinelock.Lock
		}{{martin, 1, offlinelock.Write, w}, {david, 2, offlinelock.Read, r}, {david, 2, offlinelock.Write, r}} {
			again, err := p.Acquire(as(db, c.o), &Doc{ID: c.id}, c.access)
			require.NoError(t, err)
			assert.Empty(t, again.Token, "%s of doc %d again", c.access, c.id)
			got, err := p.LockByToken(db, c.first.Token)
			require.NoError(t, err)
			assert.Equal(t, c.access, got.Access)
		}
		assertNoToken(t, lockRows(t, db, cfg.Table), w.Token, r.Token)

		// Locks taken by loads: by key, and several at once.
		seedAccounts(t, db, 5)
		var a Account
		require.NoError(t, as(db, martin).First(&a, 1).Error)
		var some []Account
		require.NoError(t, as(db, martin).Where("id IN ?", []uint{2, 3, 4}).Find(&some).Error)
		require.Len(t, some, 3)
		rows = lockRows(t, db, cfg.Table)
		for _, id := range []string{"1", "2", "3", "4"} {
			assert.Regexp(t, `^[0-9a-f]{64}$`, tokenOf(t, rows, "accounts", id, ""), "account %s", id)
		}
		assertNoToken(t, rows, w.Token, r.Token)
	})
}

// TestTokensAndHashesAreNotLogged runs the grant paths under GORM's most
// verbose logger: neither a token nor its hash is in what it wrote.
func TestTokensAndHashesAreNotLogged(t *testing.T) {
	cfg := offlinelock.Config{Table: "ol_" + randomHex(6)}
	eachDBWithModels(t, cfg, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 5)
		var out bytes.Buffer
		verbose := logger.New(log.New(&out, "", 0), logger.Config{LogLevel: logger.Info, Colorful: false})
		logged := db.Session(&gorm.Session{Logger: verbose})

		w, err := p.Acquire(as(logged, martin), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		r, err := p.Acquire(as(logged, david), &Doc{ID: 2}, offlinelock.Read)
		require.NoError(t, err)
		_, err = p.Acquire(as(logged, martin), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		_, err = p.LockByToken(logged, w.Token)
		require.NoError(t, err)
		var a Account
		require.NoError(t, as(logged, martin).First(&a, 1).Error)
		var some []Account
		require.NoError(t, as(logged, martin).Where("id IN ?", []uint{2, 3, 4}).Find(&some).Error)
		require.Len(t, some, 3)

		secrets := []string{w.Token, r.Token}
		for _, row := range lockRows(t, db, cfg.Table) {
			if row.Token != "" {
				secrets = append(secrets, row.Token)
			}
		}
		require.Len(t, secrets, 2+2+4, "two tokens, two hashes of Acquire, four of loads")
		text := out.String()
		require.Contains(t, text, cfg.Table, "the plugin's statements were logged")
		for _, s := range secrets {
			assert.NotContains(t, text, s)
		}
		assert.NotRegexp(t, `[0-9a-f]{32}`, text, "no run of hex as long as a token")
	})
}

// legacyDDL is the lock table as the versions before hashed tokens created
// it (the same columns: the token column always had room for 64).
func legacyDDL(dialect, table string) []string {
	switch dialect {
	case "postgres":
		return []string{`CREATE TABLE ` + table + ` (
	resource    varchar(128) COLLATE "C" NOT NULL,
	lock_id     varchar(255) COLLATE "C" NOT NULL,
	holder      varchar(255) COLLATE "C" NOT NULL,
	access      varchar(5)   NOT NULL,
	session     varchar(255) COLLATE "C" NOT NULL,
	user_name   varchar(255) NOT NULL,
	token       varchar(64)  NOT NULL,
	generation  bigint       NOT NULL,
	acquired_at timestamptz  NOT NULL,
	expires_at  timestamptz  NOT NULL,
	PRIMARY KEY (resource, lock_id, holder))`,
			`CREATE INDEX ` + table + `_token ON ` + table + ` (token)`,
			`CREATE SEQUENCE ` + table + `_generation AS bigint NO CYCLE`}
	case "mysql":
		return []string{`CREATE TABLE ` + table + ` (
	resource    VARBINARY(512)  NOT NULL,
	lock_id     VARBINARY(1020) NOT NULL,
	holder      VARBINARY(1020) NOT NULL,
	access      VARCHAR(5)      CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	session     VARBINARY(1020) NOT NULL,
	user_name   VARCHAR(255)    CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	token       VARBINARY(64)   NOT NULL,
	generation  BIGINT          NOT NULL,
	acquired_at DATETIME(6)     NOT NULL,
	expires_at  DATETIME(6)     NOT NULL,
	PRIMARY KEY (resource, lock_id, holder),
	KEY ` + table + `_session (session),
	KEY ` + table + `_expires (expires_at),
	KEY ` + table + `_token (token)) ENGINE=InnoDB`}
	}
	return []string{`CREATE TABLE ` + table + ` (
	resource    TEXT    NOT NULL,
	lock_id     TEXT    NOT NULL,
	holder      TEXT    NOT NULL,
	access      TEXT    NOT NULL,
	session     TEXT    NOT NULL,
	user_name   TEXT    NOT NULL,
	token       TEXT    NOT NULL,
	generation  INTEGER NOT NULL,
	acquired_at TEXT    NOT NULL,
	expires_at  TEXT    NOT NULL,
	PRIMARY KEY (resource, lock_id, holder))`,
		`CREATE INDEX ` + table + `_token ON ` + table + ` (token)`}
}

// legacyRows are the rows an older version wrote: a Write lock, and a
// record read by one session (its key row holds no token), both live for
// an hour, and a free key row, with writeTok and readTok as they were
// stored then, in clear.
func legacyRows(dialect, table, writeTok, readTok string) string {
	now, later := `strftime('%Y-%m-%d %H:%M:%f','now')`, `strftime('%Y-%m-%d %H:%M:%f','now','+3600 seconds')`
	switch dialect {
	case "postgres":
		now, later = `clock_timestamp()`, `clock_timestamp() + interval '1 hour'`
	case "mysql":
		now, later = `UTC_TIMESTAMP(6)`, `DATE_ADD(UTC_TIMESTAMP(6), INTERVAL 1 HOUR)`
	}
	return fmt.Sprintf(`INSERT INTO %[1]s (resource, lock_id, holder, access, session, user_name, token, generation, acquired_at, expires_at) VALUES
('docs', '1', '', 'write', 'M1', 'martin', '%[2]s', 1, %[4]s, %[5]s),
('docs', '2', '', 'read', '', '', '', 0, %[4]s, %[5]s),
('docs', '2', 'D1', 'read', 'D1', 'david', '%[3]s', 2, %[4]s, %[5]s),
('docs', '3', '', '', '', '', '', 0, %[4]s, %[5]s)`, table, writeTok, readTok, now, later)
}

func TestLegacyTokensAreHashedWhenThePluginRegisters(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db := d.open(t)
			dialect := db.Dialector.Name()
			table := "ol_" + randomHex(6)
			t.Cleanup(func() {
				for _, suffix := range []string{"", "_generation", "_tables"} {
					db.Exec(`DROP TABLE IF EXISTS ` + table + suffix)
				}
				if dialect == "postgres" {
					db.Exec(`DROP SEQUENCE IF EXISTS ` + table + `_generation`)
				}
			})
			for _, stmt := range legacyDDL(dialect, table) {
				require.NoError(t, db.Exec(stmt).Error)
			}
			writeTok, readTok := randomHex(16), randomHex(16)
			require.NoError(t, db.Exec(legacyRows(dialect, table, writeTok, readTok)).Error)

			p := offlinelock.New(offlinelock.Config{Table: table})
			require.NoError(t, db.Use(p), "registering migrates the table")

			rows := lockRows(t, db, table)
			require.Len(t, rows, 4)
			assertNoToken(t, rows, writeTok, readTok)
			assert.Equal(t, sha256Hex(writeTok), tokenOf(t, rows, "docs", "1", ""))
			assert.Equal(t, "", tokenOf(t, rows, "docs", "2", ""))
			assert.Equal(t, sha256Hex(readTok), tokenOf(t, rows, "docs", "2", "D1"))
			assert.Equal(t, "", tokenOf(t, rows, "docs", "3", ""))

			// The holders' tokens work as they did; the hashes do not.
			w, err := p.LockByToken(db, writeTok)
			require.NoError(t, err)
			assert.Equal(t, offlinelock.Lock{Resource: "docs", ID: "1", Access: offlinelock.Write, Owner: martin, Generation: 1,
				AcquiredAt: w.AcquiredAt, ExpiresAt: w.ExpiresAt}, *w)
			r, err := p.LockByToken(db, readTok)
			require.NoError(t, err)
			assert.Equal(t, david, r.Owner)
			assert.Equal(t, offlinelock.Read, r.Access)
			_, err = p.LockByToken(db, sha256Hex(writeTok))
			assert.ErrorIs(t, err, offlinelock.ErrNotLocked)

			// Migrating again changes nothing: a hash is not hashed twice.
			require.NoError(t, p.Migrate(db))
			assert.Equal(t, rows, lockRows(t, db, table))
			_, err = p.LockByToken(db, writeTok)
			require.NoError(t, err)

			// The legacy holder goes on: it re-acquires (no token back),
			// releases, and another session takes the record.
			again, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			assert.Empty(t, again.Token)
			assert.Equal(t, int64(1), again.Generation)
			require.NoError(t, p.Release(as(db, martin), &Doc{ID: 1}))
			_, err = p.LockByToken(db, writeTok)
			assert.ErrorIs(t, err, offlinelock.ErrNotLocked)
			taken, err := p.Acquire(as(db, david), &Doc{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			rows = lockRows(t, db, table)
			assert.Equal(t, sha256Hex(taken.Token), tokenOf(t, rows, "docs", "1", ""))
			assertNoToken(t, rows, writeTok, readTok, taken.Token)
		})
	}
}

// TestALoadThatFindsNoRowLeavesNoLock: a load by key takes the lock in the
// read's own statement on PostgreSQL; when no row comes back, the general
// path tells the grant it made (by its token's hash) from a lock the
// session held before, and gives back only the former.
func TestALoadThatFindsNoRowLeavesNoLock(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 2)
		var a Account
		var none []Account
		require.ErrorIs(t, as(db, martin).First(&a, 999).Error, gorm.ErrRecordNotFound)
		require.NoError(t, as(db, martin).Find(&none, 998).Error) // no error: nothing to give back but the lock
		require.Empty(t, none)
		require.ErrorIs(t, as(db, martin).Where("name = ?", "nobody").First(&a, 1).Error, gorm.ErrRecordNotFound)
		for _, id := range []uint{999, 998, 1} {
			h, err := p.Holders(db, &Account{ID: id})
			require.NoError(t, err)
			assert.Empty(t, h, "account %d: the load found nothing and locked nothing", id)
		}

		held, err := p.Acquire(as(db, martin), &Account{ID: 2}, offlinelock.Write)
		require.NoError(t, err)
		require.ErrorIs(t, as(db, martin).Where("name = ?", "nobody").First(&a, 2).Error, gorm.ErrRecordNotFound)
		require.NoError(t, as(db, martin).Where("name = ?", "nobody").Find(&none, 2).Error)
		got, err := p.LockByToken(db, held.Token)
		require.NoError(t, err, "a lock held before the load stays, with its token")
		assert.Equal(t, held.Generation, got.Generation)
	})
}
