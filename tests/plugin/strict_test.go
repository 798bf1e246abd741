package plugin_test

// Config.Strict: every raw statement that reads or writes a lockable table
// is ErrStrict, however it is spelled, and nothing else is; migrations and
// untagged tables keep working. The scanner that finds the tables is
// tested on its own in internal/sqlscan.

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

func TestStrictRefusesRawSQLOnLockableTables(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{Strict: true, Models: []any{&Account{}}}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 1)
		require.ErrorIs(t, as(db, martin).Exec(`UPDATE accounts SET credit = 0`).Error, offlinelock.ErrStrict)
		var n int
		require.ErrorIs(t, as(db, martin).Raw(`SELECT credit FROM "accounts" WHERE id = 1`).Scan(&n).Error, offlinelock.ErrStrict)
		require.NoError(t, admin(db).Exec(`UPDATE accounts SET credit = 0`).Error, "Bypass lets it through")
		require.NoError(t, as(db, martin).Exec(`UPDATE customers SET credit = 0`).Error, "other tables are untouched")
	})
	t.Run("off by default", func(t *testing.T) {
		db, _ := setupModels(t, databases()[0], offlinelock.Config{Models: []any{&Account{}}})
		require.NoError(t, as(db, martin).Exec(`UPDATE accounts SET credit = 0`).Error)
	})
}

type fcRaw struct {
	name string
	only string // "sqlite", "postgres" or "mysql"
	run  func(tx *gorm.DB) error
}

func fcExec(sql string) func(tx *gorm.DB) error {
	return func(tx *gorm.DB) error { return tx.Exec(sql).Error }
}

func fcRawScan(sql string) func(tx *gorm.DB) error {
	return func(tx *gorm.DB) error {
		var rows []map[string]any
		return tx.Raw(sql).Scan(&rows).Error
	}
}

