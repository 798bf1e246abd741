package offlinelock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// A repair under load (issue 48): two nodes on one database take turns
// to lock, read, increment and save three records, while another client
// writes free records of another table; midway a trigger of the guarded
// table is dropped, and a node's install puts it back. No increment is
// lost (each record ends at its start plus the saves that succeeded),
// and no write of a free record is refused. Grants may be refused while
// the guard is not whole; that is what no guard, no grant asks.
func TestGuardRepairUnderLoadLosesNoUpdate(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p1 := gdSetup(t, d, offlinelock.Config{})
			other := d.open(t)
			p2 := offlinelock.New(offlinelock.Config{Table: p1.TableName(), Models: []any{&GdCustomer{}, &GdOrder{}, &GdLine{}, &GdNote{}}})
			require.NoError(t, other.Use(p2), "the second node")
			ids := []uint{130, 131, 132}
			for _, id := range ids {
				require.NoError(t, admin(db).Save(&GdCustomer{ID: id, Name: "n", Credit: 0}).Error)
			}
			nodes := []struct {
				db *gorm.DB
				p  *offlinelock.Plugin
			}{{db, p1}, {other, p2}}
			var saved [3]atomic.Int64
			var refused atomic.Int64
			half := make(chan struct{})
			var once sync.Once
			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for w := 0; w < 4; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					o := offlinelock.Owner{Session: fmt.Sprintf("upgrade-%d", w), User: "w"}
					for i := 0; i < 40; i++ {
						n, k := nodes[(w+i)%2], (w+i)%3
						tx := n.db.WithContext(offlinelock.WithOwner(context.Background(), o))
						c := GdCustomer{ID: ids[k]}
						if _, err := n.p.Acquire(tx, &c, offlinelock.Write); err != nil {
							if errors.Is(err, offlinelock.ErrLocked) || errors.Is(err, offlinelock.ErrUnenforceable) || deadlocked(err) {
								refused.Add(1)
								continue
							}
							errs <- fmt.Errorf("acquire: %w", err)
							return
						}
						err := tx.Transaction(func(tx *gorm.DB) error {
							if err := tx.First(&c, ids[k]).Error; err != nil {
								return err
							}
							c.Credit++
							if err := tx.Save(&c).Error; err != nil {
								return err
							}
							return n.p.Release(tx, &c)
						})
						if deadlocked(err) { // rolled back whole: nothing saved, retried by the loop
							refused.Add(1)
							continue
						}
						if err != nil {
							errs <- fmt.Errorf("save: %w", err)
							return
						}
						if saved[k].Add(1) == 10 {
							once.Do(func() { close(half) })
						}
					}
				}(w)
			}
			plain := plainGORM(t, db)
			var free atomic.Int64
			wg.Add(1)
			go func() { // another client's writes of a free record
				defer wg.Done()
				for i := 0; i < 200; i++ {
					if err := plain.Exec(`UPDATE gd_orders SET note = ? WHERE id = 2`, fmt.Sprint(i)).Error; err != nil {
						errs <- fmt.Errorf("a free record's write refused: %w", err)
						return
					}
					free.Add(1)
				}
			}()
			<-half
			drop := `DROP TRIGGER IF EXISTS ` // one trigger of gd_customers' guard
			var name string
			if d.name == "postgres" {
				require.NoError(t, db.Raw(`SELECT tgname FROM pg_trigger WHERE tgrelid = 'gd_customers'::regclass AND tgname LIKE 'ol%' ORDER BY tgname LIMIT 1`).Scan(&name).Error)
				drop += `"` + name + `" ON gd_customers`
			} else {
				require.NoError(t, db.Raw(`SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'gd_customers' AND TRIGGER_NAME LIKE 'ol%' ORDER BY 1 LIMIT 1`).Scan(&name).Error)
				drop += "`" + name + "`"
			}
			require.NotEmpty(t, name)
			require.NoError(t, db.Exec(drop).Error)
			// The repair, under load: on MariaDB a trigger's DDL waits for the
			// metadata lock of every open transaction on the table, and gives
			// up after 5 s; it is tried again until it lands.
			var repaired atomic.Bool
			var tries atomic.Int64
			stop := make(chan struct{})
			repairDone := make(chan struct{})
			go func() {
				defer close(repairDone)
				for !repaired.Load() {
					select {
					case <-stop:
						return
					default:
					}
					tries.Add(1)
					repaired.Store(p2.InstallGuard(other) == nil)
				}
			}()
			wg.Wait()
			close(stop)
			<-repairDone
			if !repaired.Load() {
				require.NoError(t, p2.InstallGuard(other), "the repair, after the load")
			}
			guarded, err := p1.GuardedTables(db)
			require.NoError(t, err)
			assert.Contains(t, guarded, "gd_customers", "the repair put the trigger back")
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			assert.EqualValues(t, 200, free.Load(), "every write of a free record landed")
			for k, id := range ids {
				var c GdCustomer
				require.NoError(t, plainGORM(t, db).First(&c, id).Error)
				assert.EqualValues(t, saved[k].Load(), c.Credit, "customer %d: no increment lost", id)
			}
			t.Logf("RELIABILITY repair under load (%s): %d saves, %d grants refused, %d free writes, repaired under load: %v after %d tries", d.name,
				saved[0].Load()+saved[1].Load()+saved[2].Load(), refused.Load(), free.Load(), repaired.Load(), tries.Load())
		})
	}
}

// deadlocked says whether err is MariaDB's 1213: InnoDB rolled the whole
// transaction back as a deadlock's victim, and it may be retried.
func deadlocked(err error) bool {
	var me *mysqldriver.MySQLError
	return errors.As(err, &me) && me.Number == 1213
}
