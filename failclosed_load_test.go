package offlinelock_test

// Fail closed, loads: every statement that reads a row of a lockable table
// is either enforced exactly (its rows covered by the session's locks, as
// the table's mode asks) or refused with a clear error, and a refusal
// leaves nothing behind: no lock row of the refused session, the
// destination as it was.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// FcAccountView is a DTO over the lockable table accounts: lockability
// belongs to the table, not to the Go type.
type FcAccountView struct {
	ID     uint
	Name   string
	Credit int
}

func (FcAccountView) TableName() string { return "accounts" }

// FcAccountName is a read model over accounts without the key.
type FcAccountName struct {
	Name string
}

func (FcAccountName) TableName() string { return "accounts" }

// FcFindHook is a lockable model whose AfterFind fails for the row named
// "boom".
type FcFindHook struct {
	ID   uint `gorm:"primaryKey" lock:"exclusive_read"`
	Name string
}

var errFcAfterFind = errors.New("fc: after find failed")

func (h *FcFindHook) AfterFind(*gorm.DB) error {
	if h.Name == "boom" {
		return errFcAfterFind
	}
	return nil
}

// fcUnenforceable is true for the refusals acceptable for a statement shape
// the plugin cannot bound.
func fcUnenforceable(err error) bool {
	return errors.Is(err, offlinelock.ErrUnenforceable) || errors.Is(err, offlinelock.ErrInvalid) || errors.Is(err, offlinelock.ErrStrict)
}

// fcRefused is true for any of the plugin's refusals.
func fcRefused(err error) bool {
	return errors.Is(err, offlinelock.ErrLocked) || errors.Is(err, offlinelock.ErrNotLocked) ||
		errors.Is(err, offlinelock.ErrNoOwner) || fcUnenforceable(err)
}

// fcSafe runs f and turns a panic (of the plugin, in a callback) into a
// test failure and an error, so that one panic does not hide the other
// cases.
func fcSafe(t *testing.T, f func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("the statement panicked: %v", r)
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}

// fcSafeLoad is fcSafe for a load that reports whether it touched its
// destination.
func fcSafeLoad(t *testing.T, f func() (bool, error)) (touched bool, err error) {
	t.Helper()
	err = fcSafe(t, func() error {
		var e error
		touched, e = f()
		return e
	})
	return touched, err
}

// fcLocksOf lists the live locks of a session.
func fcLocksOf(t *testing.T, db *gorm.DB, p *offlinelock.Plugin, o offlinelock.Owner) []offlinelock.Lock {
	t.Helper()
	l, err := p.List(db, offlinelock.Filter{Session: o.Session})
	require.NoError(t, err)
	return l
}

// fcReset releases every lock of martin and david.
func fcReset(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
	t.Helper()
	for _, o := range []offlinelock.Owner{martin, david} {
		_, err := p.ReleaseAll(db, o.Session)
		require.NoError(t, err)
	}
}

// fcDropCleanup drops tables at the end of the test.
func fcDropCleanup(t *testing.T, db *gorm.DB, tables ...any) {
	t.Helper()
	require.NoError(t, db.Migrator().DropTable(tables...))
	t.Cleanup(func() { db.Migrator().DropTable(tables...) })
}

// fcAccount reads an account under admin.
func fcAccount(t *testing.T, db *gorm.DB, id uint) Account {
	t.Helper()
	var a Account
	require.NoError(t, admin(db).First(&a, id).Error)
	return a
}

// fcHolds is true when o holds a Write lock on the record.
func fcHolds(t *testing.T, db *gorm.DB, p *offlinelock.Plugin, target any, o offlinelock.Owner, access offlinelock.Access) bool {
	t.Helper()
	h, err := p.Holders(db, target)
	require.NoError(t, err)
	for _, l := range h {
		if l.Owner.Session == o.Session && l.Access == access {
			return true
		}
	}
	return false
}

// fcLoad is one call shape of a load of account id. It reports whether its
// destination changed from the value it started with.
type fcLoad struct {
	name string
	only string // "sqlite" or "postgres": the shape exists on that database only
	load func(tx *gorm.DB, id uint) (touched bool, err error)
}

// fcScanRow reads the first row of q's Rows into dest.
func fcScanRow(q *gorm.DB, dest ...any) error {
	rows, err := q.Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	if rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
	}
	return rows.Err()
}

