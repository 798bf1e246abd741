package offlinelock_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// The database guard: PostgreSQL and MySQL/MariaDB refuse a write of a
// record another session holds, whoever sends it.

// The guard's models and their setup are testkit's (models_guard.go).

// GdCustomer is a root locked by Acquire (exclusive_write).
type GdCustomer = testkit.GdCustomer

// GdOrder is a root with members (GdLine) and tags (many2many).
type GdOrder = testkit.GdOrder

// GdLine is a member of its order's aggregate.
type GdLine = testkit.GdLine

// GdNote is locked by Acquire; its folder's delete cascades to it.
type GdNote = testkit.GdNote

// gdSetup makes the guarded tables, seeds them and has martin hold
// customer 129, order 1 and note 1 (customer 130, order 2, note 2 free).
func gdSetup(t *testing.T, d database, cfg offlinelock.Config) (*gorm.DB, *offlinelock.Plugin) {
	return testkit.GdSetup(t, d.open(t), cfg)
}

// plainGORM opens the same database without the plugin: another service
// (testkit.PlainGORM).
func plainGORM(t *testing.T, db *gorm.DB) *gorm.DB { return testkit.PlainGORM(t, db) }

// cli runs sql in the database's command-line client: a second process,
// on the database db is connected to.
func cli(t *testing.T, db *gorm.DB, sql string) error {
	t.Helper()
	var name string
	var cmd *exec.Cmd
	if db.Dialector.Name() == "mysql" {
		require.NoError(t, db.Raw(`SELECT DATABASE()`).Scan(&name).Error)
		cmd = exec.Command("mysql", "-h127.0.0.1", "-uroot", name, "-e", sql)
	} else {
		require.NoError(t, db.Raw(`SELECT current_database()`).Scan(&name).Error)
		cmd = exec.Command("psql", "-h", "127.0.0.1", "-U", "postgres", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose", name, "-c", sql)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// refusedByGuard says whether err is the guard's refusal of a write of
// resource id held by martin (testkit.RefusedByGuard).
func refusedByGuard(err error, resource, id string) bool {
	return testkit.RefusedByGuard(err, resource, id)
}

// q is s in db's dialect (testkit.Q).
func q(db *gorm.DB, s string) string { return testkit.Q(db, s) }

// gdWrite is one way a client writes a record: held (martin holds it) or
// free, each given as SQL or as a call.
type gdWrite struct {
	name     string
	only     string // a database the write exists on
	resource string
	held     func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) error
	free     func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) error
	heldID   string
	check    func(t *testing.T, db *gorm.DB) // the held record is unchanged
}

// customerUnchanged checks that the held customer 129 is as seeded
// (testkit.CustomerUnchanged).
func customerUnchanged(t *testing.T, db *gorm.DB) { testkit.CustomerUnchanged(t, db) }

// rawOn is a write of sqlText outside GORM and the plugin (testkit.RawOn).
func rawOn(sqlText string) func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) error {
	return testkit.RawOn(sqlText)
}