// Statements that name the lockable table accounts: ErrStrict.
var fcStrictRefused = []fcRaw{
	{"Exec UPDATE", "", fcExec(`UPDATE accounts SET name = 'leak' WHERE id = 1`)},
	{"Exec UPDATE after a block comment", "", fcExec(`/* maintenance */ UPDATE accounts SET name = 'leak' WHERE id = 1`)},
	{"Exec UPDATE after a line comment", "", fcExec("-- maintenance\nUPDATE accounts SET name = 'leak' WHERE id = 1")},
	{"Exec UPDATE with a comment as the space", "", fcExec(`UPDATE/**/accounts/**/SET name = 'leak' WHERE id = 1`)},
	{"Exec UPDATE with tabs and newlines", "", fcExec("UPDATE\n\taccounts\r\n\tSET name = 'leak'\n WHERE id = 1")},
	{"Exec UPDATE quoted", "", fcExec(`UPDATE "accounts" SET name = 'leak' WHERE id = 1`)},
	{"Exec UPDATE upper case", "", fcExec(`UPDATE ACCOUNTS SET name = 'leak' WHERE id = 1`)},
	{"Exec UPDATE mixed case", "", fcExec(`update AcCoUnTs set name = 'leak' where id = 1`)},
	{"Exec UPDATE quoted upper case", "sqlite", fcExec(`UPDATE "ACCOUNTS" SET name = 'leak' WHERE id = 1`)},
	{"Exec UPDATE backquoted", "sqlite", fcExec("UPDATE `accounts` SET name = 'leak' WHERE id = 1")},
	{"Exec UPDATE bracketed", "sqlite", fcExec(`UPDATE [accounts] SET name = 'leak' WHERE id = 1`)},
	{"Exec UPDATE main.accounts", "sqlite", fcExec(`UPDATE main.accounts SET name = 'leak' WHERE id = 1`)},
	{"Exec UPDATE public.accounts", "postgres", fcExec(`UPDATE public.accounts SET name = 'leak' WHERE id = 1`)},
	{"Exec UPDATE \"public\".\"accounts\"", "postgres", fcExec(`UPDATE "public"."accounts" SET name = 'leak' WHERE id = 1`)},
	{"Exec UPDATE aliased", "postgres", fcExec(`UPDATE accounts AS a SET name = 'leak' WHERE a.id = 1`)},
	{"Exec UPDATE aliased", "sqlite", fcExec(`UPDATE accounts AS a SET name = 'leak' WHERE a.id = 1`)},
	{"Exec DELETE", "", fcExec(`DELETE FROM accounts WHERE id = 1`)},
	{"Exec INSERT", "", fcExec(`INSERT INTO accounts (id, name, credit) VALUES (900, 'leak', 1)`)},
	{"Exec INSERT OR REPLACE", "sqlite", fcExec(`INSERT OR REPLACE INTO accounts (id, name, credit) VALUES (1, 'leak', 1)`)},
	{"Exec REPLACE INTO", "sqlite", fcExec(`REPLACE INTO accounts (id, name, credit) VALUES (1, 'leak', 1)`)},
	{"Exec REPLACE INTO", "mysql", fcExec(`REPLACE INTO accounts (id, name, credit) VALUES (1, 'leak', 1)`)},
	{"Exec REPLACE … SELECT", "mysql", fcExec(`REPLACE accounts SELECT id, 'leak', credit FROM accounts WHERE id = 1`)},
	{"Exec INSERT IGNORE", "mysql", fcExec(`INSERT IGNORE INTO accounts (id, name, credit) VALUES (900, 'leak', 1)`)},
	{"Exec INSERT … ON DUPLICATE KEY UPDATE", "mysql", fcExec(`INSERT INTO accounts (id, name, credit) VALUES (1, 'x', 1) ON DUPLICATE KEY UPDATE name = 'leak'`)},
	{"Exec UPDATE backquoted", "mysql", fcExec("UPDATE `accounts` SET name = 'leak' WHERE id = 1")},
	{"Exec UPDATE after a # comment", "mysql", fcExec("# maintenance\nUPDATE accounts SET name = 'leak' WHERE id = 1")},
	{"Exec UPDATE in an executable comment", "mysql", fcExec(`/*!40000 UPDATE accounts SET name = 'leak' WHERE id = 1 */`)},
	{"Exec UPDATE after a backslash-escaped quote", "mysql", fcExec(`UPDATE accounts SET name = 'it\'s' WHERE id = 1`)},
	{"Exec second statement", "sqlite", fcExec(`SELECT 1; UPDATE accounts SET name = 'leak' WHERE id = 1`)},
	{"Exec WITH … UPDATE", "postgres", fcExec(`WITH x AS (SELECT 1) UPDATE accounts SET name = 'leak' WHERE id = 1`)},
	{"Exec TRUNCATE", "postgres", fcExec(`TRUNCATE accounts`)},
	{"Exec TRUNCATE TABLE quoted", "postgres", fcExec(`TRUNCATE TABLE "accounts"`)},
	{"Exec EXPLAIN ANALYZE UPDATE", "postgres", fcExec(`EXPLAIN ANALYZE UPDATE accounts SET name = 'leak' WHERE id = 1`)},
	{"Exec DO block", "postgres", fcExec(`DO $$ BEGIN UPDATE accounts SET name = 'leak' WHERE id = 1; END $$`)},
	{"Exec DO block with a tag", "postgres", fcExec(`DO $x$ BEGIN EXECUTE 'UPDATE ' || 'accounts SET name = ''leak'' WHERE id = 1'; END $x$`)},
	{"Exec MERGE", "postgres", fcExec(`MERGE INTO accounts a USING (SELECT 1 AS id) s ON a.id = s.id WHEN MATCHED THEN UPDATE SET name = 'leak'`)},
	{"Raw UPDATE RETURNING into the model", "", func(tx *gorm.DB) error {
		var got []Account
		return tx.Raw(`UPDATE accounts SET name = 'leak' WHERE id = 1 RETURNING *`).Find(&got).Error
	}},
	{"Raw UPDATE RETURNING Scan", "", func(tx *gorm.DB) error {
		var got []Account
		return tx.Raw(`UPDATE accounts SET name = 'leak' WHERE id = 1 RETURNING *`).Scan(&got).Error
	}},
	{"Raw DELETE RETURNING into the model", "", func(tx *gorm.DB) error {
		var got []Account
		return tx.Raw(`DELETE FROM accounts WHERE id = 1 RETURNING *`).Find(&got).Error
	}},
	{"Raw WITH u AS (UPDATE … RETURNING) SELECT", "postgres", fcRawScan(`WITH u AS (UPDATE accounts SET name = 'leak' WHERE id = 1 RETURNING id) SELECT id FROM u`)},
	{"Raw SELECT Scan into a DTO", "", fcRawScan(`SELECT * FROM accounts WHERE id = 1`)},
	{"Raw SELECT with odd spacing", "", fcRawScan("SELECT*FROM\"accounts\"WHERE id = 1")},
	{"Raw select lower case", "", fcRawScan(`select * from accounts where id = 1`)},
	{"Raw parenthesised SELECT", "", fcRawScan(`(SELECT * FROM accounts WHERE id = 1)`)},
	{"Raw SELECT FROM two tables", "", fcRawScan(`SELECT * FROM customers, accounts WHERE accounts.id = 1`)},
	{"Raw SELECT JOIN", "", fcRawScan(`SELECT accounts.* FROM customers JOIN accounts ON accounts.id = customers.id`)},
	{"Raw SELECT in a subquery", "", fcRawScan(`SELECT (SELECT name FROM accounts WHERE id = 1) AS n`)},
	{"Raw EXPLAIN ANALYZE UPDATE", "postgres", fcRawScan(`EXPLAIN ANALYZE UPDATE accounts SET name = 'leak' WHERE id = 1`)},
	{"Raw Rows", "", func(tx *gorm.DB) error {
		rows, err := tx.Raw(`SELECT * FROM accounts WHERE id = 1`).Rows()
		if err == nil {
			rows.Close()
		}
		return err
	}},
	{"Raw Row", "", func(tx *gorm.DB) error {
		var n string
		return fcScanRow(tx.Raw(`SELECT name FROM accounts WHERE id = 1`), &n)
	}},
}