func fcTouched(before, after any) bool { return !reflect.DeepEqual(before, after) }

// Class 1: lockability belongs to the table, whatever the destination.
var fcTableLoads = []fcLoad{
	{"DTO with TableName: First", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := FcAccountView{Name: "sentinel"}
		err := tx.First(&v, id).Error
		return fcTouched(FcAccountView{Name: "sentinel"}, v), err
	}},
	{"DTO with TableName: Where.Find", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []FcAccountView{{Name: "sentinel"}}
		err := tx.Where("id = ?", id).Find(&v).Error
		return fcTouched([]FcAccountView{{Name: "sentinel"}}, v), err
	}},
	{"read model without key: Where.Find", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []FcAccountName{{Name: "sentinel"}}
		err := tx.Where("id = ?", id).Find(&v).Error
		return fcTouched([]FcAccountName{{Name: "sentinel"}}, v), err
	}},
	{"read model without key: Model(DTO).Pluck", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []string{"sentinel"}
		err := tx.Model(&FcAccountName{}).Where("id = ?", id).Pluck("name", &v).Error
		return fcTouched([]string{"sentinel"}, v), err
	}},
	{"Table(accounts).Take(struct)", "", func(tx *gorm.DB, id uint) (bool, error) {
		var v struct {
			ID   uint
			Name string
		}
		v.Name = "sentinel"
		before := v
		err := tx.Table("accounts").Where("id = ?", id).Take(&v).Error
		return fcTouched(before, v), err
	}},
	{"Table(accounts).Find(map)", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := map[string]any{"sentinel": 1}
		err := tx.Table("accounts").Where("id = ?", id).Find(&v).Error
		return fcTouched(map[string]any{"sentinel": 1}, v), err
	}},
	{"Table(accounts).Find([]map)", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []map[string]any{{"sentinel": 1}}
		err := tx.Table("accounts").Where("id = ?", id).Find(&v).Error
		return fcTouched([]map[string]any{{"sentinel": 1}}, v), err
	}},
	{"Table(accounts).Pluck", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []string{"sentinel"}
		err := tx.Table("accounts").Where("id = ?", id).Pluck("name", &v).Error
		return fcTouched([]string{"sentinel"}, v), err
	}},
	{"Table(accounts).Scan(DTO)", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []struct{ Name string }{{"sentinel"}}
		err := tx.Table("accounts").Where("id = ?", id).Scan(&v).Error
		return fcTouched([]struct{ Name string }{{"sentinel"}}, v), err
	}},
	{"Table(accounts).Select(name).Rows", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := "sentinel"
		err := fcScanRow(tx.Table("accounts").Select("name").Where("id = ?", id), &v)
		return v != "sentinel", err
	}},
	{"Table(accounts).Rows", "", func(tx *gorm.DB, id uint) (bool, error) {
		rows, err := tx.Table("accounts").Where("id = ?", id).Rows()
		touched := false
		if err == nil {
			touched = rows.Next()
			rows.Close()
		}
		return touched, err
	}},
	{"Table(\"accounts\") quoted", "postgres", func(tx *gorm.DB, id uint) (bool, error) {
		v := []map[string]any{}
		err := tx.Table(`"accounts"`).Where("id = ?", id).Find(&v).Error
		return len(v) > 0, err
	}},
	{"Table(accounts AS a).Find(model)", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []Account{{Name: "sentinel"}}
		err := tx.Table("accounts AS a").Where("a.id = ?", id).Find(&v).Error
		return fcTouched([]Account{{Name: "sentinel"}}, v), err
	}},
	{"Table(accounts AS a).Scan(DTO)", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []struct{ Name string }{{"sentinel"}}
		err := tx.Table("accounts AS a").Where("a.id = ?", id).Scan(&v).Error
		return fcTouched([]struct{ Name string }{{"sentinel"}}, v), err
	}},
	{"Table(accounts AS a).Pluck", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []string{"sentinel"}
		err := tx.Table("accounts AS a").Where("a.id = ?", id).Pluck("a.name", &v).Error
		return fcTouched([]string{"sentinel"}, v), err
	}},
	{"Table((?) AS t, subquery).Find([]map)", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []map[string]any{}
		sub := tx.Session(&gorm.Session{NewDB: true}).Table("accounts").Where("id = ?", id)
		err := tx.Table("(?) AS t", sub).Find(&v).Error
		return len(v) > 0, err
	}},
	{"Table((?) AS t, model subquery).Find(model)", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []Account{{Name: "sentinel"}}
		sub := tx.Session(&gorm.Session{NewDB: true}).Model(&Account{}).Where("id = ?", id)
		err := tx.Table("(?) AS t", sub).Find(&v).Error
		return fcTouched([]Account{{Name: "sentinel"}}, v), err
	}},
	{"Table(accounts).Find(untagged model)", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []Customer{{Name: "sentinel"}}
		err := tx.Table("accounts").Where("id = ?", id).Find(&v).Error
		return fcTouched([]Customer{{Name: "sentinel"}}, v), err
	}},
	{"Table(ACCOUNTS) upper case", "sqlite", func(tx *gorm.DB, id uint) (bool, error) {
		v := []map[string]any{}
		err := tx.Table("ACCOUNTS").Where("id = ?", id).Find(&v).Error
		return len(v) > 0, err
	}},
	{"Table(main.accounts)", "sqlite", func(tx *gorm.DB, id uint) (bool, error) {
		v := []map[string]any{}
		err := tx.Table("main.accounts").Where("id = ?", id).Find(&v).Error
		return len(v) > 0, err
	}},
	{"Table(public.accounts)", "postgres", func(tx *gorm.DB, id uint) (bool, error) {
		v := []map[string]any{}
		err := tx.Table("public.accounts").Where("id = ?", id).Find(&v).Error
		return len(v) > 0, err
	}},
	{"Table(public.accounts) into model", "postgres", func(tx *gorm.DB, id uint) (bool, error) {
		v := []Account{{Name: "sentinel"}}
		err := tx.Table("public.accounts").Where("id = ?", id).Find(&v).Error
		return fcTouched([]Account{{Name: "sentinel"}}, v), err
	}},
}