func gdWrites() []gdWrite {
	upd := "UPDATE `gd_customers` SET credit = 1 WHERE id = %d"
	return []gdWrite{
		{name: "database/sql on the plugin's pool", resource: "gd_customers", heldID: "129",
			held: rawOn(fmt.Sprintf(upd, 129)), free: rawOn(fmt.Sprintf(upd, 130)), check: customerUnchanged},
		{name: "a second process (psql, mysql)", resource: "gd_customers", heldID: "129",
			held: func(t *testing.T, db *gorm.DB, _ *offlinelock.Plugin) error {
				return cli(t, db, q(db, fmt.Sprintf(upd, 129)))
			},
			free: func(t *testing.T, db *gorm.DB, _ *offlinelock.Plugin) error {
				return cli(t, db, q(db, fmt.Sprintf(upd, 130)))
			},
			check: customerUnchanged},
		{name: "GORM without the plugin", resource: "gd_customers", heldID: "129",
			held: func(t *testing.T, db *gorm.DB, _ *offlinelock.Plugin) error {
				return plainGORM(t, db).Model(&GdCustomer{ID: 129}).Update("credit", 1).Error
			},
			free: func(t *testing.T, db *gorm.DB, _ *offlinelock.Plugin) error {
				return plainGORM(t, db).Model(&GdCustomer{ID: 130}).Update("credit", 1).Error
			}, check: customerUnchanged},
		{name: "Exec through the plugin", resource: "gd_customers", heldID: "129",
			held: func(t *testing.T, db *gorm.DB, _ *offlinelock.Plugin) error {
				return as(db, david).Exec(q(db, fmt.Sprintf(upd, 129))).Error
			},
			free: func(t *testing.T, db *gorm.DB, _ *offlinelock.Plugin) error {
				return as(db, david).Exec(q(db, fmt.Sprintf(upd, 130))).Error
			}, check: customerUnchanged},
		{name: "Bypass", resource: "gd_customers", heldID: "129",
			held: func(t *testing.T, db *gorm.DB, _ *offlinelock.Plugin) error {
				return bypassAs(db, david).Save(&GdCustomer{ID: 129, Name: "job", Credit: 1}).Error
			},
			free: func(t *testing.T, db *gorm.DB, _ *offlinelock.Plugin) error {
				return bypassAs(db, david).Save(&GdCustomer{ID: 130, Name: "job", Credit: 1}).Error
			}, check: customerUnchanged},
		{name: "Bypass without an owner", resource: "gd_customers", heldID: "129",
			held: func(t *testing.T, db *gorm.DB, _ *offlinelock.Plugin) error {
				return db.WithContext(offlinelock.Bypass(context.Background(), "nightly job")).Model(&GdCustomer{ID: 129}).Update("credit", 1).Error
			},
			free: func(t *testing.T, db *gorm.DB, _ *offlinelock.Plugin) error {
				return db.WithContext(offlinelock.Bypass(context.Background(), "nightly job")).Model(&GdCustomer{ID: 130}).Update("credit", 1).Error
			}, check: customerUnchanged},
		{name: "raw upsert", resource: "gd_customers", heldID: "129",
			held: func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) error {
				return rawOn(upsertSQL(db, 129))(t, db, p)
			},
			free: func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) error {
				return rawOn(upsertSQL(db, 130))(t, db, p)
			},
			check: customerUnchanged},
		{name: "raw delete", resource: "gd_customers", heldID: "129",
			held: rawOn("DELETE FROM `gd_customers` WHERE id = 129"), free: rawOn("DELETE FROM `gd_customers` WHERE id = 130"),
			check: customerUnchanged},
		{name: "insert of a held id", resource: "gd_customers", heldID: "131",
			held: func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) error {
				_, err := p.Acquire(as(db, martin), &GdCustomer{ID: 131}, offlinelock.Write)
				require.NoError(t, err)
				return rawOn("INSERT INTO `gd_customers` (id, name, credit) VALUES (131, 'x', 0)")(t, db, p)
			},
			free: rawOn("INSERT INTO `gd_customers` (id, name, credit) VALUES (132, 'x', 0)"),
			check: func(t *testing.T, db *gorm.DB) {
				var n int64
				require.NoError(t, plainGORM(t, db).Model(&GdCustomer{}).Where("id = 131").Count(&n).Error)
				assert.Zero(t, n)
			}},
		{name: "member moved out of a held aggregate", resource: "gd_orders", heldID: "1",
			held:  rawOn("UPDATE `gd_lines` SET gd_order_id = 2 WHERE id = 1"),
			free:  rawOn("UPDATE `gd_lines` SET qty = 5 WHERE id = 2"),
			check: func(t *testing.T, db *gorm.DB) { assert.Equal(t, uint(1), testkit.LineOf(t, db, 1).GdOrderID) }},
		{name: "member moved into a held aggregate", resource: "gd_orders", heldID: "1",
			held:  rawOn("UPDATE `gd_lines` SET gd_order_id = 1 WHERE id = 2"),
			free:  rawOn("UPDATE `gd_lines` SET gd_order_id = 2 WHERE id = 2"),
			check: func(t *testing.T, db *gorm.DB) { assert.Equal(t, uint(2), testkit.LineOf(t, db, 2).GdOrderID) }},
		{name: "member added to a held aggregate", resource: "gd_orders", heldID: "1",
			held: func(t *testing.T, db *gorm.DB, _ *offlinelock.Plugin) error {
				return plainGORM(t, db).Create(&GdLine{ID: 9, GdOrderID: 1}).Error
			},
			free: func(t *testing.T, db *gorm.DB, _ *offlinelock.Plugin) error {
				return plainGORM(t, db).Create(&GdLine{ID: 10, GdOrderID: 2}).Error
			},
			check: func(t *testing.T, db *gorm.DB) {
				var n int64
				require.NoError(t, plainGORM(t, db).Model(&GdLine{}).Where("id = 9").Count(&n).Error)
				assert.Zero(t, n)
			}},
		{name: "many2many join row", resource: "gd_orders", heldID: "1",
			held: rawOn("INSERT INTO `gd_order_tags` (gd_order_id, gd_tag_id) VALUES (1, 1)"),
			free: rawOn("INSERT INTO `gd_order_tags` (gd_order_id, gd_tag_id) VALUES (2, 1)"),
			check: func(t *testing.T, db *gorm.DB) {
				var n int64
				require.NoError(t, plainGORM(t, db).Table("gd_order_tags").Where("gd_order_id = 1").Count(&n).Error)
				assert.Zero(t, n)
			}},
		{name: "a delete that cascades to a held row", resource: "gd_notes", heldID: "1",
			held: rawOn("DELETE FROM `gd_folders` WHERE id = 1"), free: rawOn("DELETE FROM `gd_folders` WHERE id = 2"),
			check: func(t *testing.T, db *gorm.DB) {
				var n int64
				require.NoError(t, plainGORM(t, db).Model(&GdNote{}).Where("id = 1").Count(&n).Error)
				assert.EqualValues(t, 1, n)
			}},
		{name: "a view made by hand", resource: "gd_customers", heldID: "129",
			held: func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) error {
				require.NoError(t, rawOn("CREATE VIEW gd_customers_v AS SELECT * FROM gd_customers")(t, db, p))
				t.Cleanup(func() { rawOn("DROP VIEW gd_customers_v")(t, db, p) })
				return rawOn("UPDATE gd_customers_v SET credit = 1 WHERE id = 129")(t, db, p)
			},
			free:  rawOn("UPDATE gd_customers_v SET credit = 1 WHERE id = 130"),
			check: customerUnchanged},
		{name: "a renamed table", resource: "gd_customers", heldID: "129",
			held: renamed("UPDATE gd_customers_renamed SET credit = 1 WHERE id = 129"),
			free: renamed("UPDATE gd_customers_renamed SET credit = 1 WHERE id = 130"), check: customerUnchanged},
		{name: "TRUNCATE", only: "postgres", resource: "gd_customers", heldID: "",
			held: rawOn("TRUNCATE gd_customers CASCADE"), check: customerUnchanged},
	}
}

