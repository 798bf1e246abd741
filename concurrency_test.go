package offlinelock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// Counter is a record whose n only the offline lock protects: each business
// transaction reads it in one statement and writes n+1 in another, with no
// database lock in between.
type Counter struct {
	ID uint `gorm:"primaryKey"`
	N  int
}

// TestLockProtectsACounter is ShedLock's fuzz tester and Jepsen's lock check
// against the real lock table: many sessions race for a few keys with Write
// locks (read-modify-write the counter) and Read locks (look only), and the
// test asserts that no two writers, and no writer and reader, ever held a
// key together, that no update was lost, and that every refusal was a
// *LockedError, never "database is locked" or any other failure.
func TestLockProtectsACounter(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			workers, keys, run := 64, 8, 3*time.Second
			if d.name == "sqlite" {
				workers, run = 16, 2*time.Second
			}
			db, p := setup(t, d, offlinelock.Config{})
			table := "counters_" + randomHex(4)
			counters := db.Table(table)
			require.NoError(t, counters.AutoMigrate(&Counter{}))
			t.Cleanup(func() { db.Migrator().DropTable(table) })
			for k := 1; k <= keys; k++ {
				require.NoError(t, db.Table(table).Create(&Counter{ID: uint(k)}).Error)
			}

			var (
				writer    = make([]atomic.Int64, keys+1) // session id of the writer inside, or 0
				readers   = make([]atomic.Int64, keys+1) // readers inside
				writes    = make([]atomic.Int64, keys+1) // successful increments
				reads     atomic.Int64
				refusals  atomic.Int64
				overlaps  atomic.Int64
				failures  = make(chan error, workers)
				deadline  = time.Now().Add(run)
				wg        sync.WaitGroup
				startLine = make(chan struct{})
			)
			for w := 1; w <= workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(w), 7))
					owner := offlinelock.Owner{Session: fmt.Sprintf("S%d", w), User: fmt.Sprintf("user%d", w)}
					sdb := as(db, owner)
					<-startLine
					for time.Now().Before(deadline) {
						k := 1 + rng.IntN(keys)
						c := &Counter{ID: uint(k)}
						access := offlinelock.Write
						if rng.IntN(4) == 0 {
							access = offlinelock.Read
						}
						_, err := p.Acquire(sdb, c, access)
						if errors.Is(err, offlinelock.ErrLocked) {
							refusals.Add(1)
							continue
						}
						if err != nil {
							failures <- fmt.Errorf("acquire %s %d: %w", access, k, err)
							return
						}
						if access == offlinelock.Read {
							readers[k].Add(1)
							if writer[k].Load() != 0 {
								overlaps.Add(1)
							}
							reads.Add(1)
							readers[k].Add(-1)
						} else {
							if !writer[k].CompareAndSwap(0, int64(w)) || readers[k].Load() != 0 {
								overlaps.Add(1)
							}
							var cur Counter
							if err := db.Table(table).First(&cur, k).Error; err != nil {
								failures <- err
								return
							}
							if err := db.Table(table).Where("id = ?", k).Update("n", cur.N+1).Error; err != nil {
								failures <- err
								return
							}
							writes[k].Add(1)
							writer[k].Store(0)
						}
						if err := p.Release(sdb, c); err != nil {
							failures <- fmt.Errorf("release %s %d: %w", access, k, err)
							return
						}
					}
				}()
			}
			close(startLine)
			wg.Wait()
			close(failures)
			for err := range failures {
				t.Error(err)
			}
			assert.Zero(t, overlaps.Load(), "two holders overlapped")
			var total int64
			for k := 1; k <= keys; k++ {
				var got Counter
				require.NoError(t, db.Table(table).First(&got, k).Error)
				assert.EqualValues(t, writes[k].Load(), got.N, "counter %d lost updates", k)
				total += writes[k].Load()
			}
			assert.Positive(t, total)
			left, err := p.List(db, offlinelock.Filter{})
			require.NoError(t, err)
			assert.Empty(t, left, "every lock was released")
			t.Logf("%s: %d workers x %d keys x %v: %d writes, %d reads, %d refusals, 0 overlaps",
				d.name, workers, keys, run, total, reads.Load(), refusals.Load())
		})
	}
}

// TestTwoReadersUpgradingAreBothRefused races the upgrade: many pairs of
// readers ask for Write at the same moment; neither waits for the other, and
// at most one of each pair wins.
func TestTwoReadersUpgradingAreBothRefused(t *testing.T) {
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for i := uint(1); i <= 20; i++ {
			c := &Customer{ID: i}
			for _, o := range []offlinelock.Owner{martin, david} {
				_, err := p.Acquire(as(db, o), c, offlinelock.Read)
				require.NoError(t, err)
			}
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for j, o := range []offlinelock.Owner{martin, david} {
				wg.Add(1)
				go func() { defer wg.Done(); _, errs[j] = p.Acquire(as(db, o), c, offlinelock.Write) }()
			}
			wg.Wait()
			for _, err := range errs {
				require.ErrorIs(t, err, offlinelock.ErrLocked, "both readers still read, so both upgrades are refused")
			}
		}
	})
}