// Class 3: loads the plugin cannot bound exactly.
var fcUnboundedLoads = []fcLoad{
	{"Distinct(name).Order.Limit(1)", "", func(tx *gorm.DB, _ uint) (bool, error) {
		v := []Account{{Name: "sentinel"}}
		err := tx.Distinct("name").Order("name DESC").Limit(1).Find(&v).Error
		return fcTouched([]Account{{Name: "sentinel"}}, v), err
	}},
	{"Model(Account).Distinct(name).Pluck", "", func(tx *gorm.DB, _ uint) (bool, error) {
		v := []string{"sentinel"}
		err := tx.Model(&Account{}).Distinct().Order("name DESC").Limit(1).Pluck("name", &v).Error
		return fcTouched([]string{"sentinel"}, v), err
	}},
	{"raw Joins text from an untagged model", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []string{"sentinel"}
		err := tx.Model(&Customer{}).Joins("JOIN accounts ON accounts.id = customers.id").
			Where("customers.id = ?", id).Pluck("accounts.name", &v).Error
		return fcTouched([]string{"sentinel"}, v), err
	}},
	{"raw Joins text into the untagged model", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []Customer{{Name: "sentinel"}}
		err := tx.Select("customers.id, accounts.name AS name, accounts.credit AS credit").
			Joins("JOIN accounts ON accounts.id = customers.id").Where("customers.id = ?", id).Find(&v).Error
		return fcTouched([]Customer{{Name: "sentinel"}}, v), err
	}},
	{"Raw(SELECT name FROM accounts).Find(model) key omitted", "", func(tx *gorm.DB, _ uint) (bool, error) {
		v := []Account{{Name: "sentinel"}}
		err := tx.Raw("SELECT name, credit FROM accounts ORDER BY name DESC").Find(&v).Error
		return fcTouched([]Account{{Name: "sentinel"}}, v), err
	}},
	{"Raw(SELECT * FROM accounts).Scan(DTO)", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []FcAccountView{{Name: "sentinel"}}
		err := tx.Raw("SELECT * FROM accounts WHERE id = ?", id).Scan(&v).Error
		return fcTouched([]FcAccountView{{Name: "sentinel"}}, v), err
	}},
	{"Raw(SELECT * FROM accounts).Find(DTO)", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []FcAccountView{{Name: "sentinel"}}
		err := tx.Raw("SELECT * FROM accounts WHERE id = ?", id).Find(&v).Error
		return fcTouched([]FcAccountView{{Name: "sentinel"}}, v), err
	}},
	{"Raw(SELECT name).Scan(string)", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := "sentinel"
		err := tx.Raw("SELECT name FROM accounts WHERE id = ?", id).Scan(&v).Error
		return v != "sentinel", err
	}},
	{"Select(count(*) + max(credit)).Scan", "", func(tx *gorm.DB, _ uint) (bool, error) {
		v := int64(-1)
		err := tx.Model(&Account{}).Select("count(*) + max(credit)").Scan(&v).Error
		return v != -1, err
	}},
	{"Select(max(name)).Scan", "", func(tx *gorm.DB, _ uint) (bool, error) {
		v := "sentinel"
		err := tx.Model(&Account{}).Select("max(name)").Scan(&v).Error
		return v != "sentinel", err
	}},
	{"Select(max(credit)).Rows", "", func(tx *gorm.DB, _ uint) (bool, error) {
		v := int64(-1)
		err := fcScanRow(tx.Model(&Account{}).Select("max(credit)"), &v)
		return v != -1, err
	}},
	{"Select(count(*), max(name)).Take(map)", "", func(tx *gorm.DB, _ uint) (bool, error) {
		v := map[string]any{}
		err := tx.Model(&Account{}).Select("count(*) AS n, max(name) AS m").Take(&v).Error
		return len(v) > 0, err
	}},
	{"Table(accounts).Select(max(name)).Scan", "", func(tx *gorm.DB, _ uint) (bool, error) {
		v := "sentinel"
		err := tx.Table("accounts").Select("max(name)").Scan(&v).Error
		return v != "sentinel", err
	}},
	{"Model(Account).Where(subquery on accounts) from Customer", "", func(tx *gorm.DB, _ uint) (bool, error) {
		v := []Customer{{Name: "sentinel"}}
		sub := tx.Session(&gorm.Session{NewDB: true}).Table("accounts").Select("name").Where("credit > ?", 5000)
		err := tx.Where("name IN (?)", sub).Find(&v).Error
		return fcTouched([]Customer{{Name: "sentinel"}}, v), err
	}},
}