// dialectorOnPool opens GORM on an existing connection pool.
func dialectorOnPool(name string, pool *sql.DB) gorm.Dialector {
	if name == "mysql" {
		return mysql.New(mysql.Config{Conn: pool})
	}
	return postgres.New(postgres.Config{Conn: pool})
}

// renamed runs sqlText while gd_customers is named gd_customers_renamed.
func renamed(sqlText string) func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) error {
	return func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) error {
		require.NoError(t, rawOn("ALTER TABLE gd_customers RENAME TO gd_customers_renamed")(t, db, p))
		defer func() { require.NoError(t, rawOn("ALTER TABLE gd_customers_renamed RENAME TO gd_customers")(t, db, p)) }()
		return rawOn(sqlText)(t, db, p)
	}
}

func upsertSQL(db *gorm.DB, id int) string {
	if db.Dialector.Name() == "mysql" {
		return fmt.Sprintf("INSERT INTO gd_customers (id, name, credit) VALUES (%d, 'x', 1) ON DUPLICATE KEY UPDATE credit = 1", id)
	}
	return fmt.Sprintf("INSERT INTO gd_customers (id, name, credit) VALUES (%d, 'x', 1) ON CONFLICT (id) DO UPDATE SET credit = 1", id)
}

func bypassAs(db *gorm.DB, o offlinelock.Owner) *gorm.DB {
	return db.WithContext(offlinelock.Bypass(offlinelock.WithOwner(context.Background(), o), "nightly job"))
}

