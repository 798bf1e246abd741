package plugin_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// TestFailClosedAWriteByKeyWithTheCallersWhere: a write of a model value
// with its key and a WHERE of the caller's changes the rows the two select
// together, as the database reads them: an OR, or a term that closes
// GORM's parenthesis, reaches other rows than the key. They are checked.
func TestFailClosedAWriteByKeyWithTheCallersWhere(t *testing.T) {
	const splice = "id = 129) OR (0=1"
	writes := []struct {
		name  string
		write func(tx *gorm.DB) error
	}{
		{"Model(key).Where(splice).Update", func(tx *gorm.DB) error {
			return tx.Model(&Doc{ID: 1}).Where(splice).Update("title", "pwn").Error
		}},
		{"Model(key).Where(splice).Updates(map)", func(tx *gorm.DB) error {
			return tx.Model(&Doc{ID: 1}).Where(splice).Updates(map[string]any{"title": "pwn"}).Error
		}},
		{"Where(splice).Save(key)", func(tx *gorm.DB) error { return tx.Where(splice).Save(&Doc{ID: 1, Title: "pwn"}).Error }},
		{"Where(splice).Delete(key)", func(tx *gorm.DB) error { return tx.Where(splice).Delete(&Doc{ID: 1}).Error }},
		{"Delete(key, splice)", func(tx *gorm.DB) error { return tx.Delete(&Doc{ID: 1}, splice).Error }},
		{"Model(key).Or(id = 129).Update", func(tx *gorm.DB) error {
			return tx.Model(&Doc{ID: 1}).Or("id = ?", 129).Update("title", "pwn").Error
		}},
		{"Model(key).Or(struct).Updates", func(tx *gorm.DB) error {
			return tx.Model(&Doc{ID: 1}).Or(&Doc{ID: 129}).Updates(Doc{Title: "pwn"}).Error
		}},
		{"Or(id = 129).Delete(key)", func(tx *gorm.DB) error { return tx.Or("id = ?", 129).Delete(&Doc{ID: 1}).Error }},
	}
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for _, ownRow := range []bool{true, false} {
			for _, w := range writes {
				t.Run(w.name, func(t *testing.T) {
					fcReset(t, db, p)
					require.NoError(t, admin(db).Where("1 = 1").Delete(&Doc{}).Error)
					require.NoError(t, admin(db).Create(&Doc{ID: 129, Title: "draft", Body: "secret"}).Error)
					if ownRow {
						require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "mine"}).Error)
					}
					for id, o := range map[uint]offlinelock.Owner{1: david, 129: martin} {
						_, err := p.Acquire(as(db, o), &Doc{ID: id}, offlinelock.Write)
						require.NoError(t, err)
					}
					err := fcSafe(t, func() error { return w.write(as(db, david)) })
					assert.ErrorIs(t, err, offlinelock.ErrLocked, "david's write reached martin's 129 (own row %v)", ownRow)
					fcAssertDocUnchanged(t, db)
				})
			}
		}
		t.Run("the holder's write with a WHERE changes what it selects", func(t *testing.T) {
			fcReset(t, db, p)
			require.NoError(t, admin(db).Where("1 = 1").Delete(&Doc{}).Error)
			require.NoError(t, admin(db).Create(&[]Doc{{ID: 1, Title: "draft"}, {ID: 129, Title: "draft"}}).Error)
			_, err := p.Acquire(as(db, martin), &Doc{ID: 129}, offlinelock.Write)
			require.NoError(t, err)
			m := as(db, martin)
			res := m.Model(&Doc{ID: 129}).Where("title = ?", "other").Update("title", "x")
			require.NoError(t, res.Error)
			assert.Zero(t, res.RowsAffected)
			res = m.Model(&Doc{ID: 129}).Where("title = ?", "draft").Update("title", "edited")
			require.NoError(t, res.Error, "doc 1 has the same title, but the key excludes it")
			assert.Equal(t, int64(1), res.RowsAffected)
			var all []Doc
			require.NoError(t, admin(db).Order("id").Find(&all).Error)
			assert.Equal(t, []string{"draft", "edited"}, []string{all[0].Title, all[1].Title})
		})
	})
}