// Statements that do not touch a lockable table: not refused.
var fcStrictAllowed = []fcRaw{
	{"SELECT 'accounts'", "", fcRawScan(`SELECT 'accounts' AS s`)},
	{"SELECT 1 -- accounts", "", fcRawScan("SELECT 1 AS one -- accounts")},
	{"SELECT 1 /* accounts */", "", fcRawScan(`SELECT 1 AS one /* accounts */`)},
	{"SELECT from an untagged table with the name in a literal", "", fcRawScan(`SELECT * FROM customers WHERE name = 'accounts'`)},
	{"UPDATE an untagged table with the name in a literal", "", fcExec(`UPDATE customers SET name = 'accounts' WHERE id = 1`)},
	{"SELECT $$accounts$$", "postgres", fcRawScan(`SELECT $$accounts$$ AS s`)},
	{"SELECT from a table whose name contains accounts", "", fcRawScan(`SELECT * FROM fc_accounts_archive`)},
}

// fcAccount reads an account under admin.
func fcAccount(t *testing.T, db *gorm.DB, id uint) Account {
	t.Helper()
	var a Account
	require.NoError(t, admin(db).First(&a, id).Error)
	return a
}

func TestFailClosedStrictRefusesRawSQLOnLockableTables(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{Strict: true}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 2)
		require.NoError(t, admin(db).Create(&Customer{ID: 1, Name: "c"}).Error)
		require.NoError(t, admin(db).Exec(`CREATE TABLE fc_accounts_archive (id integer)`).Error)
		t.Cleanup(func() { db.Exec(`DROP TABLE IF EXISTS fc_accounts_archive`) })
		snapshot := func() []Account {
			var all []Account
			require.NoError(t, admin(db).Order("id").Find(&all).Error)
			return all
		}
		before := snapshot()
		for _, r := range fcStrictRefused {
			if r.only != "" && r.only != db.Dialector.Name() {
				continue
			}
			t.Run(r.name, func(t *testing.T) {
				fcReset(t, db, p)
				for _, tx := range []*gorm.DB{as(db, martin), db.WithContext(context.Background())} {
					err := fcSafe(t, func() error { return r.run(tx) })
					assert.ErrorIs(t, err, offlinelock.ErrStrict)
					if !assert.Equal(t, before, snapshot(), "a refused statement changed accounts") {
						// put the rows back for the next case
						require.NoError(t, admin(db).Where("1 = 1").Delete(&Account{}).Error)
						require.NoError(t, admin(db).Create(&before).Error)
					}
				}
				assert.Empty(t, fcLocksOf(t, db, p, martin))
			})
		}
		for _, r := range fcStrictAllowed {
			if r.only != "" && r.only != db.Dialector.Name() {
				continue
			}
			t.Run("allowed: "+r.name, func(t *testing.T) {
				require.NoError(t, fcSafe(t, func() error { return r.run(as(db, martin)) }))
				require.NoError(t, fcSafe(t, func() error { return r.run(db) }), "no owner needed")
			})
		}
		t.Run("Bypass lets a refused statement through", func(t *testing.T) {
			require.NoError(t, admin(db).Exec(`UPDATE accounts SET name = 'admin' WHERE id = 2`).Error)
			assert.Equal(t, "admin", fcAccount(t, db, 2).Name)
		})
	})
}

// Class 9: untagged tables are unaffected under Strict, with or without an
// owner.
func TestFailClosedUntaggedTablesUnaffectedUnderStrict(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{Strict: true}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 1)
		for _, tx := range []*gorm.DB{db.WithContext(context.Background()), as(db, david)} {
			require.NoError(t, tx.Exec(`DELETE FROM customers`).Error)
			require.NoError(t, tx.Create(&Customer{ID: 1, Name: "c", Credit: 1}).Error)
			require.NoError(t, tx.Model(&Customer{ID: 1}).Update("credit", 2).Error)
			require.NoError(t, tx.Table("customers").Where("id = ?", 1).Updates(map[string]any{"credit": 3}).Error)
			require.NoError(t, tx.Exec(`UPDATE customers SET credit = credit + 1 WHERE id = 1`).Error)
			var c Customer
			require.NoError(t, tx.Raw(`SELECT * FROM customers WHERE id = 1`).Scan(&c).Error)
			assert.Equal(t, 4, c.Credit)
			var names []string
			require.NoError(t, tx.Table("customers").Pluck("name", &names).Error)
			assert.Equal(t, []string{"c"}, names)
			require.NoError(t, tx.Save(&Customer{ID: 1, Name: "d"}).Error)
			require.NoError(t, tx.Delete(&Customer{ID: 1}).Error)
			var n int64
			require.NoError(t, tx.Model(&Customer{}).Count(&n).Error)
			assert.Zero(t, n)
		}
		assert.Empty(t, fcLocksOf(t, db, p, david))
	})
}