// TestGuardRefusesEveryClient: a write of a record martin holds is refused
// by the database whoever sends it, with the row unchanged; the same
// client's write of a free record lands.
func TestGuardRefusesEveryClient(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			for _, w := range gdWrites() {
				if w.only != "" && w.only != d.name {
					continue
				}
				t.Run(w.name, func(t *testing.T) {
					db, p := gdSetup(t, d, offlinelock.Config{})
					err := w.held(t, db, p)
					if w.heldID == "" {
						require.Error(t, err)
						assert.Contains(t, err.Error(), "offlinelock: ")
						assert.Contains(t, err.Error(), "is locked by martin")
					} else {
						assert.True(t, refusedByGuard(err, w.resource, w.heldID), "want the guard's refusal of %s %s, got %v", w.resource, w.heldID, err)
					}
					w.check(t, db)
					if w.free != nil {
						assert.NoError(t, w.free(t, db, p), "a write of a free record")
					}
				})
			}
		})
	}
}

// TestGuardLetsTheHolderWrite: martin's own writes of what he holds land,
// through the plugin, under Bypass and as raw SQL.
func TestGuardLetsTheHolderWrite(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := gdSetup(t, d, offlinelock.Config{})
			m := as(db, martin)
			require.NoError(t, m.Save(&GdCustomer{ID: 129, Name: "Acme", Credit: 110}).Error)
			require.NoError(t, m.Model(&GdCustomer{ID: 129}).Update("credit", gorm.Expr("credit + 10")).Error)
			require.NoError(t, m.Exec(q(db, "UPDATE `gd_customers` SET credit = credit + 10 WHERE id = 129")).Error)
			require.NoError(t, bypassAs(db, martin).Model(&GdCustomer{ID: 129}).Update("credit", gorm.Expr("credit + 10")).Error)
			require.NoError(t, m.Transaction(func(tx *gorm.DB) error {
				return tx.Exec(q(db, "UPDATE `gd_customers` SET credit = credit + 10 WHERE id = 129")).Error
			}))
			require.NoError(t, m.Create(&GdLine{ID: 3, GdOrderID: 1, Qty: 3}).Error, "a member added to his aggregate")
			_, err := p.Acquire(m, &GdOrder{ID: 2}, offlinelock.Write)
			require.NoError(t, err)
			require.NoError(t, m.Model(&GdLine{ID: 3}).Update("gd_order_id", 2).Error, "and moved out of it")
			require.NoError(t, m.Model(&GdOrder{ID: 1}).Association("Tags").Append(&testkit.GdTag{ID: 1}), "a tag of his order")
			require.NoError(t, m.Delete(&GdNote{ID: 1}).Error)
			var c GdCustomer
			require.NoError(t, plainGORM(t, db).First(&c, 129).Error)
			assert.Equal(t, 150, c.Credit)
		})
	}
}

// TestGuardIdentityEndsWithTheStatement: a pooled connection the holder's
// write used carries no right to write a held record afterwards.
func TestGuardIdentityEndsWithTheStatement(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, _ := gdSetup(t, d, offlinelock.Config{})
			sqlDB, err := db.DB()
			require.NoError(t, err)
			sqlDB.SetMaxOpenConns(1) // one connection: the holder's, then everyone's
			m := as(db, martin)
			require.NoError(t, m.Model(&GdCustomer{ID: 129}).Update("credit", 101).Error)
			require.NoError(t, m.Exec(q(db, "UPDATE `gd_customers` SET credit = 102 WHERE id = 129")).Error)
			require.NoError(t, m.Transaction(func(tx *gorm.DB) error {
				return tx.Model(&GdCustomer{ID: 129}).Update("credit", 103).Error
			}))
			_, err = sqlDB.Exec(q(db, "UPDATE `gd_customers` SET credit = 1 WHERE id = 129"))
			assert.True(t, refusedByGuard(err, "gd_customers", "129"), "database/sql after the holder's writes: %v", err)
			plain, err := gorm.Open(dialectorOnPool(db.Dialector.Name(), sqlDB), &gorm.Config{Logger: logger.Discard})
			require.NoError(t, err)
			err = plain.Model(&GdCustomer{ID: 129}).Update("credit", 1).Error
			assert.True(t, refusedByGuard(err, "gd_customers", "129"), "GORM without the plugin, on the holder's connection: %v", err)
			var c GdCustomer
			require.NoError(t, plainGORM(t, db).First(&c, 129).Error)
			assert.Equal(t, 103, c.Credit)
		})
	}
}