// TestFailClosedSplicedConditionsInLoads: raw SQL inside a NOT or a group
// of conditions can close GORM's parentheses as a top-level raw term can:
// a load with such a term does not trust its key condition, and reads
// only what it locks.
func TestFailClosedSplicedConditionsInLoads(t *testing.T) {
	const splice = "0=0) OR (id = 129) OR (0=1"
	loads := []struct {
		name string
		load func(tx *gorm.DB) ([]string, error)
	}{
		{"Not(splice).Where(key).Pluck", func(tx *gorm.DB) ([]string, error) {
			var names []string
			err := tx.Model(&Account{}).Not(splice).Where(&Account{ID: 1}).Pluck("name", &names).Error
			return names, err
		}},
		{"Not(splice).Find(&views, key)", func(tx *gorm.DB) ([]string, error) {
			var v []FcAccountView
			err := tx.Not(splice).Find(&v, 1).Error
			var names []string
			for _, r := range v {
				names = append(names, r.Name)
			}
			return names, err
		}},
		{"Model.Not(splice).Find(&maps, key)", func(tx *gorm.DB) ([]string, error) {
			var v []map[string]any
			err := tx.Model(&Account{}).Not(splice).Find(&v, 1).Error
			var names []string
			for _, r := range v {
				names = append(names, r["name"].(string))
			}
			return names, err
		}},
		{"Select(name).Not(splice).Where(key).Rows", func(tx *gorm.DB) ([]string, error) {
			return fmRowNames(tx.Model(&Account{}).Select("name").Not(splice).Where(&Account{ID: 1}))
		}},
		{"Select(name).Not(splice).Find(&accounts, key)", func(tx *gorm.DB) ([]string, error) {
			var v []Account
			err := tx.Select("name").Not(splice).Find(&v, 1).Error
			var names []string
			for _, r := range v {
				names = append(names, r.Name)
			}
			return names, err
		}},
		{"Where(group with a splice).Where(key).Pluck", func(tx *gorm.DB) ([]string, error) {
			var names []string
			group := tx.Session(&gorm.Session{NewDB: true}).Where("0=1").Or("0=0)) OR ((id = 129) OR (0=1")
			err := tx.Model(&Account{}).Where(group).Where(&Account{ID: 1}).Pluck("name", &names).Error
			return names, err
		}},
	}
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&[]Account{{ID: 1, Name: "free", Credit: 1}, {ID: 129, Name: "zzz", Credit: 9999}}).Error)
		require.NoError(t, as(db, martin).First(&Account{}, 129).Error)
		for _, l := range loads {
			t.Run(l.name, func(t *testing.T) {
				names, err := fcSafe2(t, func() ([]string, error) { return l.load(as(db, david)) })
				assert.NotContains(t, names, "zzz", "david read martin's account 129")
				if err == nil {
					assert.True(t, fcHolds(t, db, p, &Account{ID: 1}, david, offlinelock.Write) || len(names) == 0)
				}
				h, herr := p.Holders(db, &Account{ID: 129})
				require.NoError(t, herr)
				require.Len(t, h, 1)
				assert.Equal(t, martin, h[0].Owner)
			})
		}
	})
}

func fcSafe2(t *testing.T, f func() ([]string, error)) (out []string, err error) {
	t.Helper()
	err = fcSafe(t, func() error {
		var e error
		out, e = f()
		return e
	})
	return out, err
}

