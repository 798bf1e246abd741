package offlinelock_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

func TestLoadUnderExclusiveReadTakesTheLock(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 3)
		var a Account
		require.NoError(t, as(db, martin).First(&a, 2).Error)
		assert.Equal(t, uint(2), a.ID)
		h, err := p.Holders(db, &Account{ID: 2})
		require.NoError(t, err)
		require.Len(t, h, 1)
		assert.Equal(t, martin, h[0].Owner)
		assert.Equal(t, offlinelock.Write, h[0].Access)

		before := Account{ID: 77, Name: "untouched"}
		got := before
		err = as(db, david).First(&got, 2).Error
		var le *offlinelock.LockedError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, "accounts", le.Resource)
		assert.Equal(t, "2", le.ID)
		assert.Equal(t, before, got, "the destination is left as it was")

		// Martin loads again: he holds it, so it is granted.
		require.NoError(t, as(db, martin).First(&a, 2).Error)
		// Other rows are free for David.
		var other Account
		require.NoError(t, as(db, david).First(&other, 3).Error)
	})
}

func TestTagErrorsNameModelAndField(t *testing.T) {
	type BadMode struct {
		ID uint `lock:"exclusive"`
	}
	type BadOption struct {
		ID uint `lock:"exclusive_read,color=red"`
	}
	type BadTTL struct {
		ID uint `lock:"read_write,ttl=-1h"`
	}
	type OnNonKey struct {
		ID   uint
		Name string `lock:"exclusive_read"`
	}
	cases := []struct {
		model any
		want  []string
	}{
		{&BadMode{}, []string{"BadMode", "ID", `unknown mode "exclusive"`}},
		{&BadOption{}, []string{"BadOption", "ID", `unknown option "color=red"`}},
		{&BadTTL{}, []string{"BadTTL", "ID", `bad ttl "-1h"`}},
		{&OnNonKey{}, []string{"OnNonKey", "Name", "belongs on the primary key"}},
	}
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, _ := setup(t, d, offlinelock.Config{})
			for _, c := range cases {
				err := d.open(t).Use(offlinelock.New(offlinelock.Config{Table: "ol_bad", Models: []any{c.model}}))
				require.ErrorIs(t, err, offlinelock.ErrInvalid)
				for _, w := range c.want {
					assert.Contains(t, err.Error(), w)
				}
				// Registered without Models, the error comes with the first statement, and nothing runs.
				require.NoError(t, admin(db).Migrator().AutoMigrate(c.model))
				err = as(db, martin).Create(c.model).Error
				require.ErrorIs(t, err, offlinelock.ErrInvalid)
				assert.Contains(t, err.Error(), c.want[0])
				var n int64
				require.NoError(t, db.Model(c.model).Session(&gorm.Session{}).WithContext(offlinelock.Bypass(t.Context(), "count")).Count(&n).Error)
				assert.Zero(t, n, "nothing was written")
				require.NoError(t, db.Migrator().DropTable(c.model))
			}
			db.Exec(`DROP TABLE IF EXISTS ol_bad`)
			db.Exec(`DROP TABLE IF EXISTS ol_bad_generation`)
			db.Exec(`DROP SEQUENCE IF EXISTS ol_bad_generation`)
		})
	}
}

func TestLoadsOfManyRowsAreAllOrNothing(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 10)
		require.NoError(t, as(db, david).First(&Account{}, 7).Error)

		before := []Account{{ID: 99}}
		got := before
		err := as(db, martin).Order("id").Find(&got).Error
		var le *offlinelock.LockedError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, "7", le.ID)
		assert.Equal(t, "david", le.Holders[0].Owner.User)
		assert.Equal(t, before, got, "no row reaches the caller")
		mine, err := p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		assert.Empty(t, mine, "a refusal leaves none of the new locks behind")

		require.NoError(t, as(db, martin).Where("id <> ?", 7).Order("id").Find(&got).Error)
		assert.Len(t, got, 9)
		mine, err = p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		assert.Len(t, mine, 9)
	})
}

func TestLoadsInsideATransactionUseIt(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 3)
		err := as(db, martin).Transaction(func(tx *gorm.DB) error {
			var as []Account
			require.NoError(t, tx.Find(&as).Error)
			h, err := p.Holders(tx, &Account{ID: 1})
			require.NoError(t, err)
			require.Len(t, h, 1)
			return errRollback
		})
		require.ErrorIs(t, err, errRollback)
		all, err := p.List(db, offlinelock.Filter{})
		require.NoError(t, err)
		assert.Empty(t, all, "the locks rolled back with the transaction")
	})
}

