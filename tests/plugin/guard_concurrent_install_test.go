package plugin_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

type DdlRaceDoc struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Title string
}

// TestGuardsComeAndGoWhileOthersRunDDL: three guards of one table
// installed and removed over and over at once (as tests, tenants and
// deployments do) never deadlock each other (DROP TRIGGER opens its table
// for reading and then takes it for itself), and DDL in another session
// meanwhile, children of the guarded table among it, never fails; the
// children are guarded by each guard's next install.
func TestGuardsComeAndGoWhileOthersRunDDL(t *testing.T) {
	db := freshDdlRaceDocs(t)
	var plugins []*offlinelock.Plugin
	for range 3 {
		_, p := setupOn(t, openPostgres(t), offlinelock.Config{Models: []any{&DdlRaceDoc{}}})
		plugins = append(plugins, p)
	}
	// each guard removed and installed again a bounded number of times,
	// all at once, while this session runs DDL until they are done
	const cycles = 8
	var wg sync.WaitGroup
	churn := make([]error, len(plugins))
	var finished atomic.Int64
	for i, p := range plugins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer finished.Add(1)
			for range cycles {
				if churn[i] = p.RemoveGuard(db); churn[i] != nil {
					return
				}
				if churn[i] = p.InstallGuard(db); churn[i] != nil {
					return
				}
			}
		}()
	}
	ddl := openPostgres(t)
	for i := 0; finished.Load() < int64(len(plugins)); i++ {
		require.Less(t, i, 2000, "the guards' installs made no progress")
		for _, q := range []string{
			`CREATE TABLE zz_ddl_parent (id bigint)`,
			`CREATE TABLE zz_ddl_child () INHERITS (zz_ddl_parent)`,
			`ALTER TABLE zz_ddl_child ADD COLUMN note text`,
			`CREATE TABLE zz_ddl_heir () INHERITS (ddl_race_docs)`,
			`DROP TABLE zz_ddl_parent, zz_ddl_heir CASCADE`,
		} {
			if err := ddl.Exec(q).Error; err != nil {
				wg.Wait()
				require.NoError(t, err, fmt.Sprintf("round %d: %s", i, q))
			}
		}
	}
	wg.Wait()
	for _, err := range churn {
		require.NoError(t, err)
	}
	require.NoError(t, ddl.Exec(`CREATE TABLE zz_ddl_heir () INHERITS (ddl_race_docs)`).Error)
	defer ddl.Exec(`DROP TABLE IF EXISTS zz_ddl_heir`)
	for _, p := range plugins {
		require.NoError(t, p.InstallGuard(db))
	}
	var triggers int64
	require.NoError(t, ddl.Raw(`SELECT count(*) FROM pg_trigger WHERE tgrelid = 'zz_ddl_heir'::regclass AND NOT tgisinternal`).Scan(&triggers).Error)
	require.Equal(t, int64(4*len(plugins)), triggers)
}

// TestGuardRepairBesideAReaderThatWrites: an application transaction reads
// a guarded table, an install that repairs the table's guard (or a
// RemoveGuard) comes to wait for it, and the transaction then writes the
// table: both succeed. An install that held the table in a weaker mode
// while it waited for the one DROP TRIGGER takes deadlocked that write.
func TestGuardRepairBesideAReaderThatWrites(t *testing.T) {
	db := freshDdlRaceDocs(t)
	require.NoError(t, db.Exec(`INSERT INTO ddl_race_docs VALUES (1, 'free')`).Error)
	_, p := setupOn(t, openPostgres(t), offlinelock.Config{Models: []any{&DdlRaceDoc{}}})
	var ins string
	require.NoError(t, db.Raw(`SELECT tgname FROM pg_trigger WHERE tgrelid = 'ddl_race_docs'::regclass AND tgname LIKE '%\_ins'`).Scan(&ins).Error)
	require.NotEmpty(t, ins)
	for _, step := range []struct {
		name    string
		prepare string
		run     func() error
	}{
		{"install", `ALTER TABLE ddl_race_docs DISABLE TRIGGER ` + ins, func() error { return p.InstallGuard(db) }},
		{"remove", `SELECT 1`, func() error { return p.RemoveGuard(db) }},
	} {
		t.Run(step.name, func(t *testing.T) {
			require.NoError(t, db.Exec(step.prepare).Error)
			tx := openPostgres(t).Begin()
			require.NoError(t, tx.Exec(`SELECT count(*) FROM ddl_race_docs`).Error)
			done := make(chan error, 1)
			go func() { done <- step.run() }()
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				var waiting int64
				require.NoError(t, db.Raw(`SELECT count(*) FROM pg_locks WHERE relation = 'ddl_race_docs'::regclass AND NOT granted`).Scan(&waiting).Error)
				if waiting > 0 {
					break
				}
				require.True(t, time.Now().Before(deadline), "the %s never waited for the reader", step.name)
			}
			require.NoError(t, tx.Exec(`UPDATE ddl_race_docs SET title = ? WHERE id = 1`, step.name).Error)
			require.NoError(t, tx.Commit().Error)
			require.NoError(t, <-done)
		})
	}
}

// freshDdlRaceDocs opens PostgreSQL and makes a fresh ddl_race_docs table,
// dropped after the test.
func freshDdlRaceDocs(t *testing.T) *gorm.DB {
	t.Helper()
	db := openPostgres(t)
	drop := func() { db.Exec(`DROP TABLE IF EXISTS ddl_race_docs, zz_ddl_parent CASCADE`) }
	drop()
	t.Cleanup(drop)
	require.NoError(t, db.Exec(`CREATE TABLE ddl_race_docs (id bigint PRIMARY KEY, title text NOT NULL DEFAULT '')`).Error)
	return db
}
