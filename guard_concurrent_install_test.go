package offlinelock_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
	db := openPostgres(t)
	drop := func() { db.Exec(`DROP TABLE IF EXISTS ddl_race_docs CASCADE`) }
	drop()
	t.Cleanup(drop)
	require.NoError(t, db.Exec(`CREATE TABLE ddl_race_docs (id bigint PRIMARY KEY, title text NOT NULL DEFAULT '')`).Error)
	var plugins []*offlinelock.Plugin
	for range 3 {
		_, p := setupOn(t, openPostgres(t), offlinelock.Config{Models: []any{&DdlRaceDoc{}}})
		plugins = append(plugins, p)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	churn := make([]error, len(plugins))
	cycles := make([]atomic.Int64, len(plugins))
	for i, p := range plugins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					churn[i] = p.InstallGuard(db)
					return
				default:
				}
				if err := p.RemoveGuard(db); err != nil {
					churn[i] = err
					return
				}
				if err := p.InstallGuard(db); err != nil {
					churn[i] = err
					return
				}
				cycles[i].Add(1)
			}
		}()
	}
	// at least 60 rounds, and until every guard has come and gone three
	// times meanwhile
	overlapped := func() bool {
		for i := range cycles {
			if cycles[i].Load() < 3 {
				return false
			}
		}
		return true
	}
	ddl := openPostgres(t)
	for i := 0; i < 60 || !overlapped(); i++ {
		require.Less(t, i, 2000, "the guards' installs made no progress")
		for _, q := range []string{
			`CREATE TABLE zz_ddl_parent (id bigint)`,
			`CREATE TABLE zz_ddl_child () INHERITS (zz_ddl_parent)`,
			`ALTER TABLE zz_ddl_child ADD COLUMN note text`,
			`CREATE TABLE zz_ddl_heir () INHERITS (ddl_race_docs)`,
			`DROP TABLE zz_ddl_parent, zz_ddl_heir CASCADE`,
		} {
			if err := ddl.Exec(q).Error; err != nil {
				close(done)
				wg.Wait()
				require.NoError(t, err, fmt.Sprintf("round %d: %s", i, q))
			}
		}
	}
	close(done)
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
	db := openPostgres(t)
	drop := func() { db.Exec(`DROP TABLE IF EXISTS ddl_race_docs CASCADE`) }
	drop()
	t.Cleanup(drop)
	require.NoError(t, db.Exec(`CREATE TABLE ddl_race_docs (id bigint PRIMARY KEY, title text NOT NULL DEFAULT '')`).Error)
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