// fcSeedLoads seeds accounts 1..3 ("acct", credit 100) and 129 ("zzz",
// credit 9999): the largest name and credit, so aggregates reveal it. The
// customers table has a row 129 too, for raw joins.
func fcSeedLoads(t *testing.T, db *gorm.DB) {
	t.Helper()
	seedAccounts(t, db, 3)
	require.NoError(t, admin(db).Create(&Account{ID: 129, Name: "zzz", Credit: 9999}).Error)
	require.NoError(t, admin(db).Create(&Customer{ID: 129, Name: "cust"}).Error)
	require.NoError(t, admin(db).Create(&Customer{ID: 2, Name: "zzz"}).Error)
}

// fcCheckRefusedLoad runs load as david on account 129, which martin holds
// by loading it: it must be refused, leave its destination as it was and
// leave no lock of David's.
func fcCheckRefusedLoad(t *testing.T, db *gorm.DB, p *offlinelock.Plugin, l fcLoad) {
	t.Helper()
	require.NoError(t, as(db, martin).First(&Account{}, 129).Error)
	touched, err := fcSafeLoad(t, func() (bool, error) { return l.load(as(db, david), 129) })
	if assert.Error(t, err, "David read accounts 129 while Martin holds it") {
		assert.True(t, fcRefused(err), "refusal must be a plugin error, got %v", err)
	}
	assert.False(t, touched, "the refused load filled its destination")
	assert.Empty(t, fcLocksOf(t, db, p, david), "the refused load left David's locks behind")
}