// TestGuardIsTheFence: a raw write of the holder's (which the plugin does
// not fence) holds the key row until its transaction ends, so a force
// release waits for its commit rather than slip in between.
func TestGuardIsTheFence(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := gdSetup(t, d, offlinelock.Config{Authorize: func(context.Context, string, offlinelock.Lock) error { return nil }})
			tx := as(db, martin).Begin()
			require.NoError(t, tx.Error)
			t.Cleanup(func() { tx.Rollback() })
			require.NoError(t, tx.Exec(q(db, "UPDATE `gd_customers` SET credit = 7 WHERE id = 129")).Error)
			released := make(chan error, 1)
			go func() { released <- p.ForceRelease(db, "gd_customers", "129") }()
			waitForRowLockWait(t, db, p.TableName())
			select {
			case err := <-released:
				t.Fatalf("the force release did not wait for the guarded write's commit: %v", err)
			default:
			}
			require.NoError(t, tx.Commit().Error)
			require.NoError(t, <-released)
			var c GdCustomer
			require.NoError(t, plainGORM(t, db).First(&c, 129).Error)
			assert.Equal(t, 7, c.Credit)
		})
	}
}

// waitForRowLockWait waits until a statement on lockTable waits for a row
// lock (bounded: 10 s). MariaDB reads a key row by its primary key while it
// plans, where INNODB_TRX does not show the wait: there the sign is a
// locking read of the lock table still running after 200 ms.
func waitForRowLockWait(t *testing.T, db *gorm.DB, lockTable string) {
	t.Helper()
	query, args := `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE ?`, []any{"%" + lockTable + "%"}
	if db.Dialector.Name() == "mysql" {
		query = `SELECT count(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND TIME_MS > 200`
		args = []any{"%" + lockTable + "%FOR UPDATE%"}
	}
	other := plainGORM(t, db)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int64
		require.NoError(t, other.Raw(query, args...).Scan(&n).Error)
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no statement on the lock table began waiting for a row lock within 10 s")
}

// TestGuardInstall: the guard is installed by db.Use on tables that exist,
// before the first lock or write of a table made later and of a table
// dropped and made again; idempotent; removable; off with DisableGuard.
func TestGuardInstall(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setup(t, d, offlinelock.Config{Models: []any{&GdCustomer{}}})
			fcDropCleanup(t, db, &GdCustomer{})
			require.NoError(t, db.AutoMigrate(&GdCustomer{})) // after db.Use
			writeHeld := func() error {
				return plainGORM(t, db).Model(&GdCustomer{ID: 129}).Update("credit", 1).Error
			}
			require.NoError(t, as(db, martin).Create(&GdCustomer{ID: 129, Name: "Acme"}).Error)
			_, err := p.Acquire(as(db, martin), &GdCustomer{ID: 129}, offlinelock.Write)
			require.NoError(t, err)
			assert.True(t, refusedByGuard(writeHeld(), "gd_customers", "129"), "a table made after db.Use")

			require.NoError(t, p.InstallGuard(db))
			require.NoError(t, p.InstallGuard(db))
			assert.True(t, refusedByGuard(writeHeld(), "gd_customers", "129"), "installed twice")

			// Dropped and made again by the migrator: guarded again by the
			// plugin's next lock.
			require.NoError(t, db.Migrator().DropTable(&GdCustomer{}))
			require.NoError(t, db.AutoMigrate(&GdCustomer{}))
			require.NoError(t, as(db, martin).Create(&GdCustomer{ID: 129, Name: "Acme"}).Error)
			_, err = p.Acquire(as(db, martin), &GdCustomer{ID: 129}, offlinelock.Write)
			require.NoError(t, err)
			assert.True(t, refusedByGuard(writeHeld(), "gd_customers", "129"), "a table dropped and made again")

			require.NoError(t, p.RemoveGuard(db))
			assert.NoError(t, writeHeld(), "removed: the database no longer refuses")

			// A second plugin with the guard off installs nothing, and a
			// node that starts with it on installs it again.
			db2, _ := setup(t, d, offlinelock.Config{Table: p.TableName(), DisableGuard: true})
			assert.NoError(t, plainGORM(t, db2).Model(&GdCustomer{ID: 129}).Update("credit", 2).Error)
			db3, _ := setup(t, d, offlinelock.Config{Table: p.TableName()})
			assert.True(t, refusedByGuard(plainGORM(t, db3).Model(&GdCustomer{ID: 129}).Update("credit", 3).Error, "gd_customers", "129"), "installed by db.Use")
		})
	}
}

