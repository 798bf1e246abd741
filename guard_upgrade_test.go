package offlinelock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/lockstore"
)

// node is one application node: its connection and its plugin.
type node struct {
	db *gorm.DB
	p  *offlinelock.Plugin
}

// upgradeLoad is the load of the upgrade tests: four workers take turns
// on nodes to lock, read, increment and save three customers, while
// another client writes a free order; change runs once ten saves of one
// customer landed, under that load. Afterwards no increment is lost (each
// customer ends at the saves that succeeded) and every free write landed.
// It returns the grants refused as unenforceable after change returned.
func upgradeLoad(t *testing.T, db *gorm.DB, nodes []node, change func()) (unguardedAfter int64) {
	ids := []uint{130, 131, 132}
	for _, id := range ids {
		require.NoError(t, admin(db).Save(&GdCustomer{ID: id, Name: "n", Credit: 0}).Error)
	}
	var saved [3]atomic.Int64
	var refused, afterChange atomic.Int64
	var changed atomic.Bool
	half := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	save := func(n node, o offlinelock.Owner, k int) (bool, error) {
		tx := n.db.WithContext(offlinelock.WithOwner(context.Background(), o))
		c := GdCustomer{ID: ids[k]}
		if _, err := n.p.Acquire(tx, &c, offlinelock.Write); err != nil {
			if errors.Is(err, offlinelock.ErrUnenforceable) && changed.Load() {
				afterChange.Add(1)
			}
			if errors.Is(err, offlinelock.ErrLocked) || errors.Is(err, offlinelock.ErrUnenforceable) || deadlocked(err) {
				return false, nil
			}
			return false, fmt.Errorf("acquire: %w", err)
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
		if deadlocked(err) { // rolled back whole: nothing saved
			return false, nil
		}
		return err == nil, err
	}
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			o := offlinelock.Owner{Session: fmt.Sprintf("upgrade-%d", w), User: "w"}
			for i := 0; i < 40; i++ {
				k := (w + i) % 3
				ok, err := save(nodes[(w+i)%len(nodes)], o, k)
				if err != nil {
					errs <- fmt.Errorf("save: %w", err)
					return
				}
				if !ok {
					refused.Add(1)
				} else if saved[k].Add(1) == 10 {
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
	change()
	changed.Store(true)
	wg.Wait()
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
	t.Logf("RELIABILITY upgrade under load (%s): %d saves, %d grants refused", db.Dialector.Name(),
		saved[0].Load()+saved[1].Load()+saved[2].Load(), refused.Load())
	return afterChange.Load()
}

// installUnderLoad runs p's install until it lands: on MariaDB a
// trigger's DDL waits for the metadata lock of every open transaction on
// the table (1 s at most), and is tried again.
func installUnderLoad(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
	var err error
	for range 200 {
		if err = p.InstallGuard(db); err == nil {
			return
		}
	}
	require.NoError(t, err, "the install, under load")
}

// A repair under load (issue 48): two nodes on one database take turns
// to lock, read, increment and save three records, while another client
// writes free records of another table; midway a trigger of the guarded
// table is dropped, and a node's install puts it back. No increment is
// lost, and no write of a free record is refused. Grants may be refused
// while the guard is not whole; that is what no guard, no grant asks.
func TestGuardRepairUnderLoadLosesNoUpdate(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p1 := gdSetup(t, d, offlinelock.Config{})
			other := d.open(t)
			p2 := offlinelock.New(offlinelock.Config{Table: p1.TableName(), Models: []any{&GdCustomer{}, &GdOrder{}, &GdLine{}, &GdNote{}}})
			require.NoError(t, other.Use(p2), "the second node")
			upgradeLoad(t, db, []node{{db, p1}, {other, p2}}, func() {
				name := guardTriggerOf(t, db, "gd_customers")
				drop := `DROP TRIGGER IF EXISTS "` + name + `" ON gd_customers`
				if d.name == "mysql" {
					drop = "DROP TRIGGER IF EXISTS `" + name + "`"
				}
				require.NoError(t, db.Exec(drop).Error)
				installUnderLoad(t, other, p2)
			})
			guarded, err := p1.GuardedTables(db)
			require.NoError(t, err)
			assert.Contains(t, guarded, "gd_customers", "the repair put the trigger back")
		})
	}
}