func TestFailClosedLoadsByTableName(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcSeedLoads(t, db)
		for _, l := range fcTableLoads {
			if l.only != "" && l.only != db.Dialector.Name() {
				continue
			}
			t.Run(l.name, func(t *testing.T) {
				fcReset(t, db, p)
				fcCheckRefusedLoad(t, db, p, l)

				// On a free row: enforced exactly (David now holds its
				// Write lock, exclusive_read) or refused as unenforceable.
				fcReset(t, db, p)
				touched, err := fcSafeLoad(t, func() (bool, error) { return l.load(as(db, david), 2) })
				if err == nil {
					assert.True(t, touched, "the load read row 2")
					assert.True(t, fcHolds(t, db, p, &Account{ID: 2}, david, offlinelock.Write),
						"David read accounts 2 (exclusive_read) without its lock")
				} else {
					assert.True(t, fcUnenforceable(err), "a load of a free row is refused only as unenforceable, got %v", err)
					assert.Empty(t, fcLocksOf(t, db, p, david))
				}
			})
		}
	})
}

func TestFailClosedUnboundedLoads(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcSeedLoads(t, db)
		for _, l := range fcUnboundedLoads {
			if l.only != "" && l.only != db.Dialector.Name() {
				continue
			}
			t.Run(l.name, func(t *testing.T) {
				fcReset(t, db, p)
				fcCheckRefusedLoad(t, db, p, l)
				// The holder itself is never refused as locked.
				_, err := fcSafeLoad(t, func() (bool, error) { return l.load(as(db, martin), 129) })
				if err != nil {
					assert.True(t, fcUnenforceable(err), "the holder's load may only be refused as unenforceable, got %v", err)
				}
			})
		}
	})
}

// TestFailClosedCountIsStillFree: a plain count reveals no row and takes no
// lock, even while another session holds rows.
func TestFailClosedCountIsStillFree(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcSeedLoads(t, db)
		require.NoError(t, as(db, martin).First(&Account{}, 129).Error)
		var n int64
		require.NoError(t, as(db, david).Model(&Account{}).Count(&n).Error)
		assert.EqualValues(t, 4, n)
		require.NoError(t, as(db, david).Model(&Account{}).Where("credit > ?", 0).Count(&n).Error)
		assert.EqualValues(t, 4, n)
		assert.Empty(t, fcLocksOf(t, db, p, david))
	})
}

// Class 2: one record, one lock key, however the key is spelled.
func TestFailClosedOneRecordOneLockKey(t *testing.T) {
	loads := []struct {
		name string
		load func(tx *gorm.DB) (Account, error)
	}{
		{`First(&a, "0129")`, func(tx *gorm.DB) (a Account, err error) { err = tx.First(&a, "0129").Error; return }},
		{`First(&a, "129")`, func(tx *gorm.DB) (a Account, err error) { err = tx.First(&a, "129").Error; return }},
		{`First(&a, int64(129))`, func(tx *gorm.DB) (a Account, err error) { err = tx.First(&a, int64(129)).Error; return }},
		{`First(&a, uint8(129))`, func(tx *gorm.DB) (a Account, err error) { err = tx.First(&a, uint8(129)).Error; return }},
		{`First(&a, "id = ?", "0129")`, func(tx *gorm.DB) (a Account, err error) {
			err = tx.First(&a, "id = ?", "0129").Error
			return
		}},
		{`Where("id = ?", "129").Take`, func(tx *gorm.DB) (a Account, err error) {
			err = tx.Where("id = ?", "129").Take(&a).Error
			return
		}},
		{`Where("id = ?", "0129").Find`, func(tx *gorm.DB) (a Account, err error) {
			var as []Account
			err = tx.Where("id = ?", "0129").Find(&as).Error
			if len(as) == 1 {
				a = as[0]
			}
			return
		}},
		{`Where(map{"id": "0129"}).Find`, func(tx *gorm.DB) (a Account, err error) {
			var as []Account
			err = tx.Where(map[string]any{"id": "0129"}).Find(&as).Error
			if len(as) == 1 {
				a = as[0]
			}
			return
		}},
		{`Find(&as, []string{"129"})`, func(tx *gorm.DB) (a Account, err error) {
			var as []Account
			err = tx.Find(&as, []string{"129"}).Error
			if len(as) == 1 {
				a = as[0]
			}
			return
		}},
		{`Find(&as, []string{"0129"})`, func(tx *gorm.DB) (a Account, err error) {
			var as []Account
			err = tx.Find(&as, []string{"0129"}).Error
			if len(as) == 1 {
				a = as[0]
			}
			return
		}},
		{`Where("id IN ?", []any{"0129"}).Find`, func(tx *gorm.DB) (a Account, err error) {
			var as []Account
			err = tx.Where("id IN ?", []any{"0129"}).Find(&as).Error
			if len(as) == 1 {
				a = as[0]
			}
			return
		}},
		{`Where("id = ?", 129.0).Take`, func(tx *gorm.DB) (a Account, err error) {
			err = tx.Where("id = ?", 129.0).Take(&a).Error
			return
		}},
	}
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcSeedLoads(t, db)
		for _, l := range loads {
			t.Run(l.name, func(t *testing.T) {
				fcReset(t, db, p)
				_, err := p.Acquire(as(db, martin), &Account{ID: 129}, offlinelock.Write)
				require.NoError(t, err)
				a, err := l.load(as(db, david))
				if assert.Error(t, err, "David read account 129 under another spelling of its key") {
					assert.True(t, fcRefused(err), "got %v", err)
				}
				assert.Zero(t, a.ID, "David got the row")
				assert.Empty(t, fcLocksOf(t, db, p, david))

				// The holder loads it under the same spelling and still has
				// one lock, on the key "129".
				a, err = l.load(as(db, martin))
				if err == nil {
					assert.Equal(t, "zzz", a.Name)
				} else {
					assert.True(t, fcUnenforceable(err), "the holder is refused with %v", err)
				}
				mine := fcLocksOf(t, db, p, martin)
				if assert.Len(t, mine, 1, "one record, one lock key") {
					assert.Equal(t, "129", mine[0].ID)
				}
			})
		}
	})
}