// GdBad has a lock tag that does not parse.
type GdBad struct {
	ID uint `gorm:"primaryKey" lock:"exclusive"`
}

// TestFailedUseFailsClosed: a plugin whose db.Use failed (a bad tag in
// Config.Models; on MariaDB a DSN without parseTime=true), and whose error
// the caller ignored, refuses every statement on a lockable table with
// that error, and its calls return it.
func TestFailedUseFailsClosed(t *testing.T) {
	type failure struct {
		name string
		open func(t *testing.T) *gorm.DB
		cfg  offlinelock.Config
	}
	var cases []failure
	for _, d := range databases() {
		cases = append(cases, failure{d.name + "/bad tag", func(t *testing.T) *gorm.DB { return d.open(t) },
			offlinelock.Config{Models: []any{&GdBad{}}}})
	}
	cases = append(cases, failure{"mysql/DSN without parseTime", func(t *testing.T) *gorm.DB {
		openMySQL(t) // skipped or failed as every MySQL test is
		db, err := gorm.Open(dialectorOf("mysql", strings.Replace(dsnOf("mysql"), "parseTime=true", "parseTime=false", 1)), &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		return db
	}, offlinelock.Config{}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := c.open(t)
			require.NoError(t, db.Migrator().DropTable(&GdCustomer{}))
			require.NoError(t, db.AutoMigrate(&GdCustomer{}))
			t.Cleanup(func() { db.Migrator().DropTable(&GdCustomer{}) })
			require.NoError(t, db.Create(&GdCustomer{ID: 129, Name: "Acme"}).Error)
			c.cfg.Table = "ol_" + randomHex(6)
			p := offlinelock.New(c.cfg)
			useErr := db.Use(p) // ignored, as doc.go's example once did
			require.Error(t, useErr)
			m := as(db, martin)
			for _, w := range []struct {
				name string
				run  func() error
			}{
				{"Save", func() error { return m.Save(&GdCustomer{ID: 129, Name: "x"}).Error }},
				{"Update", func() error { return m.Model(&GdCustomer{ID: 129}).Update("name", "x").Error }},
				{"First", func() error { return m.First(&GdCustomer{}, 129).Error }},
				{"Delete", func() error { return m.Delete(&GdCustomer{ID: 129}).Error }},
				{"Exec", func() error { return m.Exec(q(db, "UPDATE `gd_customers` SET name = 'x' WHERE id = 129")).Error }},
				{"Acquire", func() error { _, err := p.Acquire(m, &GdCustomer{ID: 129}, offlinelock.Write); return err }},
				{"Holders", func() error { _, err := p.Holders(m, &GdCustomer{ID: 129}); return err }},
			} {
				err := w.run()
				assert.ErrorContains(t, err, useErr.Error(), w.name)
				assert.ErrorContains(t, err, "failed to initialise", w.name)
			}
			var name string
			require.NoError(t, db.Raw(q(db, "SELECT name FROM `gd_customers` WHERE id = 129")).Scan(&name).Error)
			assert.Equal(t, "Acme", name)
		})
	}
}