// A rolling upgrade (issue 48): two builds side by side on one database,
// the old one (this revision) and a new one whose guard SQL differs
// (revision + 1, the same protocol). Midway, under load, the new build
// installs its guard. The old build counts the new definitions as in
// place: it grants (no refusal as unguarded once the install returned),
// its installs and repairs change nothing back, and its status says ok.
// No increment is lost and no write of a free record is refused.
func TestGuardRollingUpgradeLosesNoUpdate(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, oldNode := gdSetup(t, d, offlinelock.Config{GuardCheckEvery: 20 * time.Millisecond})
			other := d.open(t)
			newNode := offlinelock.New(offlinelock.Config{Table: oldNode.TableName(), GuardCheckEvery: 20 * time.Millisecond,
				Models: []any{&GdCustomer{}, &GdOrder{}, &GdLine{}, &GdNote{}}})
			require.NoError(t, other.Use(newNode), "the new build's node")
			before := guardMarkOf(t, db, "gd_customers")
			unguarded := upgradeLoad(t, db, []node{{db, oldNode}, {other, newNode}}, func() {
				offlinelock.SetGuardRevision(newNode, other, lockstore.GuardRevision+1)
				installUnderLoad(t, other, newNode)
			})
			assert.Zero(t, unguarded, "the old build refused no grant as unguarded after the new build's install")
			upgraded := guardMarkOf(t, db, "gd_customers")
			require.NotEqual(t, before, upgraded, "the new build installed its own definitions")
			require.NoError(t, oldNode.InstallGuard(db), "the old build's install: a no-op")
			assert.Equal(t, upgraded, guardMarkOf(t, db, "gd_customers"), "the old build put nothing back")
			var rev string
			require.NoError(t, db.Raw(`SELECT spec FROM `+oldNode.TableName()+`_tables WHERE name = ?`, "offlinelock:guard revision").Scan(&rev).Error)
			assert.Equal(t, fmt.Sprint(lockstore.GuardRevision+1), rev, "the catalog records the newest revision")
			for _, n := range []node{{db, oldNode}, {other, newNode}} {
				states, err := n.p.GuardStatus(n.db)
				require.NoError(t, err)
				for _, s := range states {
					assert.Equal(t, "ok", s.State, "%s as one build sees it", s.Table)
				}
			}
			_, err := oldNode.Acquire(as(db, martin), &GdCustomer{ID: 130}, offlinelock.Write)
			require.NoError(t, err, "the old build grants under the new build's guard")
			assert.Error(t, plainGORM(t, db).Exec(`UPDATE gd_customers SET credit = credit + 1 WHERE id = 130`).Error,
				"and the new build's guard refuses another client's write of it")
		})
	}
}

// guardTriggerOf is the name of one trigger of the guard on table.
func guardTriggerOf(t *testing.T, db *gorm.DB, table string) string {
	var name string
	if db.Dialector.Name() == "postgres" {
		require.NoError(t, db.Raw(`SELECT tgname FROM pg_trigger WHERE tgrelid = ?::regclass AND tgname LIKE 'ol%' ORDER BY tgname LIMIT 1`, table).Scan(&name).Error)
	} else {
		require.NoError(t, db.Raw(`SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = ? AND TRIGGER_NAME LIKE 'ol%' ORDER BY 1 LIMIT 1`, table).Scan(&name).Error)
	}
	require.NotEmpty(t, name)
	return name
}

// guardMarkOf is the version mark the guard's triggers on table carry
// (the UPDATE trigger function's comment on PostgreSQL).
func guardMarkOf(t *testing.T, db *gorm.DB, table string) string {
	var marks []string
	if db.Dialector.Name() == "postgres" {
		require.NoError(t, db.Raw(`SELECT DISTINCT coalesce(obj_description(t.tgfoid, 'pg_proc'), '') FROM pg_trigger t WHERE t.tgrelid = ?::regclass AND t.tgname LIKE 'ol%' AND obj_description(t.tgfoid, 'pg_proc') IS NOT NULL`, table).Scan(&marks).Error)
	} else {
		var bodies []string
		require.NoError(t, db.Raw(`SELECT ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = ? AND TRIGGER_NAME LIKE 'ol%'`, table).Scan(&bodies).Error)
		for _, b := range bodies {
			if _, rest, ok := strings.Cut(b, "offlinelock guard "); ok {
				marks = append(marks, strings.Fields(rest)[0])
			}
		}
	}
	require.NotEmpty(t, marks)
	return strings.Join(marks, ",")
}

// deadlocked says whether err is MariaDB's 1213: InnoDB rolled the whole
// transaction back as a deadlock's victim, and it may be retried.
func deadlocked(err error) bool {
	var me *mysqldriver.MySQLError
	return errors.As(err, &me) && me.Number == 1213
}