// TestOverlappingLoadsNeverShareARow: many sessions load overlapping sets
// of exclusive_read rows (so their lock batches overlap in every order),
// edit them, and release. Batches take keys in a fixed order and refuse
// rather than wait, so no load deadlocks, no row is ever held by two
// sessions, and no update is lost.
func TestOverlappingLoadsNeverShareARow(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			workers, rows, run := 16, 24, 2*time.Second
			if d.name == "sqlite" {
				workers = 8
			}
			db, p := setupModels(t, d, offlinelock.Config{})
			seedAccounts(t, db, rows)
			var (
				holder   = make([]atomic.Int64, rows+1)
				edits    = make([]atomic.Int64, rows+1)
				overlaps atomic.Int64
				loads    atomic.Int64
				refused  atomic.Int64
				failures = make(chan error, workers)
				deadline = time.Now().Add(run)
				wg       sync.WaitGroup
			)
			for w := 1; w <= workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(w), 11))
					o := offlinelock.Owner{Session: fmt.Sprintf("S%d", w), User: fmt.Sprintf("u%d", w)}
					sdb := as(db, o)
					for time.Now().Before(deadline) {
						ids := rng.Perm(rows)[:1+rng.IntN(5)]
						for i := range ids {
							ids[i]++
						}
						var got []Account
						err := sdb.Where("id IN ?", ids).Find(&got).Error
						if errors.Is(err, offlinelock.ErrLocked) {
							refused.Add(1)
							continue
						}
						if err != nil {
							failures <- err
							return
						}
						loads.Add(1)
						for _, a := range got {
							if !holder[a.ID].CompareAndSwap(0, int64(w)) {
								overlaps.Add(1)
							}
						}
						for _, a := range got {
							if err := sdb.Model(&a).Update("credit", a.Credit+1).Error; err != nil {
								failures <- err
								return
							}
							edits[a.ID].Add(1)
						}
						for _, a := range got {
							holder[a.ID].Store(0)
						}
						if _, err := p.ReleaseAll(sdb, o.Session); err != nil {
							failures <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(failures)
			for err := range failures {
				t.Error(err)
			}
			assert.Zero(t, overlaps.Load(), "a row was held by two sessions")
			assert.Positive(t, loads.Load())
			var final []Account
			require.NoError(t, admin(db).Order("id").Find(&final).Error)
			for _, a := range final {
				assert.EqualValues(t, 100+edits[a.ID].Load(), a.Credit, "account %d lost an update", a.ID)
			}
			t.Logf("%s: %d sessions, %v: %d loads, %d refusals, 0 overlaps, 0 deadlocks", d.name, workers, run, loads.Load(), refused.Load())
		})
	}
}

// TestLocksInACallersTransactionDoNotBlockNeighbours: a session whose
// locking load runs in a transaction the caller began (REPEATABLE READ on
// MySQL, the default) holds only its own records until that transaction
// ends. Another session locks the records next to it in key order, read
// and write, meanwhile; the record itself is refused once it commits. On MySQL a
// gap lock from a range read there would block the neighbour's new key row
// until the caller's transaction ended.
func TestLocksInACallersTransactionDoNotBlockNeighbours(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := testkit.FmSetup(t, d.open(t))
			ctx, cancel := context.WithTimeout(offlinelock.WithOwner(context.Background(), david), 5*time.Second)
			defer cancel()
			other := db.WithContext(ctx)
			require.NoError(t, as(db, martin).Transaction(func(tx *gorm.DB) error {
				if err := tx.First(&testkit.FmAcct{}, 129).Error; err != nil {
					return err
				}
				// 13 and 2 sort after and before "129"; 1290 right after it.
				for _, id := range []uint{13, 2, 1290} {
					if _, err := p.Acquire(other, &testkit.FmAcct{ID: id}, offlinelock.Write); err != nil {
						return fmt.Errorf("acquire %d: %w", id, err)
					}
				}
				if err := other.First(&testkit.FmAcct{}, 1).Error; err != nil {
					return fmt.Errorf("load 1: %w", err)
				}
				return nil
			}))
			// Martin's own record: its key row was his transaction's until
			// the commit; now it is his lock.
			_, err := p.Acquire(other, &testkit.FmAcct{ID: 129}, offlinelock.Write)
			require.ErrorIs(t, err, offlinelock.ErrLocked)
			held, err := p.List(db, offlinelock.Filter{Session: david.Session})
			require.NoError(t, err)
			ids := make([]string, len(held))
			for i, l := range held {
				ids[i] = l.ID
			}
			assert.ElementsMatch(t, []string{"1", "13", "1290", "2"}, ids)
		})
	}
}