func TestReadWriteLoadsTakeSharedReadLocks(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&Policy{ID: 5, Name: "home"}).Error)
		var pm, pd Policy
		require.NoError(t, as(db, martin).First(&pm, 5).Error)
		require.NoError(t, as(db, david).First(&pd, 5).Error)
		h, err := p.Holders(db, &Policy{ID: 5})
		require.NoError(t, err)
		require.Len(t, h, 2)
		for _, l := range h {
			assert.Equal(t, offlinelock.Read, l.Access)
			assert.InDelta(t, (2 * time.Hour).Seconds(), l.ExpiresAt.Sub(l.AcquiredAt).Seconds(), 1, "ttl=2h from the tag")
		}
		// A write needs the Write lock, refused while the other reads.
		_, err = p.Acquire(as(db, david), &pd, offlinelock.Write)
		require.ErrorIs(t, err, offlinelock.ErrLocked)
		pd.Name = "flat"
		require.ErrorIs(t, as(db, david).Save(&pd).Error, offlinelock.ErrLocked)
		require.NoError(t, p.Release(as(db, martin), &pm))
		_, err = p.Acquire(as(db, david), &pd, offlinelock.Write)
		require.NoError(t, err)
		require.NoError(t, as(db, david).Save(&pd).Error)
		require.ErrorIs(t, as(db, martin).First(&pm, 5).Error, offlinelock.ErrLocked, "no reading while David writes")
	})
}

func TestExclusiveWriteLoadsAreFreeAndWritesNeedTheLock(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "draft"}).Error)
		var d Doc
		require.NoError(t, as(db, martin).First(&d, 1).Error)
		require.NoError(t, as(db, david).First(&d, 1).Error)
		all, err := p.List(db, offlinelock.Filter{})
		require.NoError(t, err)
		assert.Empty(t, all, "loads take no lock")

		d.Title = "final"
		require.ErrorIs(t, as(db, martin).Save(&d).Error, offlinelock.ErrNotLocked)
		_, err = p.Acquire(as(db, martin), &d, offlinelock.Write)
		require.NoError(t, err)
		require.NoError(t, as(db, martin).Save(&d).Error)
		require.ErrorIs(t, as(db, david).Model(&d).Update("title", "mine").Error, offlinelock.ErrLocked)
		var got Doc
		require.NoError(t, db.First(&got, 1).Error)
		assert.Equal(t, "final", got.Title)
	})
}

// TestEveryWritePathNeedsTheWriteLock runs each GORM write path on a record
// nobody has locked (ErrNotLocked), one David has locked (*LockedError),
// and one Martin has locked (allowed); a refused write changes nothing.
func TestEveryWritePathNeedsTheWriteLock(t *testing.T) {
	paths := []struct {
		name  string
		write func(db *gorm.DB, id uint) error
	}{
		{"Save", func(db *gorm.DB, id uint) error { return db.Save(&Doc{ID: id, Title: "saved"}).Error }},
		{"Update", func(db *gorm.DB, id uint) error { return db.Model(&Doc{ID: id}).Update("title", "updated").Error }},
		{"Updates", func(db *gorm.DB, id uint) error {
			return db.Model(&Doc{ID: id}).Updates(map[string]any{"title": "updates"}).Error
		}},
		{"UpdateColumn", func(db *gorm.DB, id uint) error { return db.Model(&Doc{ID: id}).UpdateColumn("title", "col").Error }},
		{"UpdateColumns", func(db *gorm.DB, id uint) error {
			return db.Model(&Doc{ID: id}).UpdateColumns(Doc{Title: "cols"}).Error
		}},
		{"Where.Update", func(db *gorm.DB, id uint) error {
			return db.Model(&Doc{}).Where("id = ?", id).Update("title", "where").Error
		}},
		{"Delete", func(db *gorm.DB, id uint) error { return db.Delete(&Doc{ID: id}).Error }},
		{"Delete by id", func(db *gorm.DB, id uint) error { return db.Delete(&Doc{}, id).Error }},
		{"Where.Delete", func(db *gorm.DB, id uint) error {
			return db.Where("title = ?", "draft").Where("id = ?", id).Delete(&Doc{}).Error
		}},
		{"Save slice (upsert)", func(db *gorm.DB, id uint) error { return db.Save(&[]Doc{{ID: id, Title: "upsert"}}).Error }},
		{"Table.Updates", func(db *gorm.DB, id uint) error {
			return db.Table("docs").Where("id = ?", id).Updates(map[string]any{"title": "table"}).Error
		}},
	}
	eachDBWithModels(t, offlinelock.Config{Models: []any{&Doc{}}}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for i, path := range paths {
			id := uint(i + 1)
			require.NoError(t, admin(db).Create(&Doc{ID: id, Title: "draft"}).Error)
			unchanged := func() {
				var got Doc
				require.NoError(t, db.First(&got, id).Error, path.name)
				assert.Equal(t, "draft", got.Title, "%s: a refused write changes nothing", path.name)
			}
			require.ErrorIs(t, path.write(as(db, martin), id), offlinelock.ErrNotLocked, path.name)
			unchanged()
			_, err := p.Acquire(as(db, david), &Doc{ID: id}, offlinelock.Write)
			require.NoError(t, err)
			err = path.write(as(db, martin), id)
			require.ErrorIs(t, err, offlinelock.ErrLocked, path.name)
			unchanged()
			require.ErrorIs(t, path.write(db, id), offlinelock.ErrNoOwner, path.name)
			unchanged()
			require.NoError(t, p.Release(as(db, david), &Doc{ID: id}))
			_, err = p.Acquire(as(db, martin), &Doc{ID: id}, offlinelock.Write)
			require.NoError(t, err)
			require.NoError(t, path.write(as(db, martin), id), path.name)
		}
	})
}