// Class 3: refused loads leave no lock row behind, also when an AfterFind
// hook fails or the context is cancelled.
func TestFailClosedFailedLoadsLeaveNoLocks(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcDropCleanup(t, db, &FcFindHook{})
		require.NoError(t, admin(db).AutoMigrate(&FcFindHook{}))
		require.NoError(t, admin(db).Create(&[]FcFindHook{{ID: 1, Name: "ok"}, {ID: 2, Name: "boom"}}).Error)
		seedAccounts(t, db, 3)

		t.Run("positive: a load that succeeds keeps its lock", func(t *testing.T) {
			fcReset(t, db, p)
			require.NoError(t, as(db, david).First(&FcFindHook{}, 1).Error)
			assert.True(t, fcHolds(t, db, p, &FcFindHook{ID: 1}, david, offlinelock.Write))
		})
		hookLoads := []struct {
			name string
			load func(tx *gorm.DB) error
		}{
			{"First with failing AfterFind", func(tx *gorm.DB) error { return tx.First(&FcFindHook{}, 2).Error }},
			{"Find all with failing AfterFind", func(tx *gorm.DB) error { return tx.Find(&[]FcFindHook{}).Error }},
			{"Where.Find with failing AfterFind", func(tx *gorm.DB) error {
				return tx.Where("name = ?", "boom").Find(&[]FcFindHook{}).Error
			}},
			{"Transaction ignoring the failed First, committed", func(tx *gorm.DB) error {
				var inner error
				err := tx.Transaction(func(tx *gorm.DB) error {
					inner = tx.First(&FcFindHook{}, 2).Error
					return nil
				})
				if err != nil {
					return err
				}
				return inner
			}},
			{"Transaction returning the failed Find", func(tx *gorm.DB) error {
				return tx.Transaction(func(tx *gorm.DB) error { return tx.Find(&[]FcFindHook{}).Error })
			}},
		}
		for _, l := range hookLoads {
			t.Run(l.name, func(t *testing.T) {
				fcReset(t, db, p)
				err := l.load(as(db, david))
				require.ErrorIs(t, err, errFcAfterFind)
				assert.Empty(t, fcLocksOf(t, db, p, david), "a failed load left its locks")
			})
		}

		t.Run("cancelled context before the load", func(t *testing.T) {
			fcReset(t, db, p)
			ctx, cancel := context.WithCancel(offlinelock.WithOwner(context.Background(), david))
			cancel()
			err := db.WithContext(ctx).First(&Account{}, 2).Error
			require.Error(t, err)
			assert.Empty(t, fcLocksOf(t, db, p, david))
			err = db.WithContext(ctx).Find(&[]Account{}).Error
			require.Error(t, err)
			assert.Empty(t, fcLocksOf(t, db, p, david))
		})

		t.Run("context cancelled between the lock and the query", func(t *testing.T) {
			fcReset(t, db, p)
			type cancelKey struct{}
			require.NoError(t, db.Callback().Query().After("offlinelock:before_query").Before("gorm:query").
				Register("fc:cancel_query", func(tx *gorm.DB) {
					if c, ok := tx.Statement.Context.Value(cancelKey{}).(context.CancelFunc); ok {
						c()
					}
				}))
			t.Cleanup(func() { db.Callback().Query().Remove("fc:cancel_query") })
			for _, load := range []func(*gorm.DB) error{
				func(tx *gorm.DB) error { return tx.First(&Account{}, 2).Error },
				func(tx *gorm.DB) error { return tx.Where("id > ?", 1).Find(&[]Account{}).Error },
			} {
				ctx, cancel := context.WithCancel(offlinelock.WithOwner(context.Background(), david))
				ctx = context.WithValue(ctx, cancelKey{}, cancel)
				err := load(db.WithContext(ctx))
				cancel()
				require.Error(t, err)
				assert.Empty(t, fcLocksOf(t, db, p, david), "a cancelled load left its locks")
			}
		})
	})
}

