package testkit

// What the database guard's tests do besides the plugin: another client
// on the same database, raw SQL in either dialect, the held records'
// checks, and the grant-order tests' waits.

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// PlainGORM opens db's database again without the plugin: another
// service.
func PlainGORM(t *testing.T, db *gorm.DB) *gorm.DB {
	t.Helper()
	other, err := gorm.Open(DialectorOf(db.Dialector.Name(), DSNOf(db.Dialector.Name())), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB, _ := other.DB()
	t.Cleanup(func() { sqlDB.Close() })
	return other
}

// Q is s, written with MySQL's backquotes, in db's dialect: backquotes
// become double quotes except on MySQL/MariaDB.
func Q(db *gorm.DB, s string) string {
	if db.Dialector.Name() == "mysql" {
		return s
	}
	return strings.ReplaceAll(s, "`", `"`)
}

// CustomerUnchanged checks, through another client, that the held
// customer 129 of GdSetup is as seeded.
func CustomerUnchanged(t *testing.T, db *gorm.DB) {
	var c GdCustomer
	require.NoError(t, PlainGORM(t, db).First(&c, 129).Error)
	assert.Equal(t, GdCustomer{ID: 129, Name: "Acme", Credit: 100}, c)
}

// LineOf reads line id through another client.
func LineOf(t *testing.T, db *gorm.DB, id uint) GdLine {
	var l GdLine
	require.NoError(t, PlainGORM(t, db).First(&l, id).Error)
	return l
}

// RawOn is a write that runs sqlText (Q'd) on a connection of db's pool,
// outside GORM and the plugin.
func RawOn(sqlText string) func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) error {
	return func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) error {
		sqlDB, err := db.DB()
		require.NoError(t, err)
		_, err = sqlDB.Exec(Q(db, sqlText))
		return err
	}
}

// RefusedByGuard says whether err is the guard's refusal of a write of
// resource id held by Martin, as a plugin caller or another client sees it.
func RefusedByGuard(err error, resource, id string) bool {
	if err == nil {
		return false
	}
	var le *offlinelock.LockedError
	if errors.As(err, &le) {
		return le.Resource == resource && le.ID == id && len(le.Holders) == 1 && le.Holders[0].Owner.User == "martin"
	}
	msg := err.Error()
	return strings.Contains(msg, "offlinelock: "+resource+" "+id+" is locked by martin") && strings.Contains(msg, "OL423")
}

// GoOrderWriter is another client's connection, outside the plugin.
func GoOrderWriter(t *testing.T, db *gorm.DB) *sql.Conn {
	t.Helper()
	sqlDB, err := PlainGORM(t, db).DB()
	require.NoError(t, err)
	c, err := sqlDB.Conn(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// GoAwaitWait returns once waiting, a count of the server's waiting
// sessions, is positive, polling it: the barrier, never a guessed delay.
// done failing first says the grant did not wait.
func GoAwaitWait(t *testing.T, db *gorm.DB, done <-chan error, waiting string) {
	t.Helper()
	other := PlainGORM(t, db)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		var n int
		require.NoError(t, other.Raw(waiting).Scan(&n).Error)
		if n > 0 {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the grant did not wait for the open write: it returned %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatal("the grant never waited for the open write")
}

// GoSerializationFailure says whether err is PostgreSQL's 40001.
func GoSerializationFailure(err error) bool {
	var se interface{ SQLState() string }
	return errors.As(err, &se) && se.SQLState() == "40001"
}

// Pinned is one connection of db's pool, closed after the test.
func Pinned(t *testing.T, db *gorm.DB) *sql.Conn {
	t.Helper()
	sqlDB, err := db.DB()
	require.NoError(t, err)
	conn, err := sqlDB.Conn(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// RequireUnguardedRefusal asserts err is the refusal of a grant for the
// missing database guard of table (ErrUnguarded, ErrUnenforceable, not
// ErrLocked), naming the table and the command that installs the guard.
func RequireUnguardedRefusal(t *testing.T, err error, table string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, errors.Is(err, offlinelock.ErrUnguarded), "want ErrUnguarded, got %v", err)
	require.True(t, errors.Is(err, offlinelock.ErrUnenforceable), "ErrUnguarded is ErrUnenforceable too: %v", err)
	require.False(t, errors.Is(err, offlinelock.ErrLocked))
	require.ErrorContains(t, err, "table "+table+" ")
	require.ErrorContains(t, err, "offlinelock guard install")
}