func TestBulkWritesCheckEveryRowAndGlobalWritesAreRefused(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for i := uint(1); i <= 5; i++ {
			require.NoError(t, admin(db).Create(&Doc{ID: i, Title: "draft"}).Error)
		}
		for i := uint(1); i <= 4; i++ {
			_, err := p.Acquire(as(db, martin), &Doc{ID: i}, offlinelock.Write)
			require.NoError(t, err)
		}
		err := as(db, martin).Model(&Doc{}).Where("title = ?", "draft").Update("body", "x").Error
		require.ErrorIs(t, err, offlinelock.ErrNotLocked, "row 5 is not locked")
		var n int64
		require.NoError(t, db.Model(&Doc{}).Where("body = ?", "x").Count(&n).Error)
		assert.Zero(t, n)

		res := as(db, martin).Model(&Doc{}).Where("id <= ?", 4).Update("body", "x")
		require.NoError(t, res.Error)
		assert.EqualValues(t, 4, res.RowsAffected)

		global := as(db, martin).Session(&gorm.Session{AllowGlobalUpdate: true})
		require.ErrorIs(t, global.Model(&Doc{}).Update("body", "y").Error, offlinelock.ErrInvalid)
		require.ErrorIs(t, global.Delete(&Doc{}).Error, offlinelock.ErrInvalid)
		require.NoError(t, db.Model(&Doc{}).Where("body = ?", "y").Count(&n).Error)
		assert.Zero(t, n)
	})
}

func TestCreatingNewRowsNeedsNoLock(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, as(db, martin).Create(&Doc{Title: "auto id"}).Error)
		require.NoError(t, as(db, martin).Create(&Doc{ID: 40, Title: "explicit id"}).Error)
		require.NoError(t, as(db, martin).Save(&Doc{ID: 41, Title: "save of a new row"}).Error)
		// But not a row whose key someone else has locked ahead of creating it.
		_, err := p.Acquire(as(db, david), &Doc{ID: 42}, offlinelock.Write)
		require.NoError(t, err)
		require.ErrorIs(t, as(db, martin).Create(&Doc{ID: 42}).Error, offlinelock.ErrLocked)
		require.ErrorIs(t, as(db, martin).Create(&Doc{}).Error, nil)
	})
}

func TestNoOwnerReadsAndWritesNothing(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 2)
		before := Account{Name: "untouched"}
		got := before
		require.ErrorIs(t, db.First(&got, 1).Error, offlinelock.ErrNoOwner)
		assert.Equal(t, before, got)
		var list []Account
		require.ErrorIs(t, db.Find(&list).Error, offlinelock.ErrNoOwner)
		assert.Empty(t, list)
		require.ErrorIs(t, db.Create(&Account{ID: 9}).Error, offlinelock.ErrNoOwner)
		var n int64
		require.NoError(t, db.Model(&Account{}).Count(&n).Error)
		assert.EqualValues(t, 2, n, "Count reveals no row and needs no owner")
		all, err := p.List(db, offlinelock.Filter{})
		require.NoError(t, err)
		assert.Empty(t, all)
	})
}