// Class 3: Preload(clause.Associations) is all or nothing.
func TestFailClosedPreloadAssociations(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		desk := uint(9)
		require.NoError(t, admin(db).Create(&Desk{ID: desk, Floor: 3}).Error)
		require.NoError(t, admin(db).Create(&Team{ID: 1, Name: "core", Members: []Member{{ID: 1, DeskID: &desk}, {ID: 2}}}).Error)

		t.Run("team preload refused by a locked member", func(t *testing.T) {
			fcReset(t, db, p)
			require.NoError(t, as(db, martin).First(&Member{}, 2).Error)
			got := Team{Name: "sentinel"}
			err := as(db, david).Preload(clause.Associations).First(&got, 1).Error
			require.ErrorIs(t, err, offlinelock.ErrLocked)
			assert.Equal(t, Team{Name: "sentinel"}, got)
			assert.Empty(t, fcLocksOf(t, db, p, david))
		})
		t.Run("member preload refused by a locked desk", func(t *testing.T) {
			fcReset(t, db, p)
			require.NoError(t, as(db, martin).First(&Desk{}, desk).Error)
			got := []Member{{Name: "sentinel"}}
			err := as(db, david).Preload(clause.Associations).Find(&got).Error
			require.ErrorIs(t, err, offlinelock.ErrLocked)
			assert.Equal(t, []Member{{Name: "sentinel"}}, got)
			assert.Empty(t, fcLocksOf(t, db, p, david), "the members' locks of the refused preload were left")
		})
		t.Run("nested preload refused by a locked desk", func(t *testing.T) {
			fcReset(t, db, p)
			require.NoError(t, as(db, martin).First(&Desk{}, desk).Error)
			err := as(db, david).Preload("Members."+clause.Associations).First(&Team{}, 1).Error
			require.ErrorIs(t, err, offlinelock.ErrLocked)
			assert.Empty(t, fcLocksOf(t, db, p, david))
		})
		t.Run("positive: preload when free locks all", func(t *testing.T) {
			fcReset(t, db, p)
			var got []Member
			require.NoError(t, as(db, david).Preload(clause.Associations).Find(&got).Error)
			require.Len(t, got, 2)
			assert.True(t, fcHolds(t, db, p, &Member{ID: 1}, david, offlinelock.Write))
			assert.True(t, fcHolds(t, db, p, &Desk{ID: desk}, david, offlinelock.Write))
		})
	})
}

