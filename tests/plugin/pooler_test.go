package plugin_test

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// PooledCounter is the pooler stress's record: a counter under a Write lock.
type PooledCounter struct {
	ID uint `gorm:"primaryKey" lock:"exclusive_write"`
	N  int
}

// TestPgBouncer: PgBouncer 1.18 in transaction mode. With pgx's default
// statement cache db.Use fails and names the fix; with the simple protocol
// or default_query_exec_mode=exec, 16 sessions increment 4 counters under
// Write locks and no increment is lost.
func TestPgBouncer(t *testing.T) {
	port := startPgBouncer(t)
	dsn := testkit.PGDSN(port)
	table := "ol_" + randomHex(6)
	open := func(t *testing.T, d gorm.Dialector) *gorm.DB {
		db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		sqlDB, _ := db.DB()
		t.Cleanup(func() { sqlDB.Close() })
		return db
	}

	t.Run("the statement cache fails db.Use with the fix", func(t *testing.T) {
		db := open(t, postgres.Open(dsn))
		p := offlinelock.New(offlinelock.Config{Table: table, Logger: slog.New(slog.DiscardHandler)})
		err := db.Use(p)
		require.ErrorIs(t, err, offlinelock.ErrPooler)
		require.ErrorContains(t, err, "PreferSimpleProtocol: true")
		require.ErrorContains(t, err, "default_query_exec_mode=exec")
		_, err = p.Acquire(as(db, martin), &PooledCounter{ID: 1}, offlinelock.Write)
		require.ErrorIs(t, err, offlinelock.ErrPooler, "a plugin whose db.Use failed fails closed")
	})

	for _, c := range []struct {
		name string
		d    gorm.Dialector
	}{
		{"simple protocol", postgres.New(postgres.Config{DSN: dsn, PreferSimpleProtocol: true})},
		{"exec mode", postgres.Open(dsn + " default_query_exec_mode=exec")},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := open(t, c.d)
			p := offlinelock.New(offlinelock.Config{Table: table, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, db.Use(p))
			require.NoError(t, db.Migrator().DropTable(&PooledCounter{}))
			require.NoError(t, db.AutoMigrate(&PooledCounter{}))
			t.Cleanup(func() { db.Migrator().DropTable(&PooledCounter{}) })
			const keys = 4
			for k := uint(1); k <= keys; k++ {
				require.NoError(t, admin(db).Create(&PooledCounter{ID: k}).Error)
			}
			var (
				done     [keys + 1]atomic.Int64
				refused  atomic.Int64
				wg       sync.WaitGroup
				failures = make(chan error, 16)
				deadline = time.Now().Add(3 * time.Second)
			)
			for w := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s := as(db, offlinelock.Owner{Session: fmt.Sprintf("P%d", w), User: fmt.Sprintf("u%d", w)})
					for i := 0; time.Now().Before(deadline) && i < 200; i++ {
						k := uint(1 + (w+i)%keys)
						if _, err := p.Acquire(s, &PooledCounter{ID: k}, offlinelock.Write); errors.Is(err, offlinelock.ErrLocked) {
							refused.Add(1)
							continue
						} else if err != nil {
							failures <- err
							return
						}
						var pc PooledCounter
						err := s.First(&pc, k).Error
						if err == nil {
							pc.N++
							err = s.Save(&pc).Error
						}
						if err == nil {
							done[k].Add(1)
						}
						if rerr := p.Release(s, &PooledCounter{ID: k}); err == nil {
							err = rerr
						}
						if err != nil {
							failures <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(failures)
			for err := range failures {
				t.Fatal(err)
			}
			var total int64
			for k := uint(1); k <= keys; k++ {
				var pc PooledCounter
				require.NoError(t, db.First(&pc, k).Error)
				require.Equal(t, done[k].Load(), int64(pc.N), "counter %d", k)
				total += int64(pc.N)
			}
			require.Positive(t, total)
			t.Logf("RELIABILITY pgbouncer %s: %d increments, %d refusals, none lost", c.name, total, refused.Load())
		})
	}
}