func TestBypassIsLoggedWithItsReason(t *testing.T) {
	var logs bytes.Buffer
	cfg := offlinelock.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	eachDBWithModels(t, cfg, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		logs.Reset()
		ctx := offlinelock.Bypass(context.Background(), "nightly import")
		require.NoError(t, db.WithContext(ctx).Create(&Account{ID: 1, Name: "a"}).Error)
		var a Account
		require.NoError(t, db.WithContext(ctx).First(&a, 1).Error)
		require.NoError(t, db.WithContext(ctx).Model(&a).Update("credit", 5).Error)
		all, err := p.List(db, offlinelock.Filter{})
		require.NoError(t, err)
		assert.Empty(t, all, "a bypass takes no locks")
		assert.Equal(t, 3, strings.Count(logs.String(), `reason="nightly import"`))
		empty := db.WithContext(offlinelock.Bypass(context.Background(), " "))
		require.ErrorIs(t, empty.First(&a, 1).Error, offlinelock.ErrInvalid, "a bypass needs a reason")
	})
}

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

func TestErrorsStayMatchableUnderGORMs(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 1)
		other := errors.New("another plugin's error")
		// Another callback adds its error after the plugin's, before the chain ends.
		require.NoError(t, db.Callback().Query().After("gorm:after_query").Register("test:after", func(db *gorm.DB) {
			if db.Statement.Table == "accounts" {
				db.AddError(other)
			}
		}))
		t.Cleanup(func() { db.Callback().Query().Remove("test:after") })
		_, err := p.Acquire(as(db, david), &Account{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		err = as(db, martin).First(&Account{}, 1).Error
		assert.ErrorIs(t, err, offlinelock.ErrLocked)
		assert.ErrorIs(t, err, other)
		var le *offlinelock.LockedError
		assert.ErrorAs(t, err, &le)
	})
}

func TestDryRunWritesNoLocks(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		dry := as(db, martin).Session(&gorm.Session{DryRun: true})
		stmt := dry.First(&Account{}, 1).Statement
		assert.Contains(t, stmt.SQL.String(), "accounts")
		require.NoError(t, dry.Model(&Account{ID: 1}).Update("credit", 1).Error)
		all, err := p.List(db, offlinelock.Filter{})
		require.NoError(t, err)
		assert.Empty(t, all)
	})
}

// TestUntaggedModelsAreUntouched compares a database with the plugin to
// one without: same SQL, same results, same errors.
func TestUntaggedModelsAreUntouched(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			with, _ := setupModels(t, d, offlinelock.Config{})
			without := d.open(t)
			require.NoError(t, without.AutoMigrate(&Customer{}))
			require.NoError(t, without.Save(&Customer{ID: 1, Name: "Acme"}).Error)
			require.NoError(t, with.Save(&Customer{ID: 1, Name: "Acme"}).Error)
			for _, db := range []*gorm.DB{with, without} {
				var c Customer
				require.NoError(t, db.First(&c, 1).Error)
				assert.Equal(t, "Acme", c.Name)
				assert.ErrorIs(t, db.First(&c, 2).Error, gorm.ErrRecordNotFound)
				require.NoError(t, db.Model(&c).Update("credit", 7).Error)
			}
			sql := func(db *gorm.DB) string {
				return db.ToSQL(func(tx *gorm.DB) *gorm.DB { return tx.Where("name = ?", "x").Find(&[]Customer{}) }) +
					db.ToSQL(func(tx *gorm.DB) *gorm.DB { return tx.Model(&Customer{ID: 1}).Update("name", "y") })
			}
			assert.Equal(t, sql(without), sql(with))
		})
	}
}

func TestRegisteringTwiceIsHarmless(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		assert.ErrorIs(t, db.Use(p), gorm.ErrRegistered)
		assert.ErrorIs(t, db.Use(offlinelock.New(offlinelock.Config{Table: "ol_other"})), gorm.ErrRegistered)
		seedAccounts(t, db, 1)
		require.NoError(t, as(db, martin).First(&Account{}, 1).Error)
		h, err := p.Holders(db, &Account{ID: 1})
		require.NoError(t, err)
		assert.Len(t, h, 1)
	})
}
