package plugin_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/plugin/dbresolver"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// TestRegistrationOrderWithResolver: dbresolver opens each replica with a
// copy of the source's Config, which initialises every plugin registered
// before it again. Registered before or after dbresolver, the plugin
// leaves the replica alone (no lock table on it) and locks on the source.
func TestRegistrationOrderWithResolver(t *testing.T) {
	for _, pluginFirst := range []bool{true, false} {
		name := map[bool]string{true: "plugin first", false: "resolver first"}[pluginFirst]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			open := func(file string) *gorm.DB {
				db, err := gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(filepath.Join(dir, file))), &gorm.Config{Logger: logger.Discard})
				require.NoError(t, err)
				sqlDB, _ := db.DB()
				t.Cleanup(func() { sqlDB.Close() })
				return db
			}
			replica := open("replica.db")
			require.NoError(t, replica.AutoMigrate(&testkit.Doc{}))
			db := open("source.db")
			require.NoError(t, db.AutoMigrate(&testkit.Doc{}))
			require.NoError(t, db.Create(&testkit.Doc{ID: 1, Title: "t"}).Error)
			p := offlinelock.New(offlinelock.Config{Models: []any{&testkit.Doc{}}})
			resolver := dbresolver.Register(dbresolver.Config{Replicas: []gorm.Dialector{sqlite.Open(offlinelock.SQLiteDSN(filepath.Join(dir, "replica.db")))}})
			if pluginFirst {
				require.NoError(t, db.Use(p))
				require.NoError(t, db.Use(resolver))
			} else {
				require.NoError(t, db.Use(resolver))
				require.NoError(t, db.Use(p))
			}
			require.False(t, replica.Migrator().HasTable(offlinelock.DefaultTable), "the replica got a lock table")
			require.True(t, db.Clauses(dbresolver.Write).Migrator().HasTable(offlinelock.DefaultTable))

			_, err := p.Acquire(testkit.As(db, testkit.Martin), &testkit.Doc{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			_, err = p.Acquire(testkit.As(db, testkit.David), &testkit.Doc{ID: 1}, offlinelock.Write)
			require.ErrorIs(t, err, offlinelock.ErrLocked)
			require.ErrorIs(t, testkit.As(db, testkit.David).Model(&testkit.Doc{ID: 1}).Update("title", "x").Error, offlinelock.ErrLocked)
			require.NoError(t, testkit.As(db, testkit.Martin).Model(&testkit.Doc{ID: 1}).Update("title", "m").Error)
		})
	}
}

// TestWatchBehindResolver: with dbresolver sending reads to a replica
// (here a file without the lock table), Watch and TakeOver still read and
// write the source: the events arrive.
func TestWatchBehindResolver(t *testing.T) {
	dir := t.TempDir()
	open := func(file string) *gorm.DB {
		db, err := gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(filepath.Join(dir, file))), &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		sqlDB, _ := db.DB()
		t.Cleanup(func() { sqlDB.Close() })
		return db
	}
	require.NoError(t, open("replica.db").AutoMigrate(&testkit.Doc{}))
	db := open("source.db")
	require.NoError(t, db.AutoMigrate(&testkit.Doc{}))
	p := offlinelock.New(offlinelock.Config{Models: []any{&testkit.Doc{}}, WatchEvery: 50 * time.Millisecond, Authorize: testkit.OnlyBossTakesOver})
	require.NoError(t, db.Use(p))
	require.NoError(t, db.Use(dbresolver.Register(dbresolver.Config{Replicas: []gorm.Dialector{sqlite.Open(offlinelock.SQLiteDSN(filepath.Join(dir, "replica.db")))}})))

	events, err := p.Watch(t.Context(), db, &testkit.Doc{ID: 1})
	require.NoError(t, err)
	require.Equal(t, offlinelock.EventReleased, testkit.Next(t, events).Kind, "free at the start")
	_, err = p.Acquire(testkit.As(db, testkit.Martin), &testkit.Doc{ID: 1}, offlinelock.Write)
	require.NoError(t, err)
	require.Equal(t, offlinelock.EventLocked, testkit.Next(t, events).Kind)
	_, err = p.TakeOver(testkit.As(db, testkit.Boss), &testkit.Doc{ID: 1}, "behind the resolver")
	require.NoError(t, err)
	e := testkit.Next(t, events)
	require.Equal(t, offlinelock.EventTakenOver, e.Kind)
	require.Equal(t, "behind the resolver", e.Reason)
}