// FcMig is a lockable model migrated twice: FcMigV2 alters a column and
// adds one.
type FcMig struct {
	ID   uint `gorm:"primaryKey" lock:"exclusive_read"`
	Name string
	Size int
}

type FcMigV2 struct {
	ID    uint   `gorm:"primaryKey" lock:"exclusive_read"`
	Name  string `gorm:"size:80;not null;default:''"`
	Size  int64
	Added string
}

func (FcMigV2) TableName() string { return "fc_migs" }

// Class 9: AutoMigrate of lockable models keeps working, with and without
// an owner, while rows are locked, under Strict or not.
func TestFailClosedAutoMigrateKeepsWorking(t *testing.T) {
	for _, strict := range []bool{false, true} {
		name := "plain"
		if strict {
			name = "strict"
		}
		t.Run(name, func(t *testing.T) {
			eachDBWithModels(t, offlinelock.Config{Strict: strict}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
				fcDropCleanup(t, db, &FcMig{})
				contexts := []struct {
					name string
					tx   func() *gorm.DB
				}{
					{"no owner", func() *gorm.DB { return db.WithContext(context.Background()) }},
					{"owner", func() *gorm.DB { return as(db, david) }},
				}
				for _, c := range contexts {
					t.Run(c.name, func(t *testing.T) {
						require.NoError(t, db.Migrator().DropTable(&FcMig{}))
						fcReset(t, db, p)
						require.NoError(t, c.tx().AutoMigrate(&FcMig{}), "first AutoMigrate")
						require.NoError(t, admin(db).Create(&[]FcMig{{ID: 1, Name: "a", Size: 1}, {ID: 2, Name: "b", Size: 2}}).Error)
						require.NoError(t, fcFreshPlan(func() error { return as(db, martin).First(&FcMig{}, 1).Error }), "Martin locks row 1")
						assert.NoError(t, c.tx().AutoMigrate(&FcMig{}), "AutoMigrate again, nothing to change")
						assert.NoError(t, c.tx().AutoMigrate(&FcMigV2{}), "AutoMigrate altering and adding columns while a row is locked")
						assert.True(t, db.Migrator().HasColumn(&FcMigV2{}, "added"), "the column was added")
						var rows []FcMigV2
						require.NoError(t, admin(db).Order("id").Find(&rows).Error)
						require.Len(t, rows, 2, "the migration kept the rows")
						assert.Equal(t, "a", rows[0].Name)
						assert.NoError(t, c.tx().AutoMigrate(&Account{}, &Doc{}, &Policy{}), "AutoMigrate of the other lockable models")
						h, err := p.Holders(db, &FcMig{ID: 1})
						require.NoError(t, err)
						require.Len(t, h, 1, "Martin keeps his lock")
						assert.Empty(t, fcLocksOf(t, db, p, david), "the migration took no lock")
						err = fcFreshPlan(func() error { return as(db, david).First(&FcMigV2{}, 1).Error })
						require.ErrorIs(t, err, offlinelock.ErrLocked, "the migrated model is still enforced")
					})
				}
				t.Run("Migrator calls", func(t *testing.T) {
					require.NoError(t, admin(db).AutoMigrate(&FcMigV2{}), "setup under Bypass")
					m := db.WithContext(context.Background()).Migrator()
					assert.NoError(t, m.AlterColumn(&FcMigV2{}, "Name"), "AlterColumn")
					_, err := m.ColumnTypes(&FcMigV2{})
					assert.NoError(t, err, "ColumnTypes")
					assert.NoError(t, m.RenameColumn(&FcMigV2{}, "added", "added2"), "RenameColumn")
					assert.NoError(t, m.DropColumn(&FcMigV2{}, "added2"), "DropColumn")
				})
			})
		})
	}
}

// fcFreshPlan runs load again when PostgreSQL refused pgx's cached plan of
// a table whose row type a migration changed (SQLSTATE 0A000): that
// happens once after ALTER TABLE, with or without the plugin, and pgx then
// drops the plan.
func fcFreshPlan(load func() error) error {
	err := load()
	if err != nil && strings.Contains(err.Error(), "SQLSTATE 0A000") {
		err = load()
	}
	return err
}