// TestGuardJobPattern: the background job of docs/jobs.md, with an owner of its
// own, skips the record martin is editing, and martin's save stands; a
// job written with Bypass is refused by the database instead of
// overwriting it.
func TestGuardJobPattern(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := gdSetup(t, d, offlinelock.Config{})
			job := as(db, offlinelock.Owner{Session: "job:reprice:1", User: "reprice job"})
			var skipped []uint
			for _, id := range []uint{129, 130} {
				_, err := p.Acquire(job, &GdCustomer{ID: id}, offlinelock.Write)
				if errors.Is(err, offlinelock.ErrLocked) {
					skipped = append(skipped, id)
					continue
				}
				require.NoError(t, err)
				var c GdCustomer
				require.NoError(t, job.First(&c, id).Error)
				c.Credit *= 2
				require.NoError(t, job.Save(&c).Error)
				require.NoError(t, p.Release(job, &c))
			}
			assert.Equal(t, []uint{129}, skipped)
			err := bypassAs(db, offlinelock.Owner{Session: "job:bypass", User: "bypass job"}).Model(&GdCustomer{ID: 129}).Update("credit", 0).Error
			var le *offlinelock.LockedError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, "martin", le.Holders[0].Owner.User)
			require.NoError(t, as(db, martin).Save(&GdCustomer{ID: 129, Name: "Acme", Credit: 110}).Error)
			var got []GdCustomer
			require.NoError(t, plainGORM(t, db).Order("id").Find(&got).Error)
			assert.Equal(t, []GdCustomer{{ID: 129, Name: "Acme", Credit: 110}, {ID: 130, Name: "Free", Credit: 200}}, got)
		})
	}
}

// TestGuardInstallConcurrentAndUpgrade: nodes starting together install
// the guard without error, and a guard of another version (an older
// plugin's) is replaced in place.
func TestGuardInstallConcurrentAndUpgrade(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := gdSetup(t, d, offlinelock.Config{})
			errs := make(chan error, 4)
			for range 4 {
				go func() {
					other := offlinelock.New(offlinelock.Config{Table: p.TableName(), Models: []any{&GdCustomer{}, &GdOrder{}, &GdLine{}, &GdNote{}}})
					errs <- d.open(t).Use(other)
				}()
			}
			for range 4 {
				assert.NoError(t, <-errs)
			}
			// An older version: its marks say so; the next install replaces it
			// (on MySQL, an older version's UPDATE trigger ran BEFORE).
			if d.name == "postgres" {
				require.NoError(t, rawOn(`DO $$ DECLARE f regprocedure; BEGIN FOR f IN SELECT t.tgfoid::regprocedure FROM pg_trigger t WHERE t.tgrelid = 'gd_customers'::regclass AND t.tgname LIKE 'ol%\_upd' LOOP EXECUTE format('COMMENT ON FUNCTION %s IS %L', f, 'offlinelock guard 0000'); EXECUTE format('CREATE OR REPLACE FUNCTION %s RETURNS trigger LANGUAGE plpgsql AS $b$ BEGIN RETURN NULL; END $b$', f); END LOOP; END $$`)(t, db, p))
			} else {
				var name string
				require.NoError(t, plainGORM(t, db).Raw(`SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'gd_customers' AND EVENT_MANIPULATION = 'UPDATE' AND TRIGGER_NAME LIKE 'ol%\\_bu'`).Scan(&name).Error)
				require.NoError(t, rawOn("CREATE OR REPLACE TRIGGER `"+name+"` BEFORE UPDATE ON gd_customers FOR EACH ROW BEGIN /* offlinelock guard 0000 */ END")(t, db, p))
			}
			require.NoError(t, rawOn(fmt.Sprintf("UPDATE `gd_customers` SET credit = 100 WHERE id = %d", 129))(t, db, p), "the old version let it through")
			require.NoError(t, p.InstallGuard(db))
			err := rawOn("UPDATE `gd_customers` SET credit = 1 WHERE id = 129")(t, db, p)
			assert.True(t, refusedByGuard(err, "gd_customers", "129"), "upgraded in place: %v", err)
		})
	}
}