// fcTwin opens a second *gorm.DB on the same database as db with a second
// plugin instance on the same lock table: another process that has never
// parsed the lockable models.
func fcTwin(t *testing.T, db *gorm.DB, table string) (*gorm.DB, *offlinelock.Plugin) {
	t.Helper()
	var db2 *gorm.DB
	if d, ok := db.Dialector.(*sqlite.Dialector); ok {
		var err error
		db2, err = gorm.Open(sqlite.Open(d.DSN), &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		sqlDB, _ := db2.DB()
		t.Cleanup(func() { sqlDB.Close() })
	} else {
		db2 = openPostgres(t)
	}
	p2 := offlinelock.New(offlinelock.Config{Table: table, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, db2.Use(p2))
	return db2, p2
}

// Class 1: a process that has never parsed the lockable model still
// enforces its locks.
func TestFailClosedAProcessThatNeverParsedTheModel(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			table := "ol_fc" + randomHex(5)
			db, p := setupModels(t, d, offlinelock.Config{Table: table})
			fcSeedLoads(t, db)
			require.NoError(t, as(db, martin).First(&Account{}, 129).Error)
			// A node started after the first one locked Account: it has
			// never parsed the model, and learns its table from the catalog.
			db2, p2 := fcTwin(t, db, table)

			seen, err := p2.List(db2, offlinelock.Filter{Resource: "accounts"})
			require.NoError(t, err)
			require.Len(t, seen, 1, "setup: both plugins share one lock table")

			loads := []struct {
				name string
				load func(tx *gorm.DB) (bool, error)
			}{
				{"Table(accounts).Find([]map)", func(tx *gorm.DB) (bool, error) {
					var v []map[string]any
					err := tx.Table("accounts").Where("id = ?", 129).Find(&v).Error
					return len(v) > 0, err
				}},
				{"Table(accounts).Scan(DTO)", func(tx *gorm.DB) (bool, error) {
					var v []struct{ Name string }
					err := tx.Table("accounts").Where("id = ?", 129).Scan(&v).Error
					return len(v) > 0, err
				}},
				{"Table(accounts).Pluck", func(tx *gorm.DB) (bool, error) {
					var v []string
					err := tx.Table("accounts").Where("id = ?", 129).Pluck("name", &v).Error
					return len(v) > 0, err
				}},
				{"Table(accounts).Rows", func(tx *gorm.DB) (bool, error) {
					rows, err := tx.Table("accounts").Where("id = ?", 129).Rows()
					touched := false
					if err == nil {
						touched = rows.Next()
						rows.Close()
					}
					return touched, err
				}},
			}
			for _, l := range loads {
				t.Run(l.name, func(t *testing.T) {
					touched, err := fcSafeLoad(t, func() (bool, error) { return l.load(as(db2, david)) })
					if assert.Error(t, err, "the second process read accounts 129 held by Martin") {
						assert.True(t, fcRefused(err), "got %v", err)
					}
					assert.False(t, touched)
					assert.Empty(t, fcLocksOf(t, db, p, david))
				})
			}
			writes := []struct {
				name  string
				write func(tx *gorm.DB) error
			}{
				{"Table(accounts).Where.Update", func(tx *gorm.DB) error {
					return tx.Table("accounts").Where("id = ?", 129).Update("name", "leak").Error
				}},
				{"Table(accounts).Where.Updates(map)", func(tx *gorm.DB) error {
					return tx.Table("accounts").Where("id = ?", 129).Updates(map[string]any{"name": "leak"}).Error
				}},
				{"Table(accounts).Where.UpdateColumn", func(tx *gorm.DB) error {
					return tx.Table("accounts").Where("id = ?", 129).UpdateColumn("name", "leak").Error
				}},
				{"Table(accounts).Where.Delete(map)", func(tx *gorm.DB) error {
					return tx.Table("accounts").Where("id = ?", 129).Delete(map[string]any{}).Error
				}},
				{"Table(accounts).Create(map) upsert", func(tx *gorm.DB) error {
					return tx.Table("accounts").Clauses(clause.OnConflict{
						Columns: []clause.Column{{Name: "id"}}, DoUpdates: clause.AssignmentColumns([]string{"name"}),
					}).Create(map[string]any{"id": 129, "name": "leak", "credit": 1}).Error
				}},
			}
			for _, w := range writes {
				t.Run(w.name, func(t *testing.T) {
					err := fcSafe(t, func() error { return w.write(as(db2, david)) })
					if assert.Error(t, err, "the second process wrote accounts 129 held by Martin") {
						assert.True(t, fcRefused(err), "got %v", err)
					}
					var n int64
					require.NoError(t, admin(db).Model(&Account{}).Where("id = ? AND name = ?", 129, "zzz").Count(&n).Error)
					assert.EqualValues(t, 1, n, "account 129 changed")
				})
			}
		})
	}
}