// TestFailClosedAnUpdateMovingTheKey: an update that gives a row another
// key creates it there, for the lock table: a key another session locked
// ahead is refused, whatever carries the new key (a struct other than the
// model, a DTO, a map in any spelling of the key).
func TestFailClosedAnUpdateMovingTheKey(t *testing.T) {
	moves := []struct {
		name  string
		write func(tx *gorm.DB) error
	}{
		{"Updates(&Doc{ID: 500})", func(tx *gorm.DB) error { return tx.Model(&Doc{ID: 1}).Updates(&Doc{ID: 500, Title: "moved"}).Error }},
		{"Updates(Doc{ID: 500})", func(tx *gorm.DB) error { return tx.Model(&Doc{ID: 1}).Updates(Doc{ID: 500, Title: "moved"}).Error }},
		{"Updates(FcDocView{ID: 500})", func(tx *gorm.DB) error {
			return tx.Model(&Doc{ID: 1}).Updates(FcDocView{ID: 500, Title: "moved"}).Error
		}},
		{"Select(*).Updates(Doc{ID: 500})", func(tx *gorm.DB) error {
			return tx.Model(&Doc{ID: 1}).Select("*").Updates(Doc{ID: 500, Title: "moved"}).Error
		}},
		{"Updates(map{ID: 1, Id: 500})", func(tx *gorm.DB) error {
			return tx.Model(&Doc{ID: 1}).Updates(map[string]any{"ID": 1, "Id": 500}).Error
		}},
		{"Updates(map{id: 500})", func(tx *gorm.DB) error {
			return tx.Model(&Doc{ID: 1}).Updates(map[string]any{"id": 500}).Error
		}},
	}
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for _, mv := range moves {
			t.Run(mv.name, func(t *testing.T) {
				fcReset(t, db, p)
				require.NoError(t, admin(db).Where("1 = 1").Delete(&Doc{}).Error)
				require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "draft"}).Error)
				_, err := p.Acquire(as(db, david), &Doc{ID: 1}, offlinelock.Write)
				require.NoError(t, err)
				_, err = p.Acquire(as(db, martin), &Doc{ID: 500}, offlinelock.Write) // ahead of creating it
				require.NoError(t, err)
				err = fcSafe(t, func() error { return mv.write(as(db, david)) })
				if err == nil || !errors.Is(err, offlinelock.ErrLocked) {
					// PostgreSQL refuses two assignments to one column itself.
					assert.Error(t, err, "david moved doc 1 onto martin's 500")
				}
				var ids []uint
				require.NoError(t, admin(db).Model(&Doc{}).Order("id").Pluck("id", &ids).Error)
				assert.Equal(t, []uint{1}, ids)
			})
		}
	})
}

// TestFailClosedAWriteWithALimit: GORM builds LIMIT into UPDATE and DELETE
// on MySQL only; elsewhere the write changes every row its WHERE admits,
// and is checked on all of them, before any hook runs.
func TestFailClosedAWriteWithALimit(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcDropCleanup(t, db, &FcHooked{})
		require.NoError(t, admin(db).AutoMigrate(&FcHooked{}))
		for name, write := range map[string]func(tx *gorm.DB) error{
			"Order.Limit.Update": func(tx *gorm.DB) error {
				return tx.Model(&FcHooked{}).Where("name = ?", "draft").Order("id").Limit(1).Update("name", "pwn").Error
			},
			"Order.Limit.Delete": func(tx *gorm.DB) error {
				return tx.Where("name = ?", "draft").Order("id").Limit(1).Delete(&FcHooked{}).Error
			},
		} {
			fcReset(t, db, p)
			require.NoError(t, admin(db).Where("1 = 1").Delete(&FcHooked{}).Error)
			require.NoError(t, admin(db).Create(&[]FcHooked{{ID: 1, Name: "draft"}, {ID: 129, Name: "draft"}}).Error)
			for id, o := range map[uint]offlinelock.Owner{1: david, 129: martin} {
				_, err := p.Acquire(as(db, o), &FcHooked{ID: id}, offlinelock.Write)
				require.NoError(t, err)
			}
			c := &fcHookCounter{}
			tx := db.WithContext(context.WithValue(offlinelock.WithOwner(context.Background(), david), fcHooksKey{}, c))
			err := fcSafe(t, func() error { return write(tx) })
			var got []FcHooked
			require.NoError(t, admin(db).Order("id").Find(&got).Error)
			if db.Dialector.Name() == "mysql" {
				// LIMIT 1 in the statement: david's own row 1 only.
				require.NoError(t, err, name)
				assert.Equal(t, "draft", got[len(got)-1].Name, "%s: martin's 129 untouched", name)
				continue
			}
			assert.ErrorIs(t, err, offlinelock.ErrLocked, name)
			assert.Zero(t, c.N.Load(), "%s: hooks ran for a refused write", name)
			assert.Equal(t, []FcHooked{{ID: 1, Name: "draft"}, {ID: 129, Name: "draft"}}, got, name)
		}
	})
}
