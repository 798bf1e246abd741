package plugin_test

// Lockability belongs to the table, not to the Go type a statement
// happens to use: a DTO, a map, or Table("accounts") reading a lockable
// table is enforced like the model; a process that has never parsed the
// model learns its table from the catalog; the key's tag counts wherever
// GORM lets the key live (embedded structs); and neither soft deletes nor
// prepared statements get around a lock.

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// FcAccountName is a read model over accounts without the key.
type FcAccountName struct {
	Name string
}

func (FcAccountName) TableName() string { return "accounts" }

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
	} else if db.Dialector.Name() == "mysql" {
		db2 = openMySQL(t)
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

// TestFailClosedMoreModelShapes: the lock tag where GORM lets it live
// (embedded structs), soft deletes, PrepareStmt.
func TestFailClosedMoreModelShapes(t *testing.T) {
	eachFm(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		t.Run("key tagged in an anonymously embedded struct", func(t *testing.T) {
			fcReset(t, db, p)
			require.NoError(t, admin(db).Create(&FmEmb{FmEmbBase: FmEmbBase{ID: 129}, Name: "secret"}).Error)
			require.NoError(t, fcSafe(t, func() error { return as(db, martin).First(&FmEmb{}, 129).Error }))
			assert.NotEmpty(t, fcLocksOf(t, db, p, martin), "Martin's load of an exclusive_read row took no lock")
			var got FmEmb
			err := fcSafe(t, func() error { return as(db, david).First(&got, 129).Error })
			assert.NotEqual(t, "secret", got.Name, "David read the row held by Martin")
			fmRefused(t, err, "David's load")
		})
		t.Run("key tagged in a gorm:embedded field", func(t *testing.T) {
			fcReset(t, db, p)
			require.NoError(t, admin(db).Create(&FmEmbNamed{Base: FmEmbBase{ID: 129}, Name: "secret"}).Error)
			require.NoError(t, fcSafe(t, func() error { return as(db, martin).First(&FmEmbNamed{}, 129).Error }))
			assert.NotEmpty(t, fcLocksOf(t, db, p, martin), "Martin's load of an exclusive_read row took no lock")
			var got FmEmbNamed
			err := fcSafe(t, func() error { return as(db, david).First(&got, 129).Error })
			assert.NotEqual(t, "secret", got.Name, "David read the row held by Martin")
			fmRefused(t, err, "David's load")
		})
		t.Run("soft delete and Unscoped delete", func(t *testing.T) {
			for _, del := range []fmWrite{
				{"Delete (soft)", func(tx *gorm.DB) error { return tx.Delete(&FmSoft{ID: 129}).Error }},
				{"Unscoped.Delete", func(tx *gorm.DB) error { return tx.Unscoped().Delete(&FmSoft{ID: 129}).Error }},
				{"Unscoped.Where.Delete", func(tx *gorm.DB) error { return tx.Unscoped().Where("name = ?", "secret").Delete(&FmSoft{}).Error }},
				{"Unscoped.Update of a soft-deleted row", func(tx *gorm.DB) error {
					return tx.Unscoped().Model(&FmSoft{}).Where("id = ?", 129).Update("name", "leak").Error
				}},
			} {
				t.Run(del.name, func(t *testing.T) {
					fcReset(t, db, p)
					require.NoError(t, admin(db).Unscoped().Where("1 = 1").Delete(&FmSoft{}).Error)
					require.NoError(t, admin(db).Create(&FmSoft{ID: 129, Name: "secret"}).Error)
					if del.name == "Unscoped.Update of a soft-deleted row" {
						require.NoError(t, admin(db).Delete(&FmSoft{ID: 129}).Error)
					}
					var before []FmSoft
					require.NoError(t, admin(db).Unscoped().Find(&before).Error)
					_, err := p.Acquire(as(db, martin), &FmSoft{ID: 129}, offlinelock.Write)
					require.NoError(t, err)
					fmRefused(t, fcSafe(t, func() error { return del.write(as(db, david)) }), "David's delete")
					var after []FmSoft
					require.NoError(t, admin(db).Unscoped().Find(&after).Error)
					assert.Equal(t, before, after)
					require.NoError(t, fcSafe(t, func() error { return del.write(as(db, martin)) }), "the holder")
				})
			}
		})
	})
	for _, d := range databases() {
		t.Run("PrepareStmt "+d.name, func(t *testing.T) {
			db, p := fmSetup(t, fmPrepared(d))
			for i := 0; i < 2; i++ { // the second round runs the cached statements
				fcReset(t, db, p)
				require.NoError(t, as(db, martin).First(&FmAcct{}, 129).Error)
				var got []FmAcct
				fmRefused(t, as(db, david).Where("credit > ?", 5000).Find(&got).Error, "David's load")
				assert.NotContains(t, fmNames(got), "secret")
				var a FmAcct
				fmRefused(t, as(db, david).First(&a, 129).Error, "David's First")
				assert.Empty(t, fcLocksOf(t, db, p, david))
				fmRefused(t, as(db, david).Model(&FmAcct{ID: 129}).Update("name", "leak").Error, "David's write")
				assert.Equal(t, "secret", fmAcctName(t, db, 129))
				err := db.Transaction(func(tx *gorm.DB) error {
					return tx.WithContext(offlinelock.WithOwner(context.Background(), david)).First(&FmAcct{}, 129).Error
				})
				fmRefused(t, err, "David's First in a transaction")
				// The holder.
				require.NoError(t, as(db, martin).Model(&FmAcct{ID: 129}).Update("credit", 9999).Error)
				require.NoError(t, as(db, martin).Where("credit > ?", 5000).Find(&got).Error)
				assert.Contains(t, fmNames(got), "secret")
			}
		})
	}
}

type FtArt struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Title string
}

type FtLabel struct {
	ID   uint `gorm:"primaryKey"`
	Name string
	Arts []FtArt `gorm:"many2many:ft_label_arts"`
}

// FtROrder (locked on load) is the root of FtRLine, the root of FtRParcel.
type FtROrder struct {
	ID   uint `gorm:"primaryKey" lock:"exclusive_read"`
	Note string
}

type FtRLine struct {
	ID         uint `gorm:"primaryKey"`
	FtROrderID uint `lock:"root"`
	FtROrder   *FtROrder
	Qty        int
}

type FtRParcel struct {
	ID        uint `gorm:"primaryKey"`
	FtRLineID uint `lock:"root"`
	FtRLine   *FtRLine
	Weight    int
}

// TestFailClosedCatalogOnlyNode: a second node, started after the
// first locked the models, enforces join tables and members by table.
func TestFailClosedCatalogOnlyNode(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p, table := ftSetup(t, d, []any{&FtArt{}, &FtROrder{}, &FtRLine{}, &FtRParcel{}}, "ft_label_arts", &FtLabel{})
			require.NoError(t, admin(db).Create(&FtArt{ID: 129, Title: "a"}).Error)
			require.NoError(t, admin(db).Create(&FtLabel{ID: 1, Name: "l1"}).Error)
			require.NoError(t, admin(db).Create(&[]FtROrder{{ID: 1, Note: "free"}, {ID: 2, Note: "secret"}}).Error)
			require.NoError(t, admin(db).Create(&[]FtRLine{{ID: 1, FtROrderID: 2, Qty: 7}, {ID: 2, FtROrderID: 1, Qty: 1}}).Error)
			require.NoError(t, admin(db).Create(&FtRParcel{ID: 1, FtRLineID: 1, Weight: 7}).Error)
			// The first node uses the association (it has parsed FtLabel)
			// and Martin holds article 129 and order 2.
			var arts []FtArt
			require.NoError(t, as(db, martin).Model(&FtLabel{ID: 1}).Association("Arts").Find(&arts))
			_, err := p.Acquire(as(db, martin), &FtArt{ID: 129}, offlinelock.Write)
			require.NoError(t, err)
			require.NoError(t, as(db, martin).First(&FtROrder{}, 2).Error)
			db2, _ := fcTwin(t, db, table)
			labelArts := func() int64 {
				var n int64
				require.NoError(t, admin(db).Table("ft_label_arts").Where("ft_art_id = ?", 129).Count(&n).Error)
				return n
			}

			t.Run("join table of an association declared on the untagged side", func(t *testing.T) {
				for _, node := range []struct {
					name string
					db   *gorm.DB
				}{{"first node", db}, {"second node", db2}} {
					t.Run(node.name, func(t *testing.T) {
						relate := func(tx *gorm.DB) error {
							return tx.Table("ft_label_arts").Create(map[string]any{"ft_label_id": 1, "ft_art_id": 129}).Error
						}
						steps := []struct {
							name    string
							by      offlinelock.Owner
							related bool // article 129 related before the step
							op      func(tx *gorm.DB) error
							want    int64 // relations of article 129 after the step
						}{
							{"David: Table(join).Create(map)", david, false, relate, 0},
							{"David: Association(Arts).Append", david, false, func(tx *gorm.DB) error {
								return tx.Model(&FtLabel{ID: 1}).Association("Arts").Append(&FtArt{ID: 129})
							}, 0},
							{"David: Table(join).Where.Delete", david, true, func(tx *gorm.DB) error {
								return tx.Table("ft_label_arts").Where("ft_art_id = ?", 129).Delete(map[string]any{}).Error
							}, 1},
							{"David: Association(Arts).Clear", david, true, func(tx *gorm.DB) error {
								return tx.Model(&FtLabel{ID: 1}).Association("Arts").Clear()
							}, 1},
							{"Martin (the holder): Table(join).Create(map)", martin, false, relate, 1},
							{"Martin (the holder): Table(join).Where.Delete", martin, true, func(tx *gorm.DB) error {
								return tx.Table("ft_label_arts").Where("ft_art_id = ?", 129).Delete(map[string]any{}).Error
							}, 0},
						}
						for _, s := range steps {
							require.NoError(t, admin(db).Exec("DELETE FROM ft_label_arts").Error)
							if s.related {
								require.NoError(t, relate(admin(db)))
							}
							err := fcSafe(t, func() error { return s.op(as(node.db, s.by)) })
							if s.by == martin {
								assert.NoError(t, err, s.name)
							} else {
								fmRefused(t, err, "%s: article 129 is held by Martin", s.name)
								assert.Empty(t, fcLocksOf(t, db, p, david))
							}
							assert.Equal(t, s.want, labelArts(), s.name)
						}
					})
				}
			})

			loads := []struct {
				name string
				load func(tx *gorm.DB) (bool, error)
			}{
				{"member Table(ft_r_lines).Find([]map)", func(tx *gorm.DB) (bool, error) {
					var v []map[string]any
					err := tx.Table("ft_r_lines").Where("id = ?", 1).Find(&v).Error
					return len(v) > 0, err
				}},
				{"member Table(ft_r_lines).Pluck", func(tx *gorm.DB) (bool, error) {
					var v []int
					err := tx.Table("ft_r_lines").Where("qty = ?", 7).Pluck("qty", &v).Error
					return len(v) > 0, err
				}},
				{"two-level member Table(ft_r_parcels).Scan", func(tx *gorm.DB) (bool, error) {
					var v []struct{ Weight int }
					err := tx.Table("ft_r_parcels").Where("id = ?", 1).Scan(&v).Error
					return len(v) > 0, err
				}},
				{"two-level member Table(ft_r_parcels AS p).Find([]map)", func(tx *gorm.DB) (bool, error) {
					var v []map[string]any
					err := tx.Table("ft_r_parcels AS p").Where("p.weight = ?", 7).Find(&v).Error
					return len(v) > 0, err
				}},
			}
			for _, l := range loads {
				t.Run(l.name, func(t *testing.T) {
					touched, err := fcSafeLoad(t, func() (bool, error) { return l.load(as(db2, david)) })
					fmRefused(t, err, "the second node read a member of order 2, held by Martin")
					assert.False(t, touched)
					assert.Empty(t, fcLocksOf(t, db, p, david))
					touched, err = fcSafeLoad(t, func() (bool, error) { return l.load(as(db2, martin)) })
					require.NoError(t, err, "the holder")
					assert.True(t, touched)
				})
			}
			writes := []struct {
				name  string
				write func(tx *gorm.DB) error
			}{
				{"member Table.Where.Update(qty)", func(tx *gorm.DB) error {
					return tx.Table("ft_r_lines").Where("id = ?", 1).Update("qty", 99).Error
				}},
				{"member moved out: Table.Where.Update(root link)", func(tx *gorm.DB) error {
					return tx.Table("ft_r_lines").Where("id = ?", 1).Update("ft_r_order_id", 1).Error
				}},
				{"member moved in: Table.Where.Update(root link)", func(tx *gorm.DB) error {
					return tx.Table("ft_r_lines").Where("id = ?", 2).Update("ft_r_order_id", 2).Error
				}},
				{"member created: Table.Create(map)", func(tx *gorm.DB) error {
					return tx.Table("ft_r_lines").Create(map[string]any{"id": 9, "ft_r_order_id": 2, "qty": 1}).Error
				}},
				{"two-level member moved in: Table.Where.Update(link)", func(tx *gorm.DB) error {
					return tx.Table("ft_r_parcels").Where("id = ?", 1).Update("ft_r_line_id", 2).Error
				}},
			}
			state := func() string {
				var ls []FtRLine
				var ps []FtRParcel
				require.NoError(t, admin(db).Order("id").Find(&ls).Error)
				require.NoError(t, admin(db).Order("id").Find(&ps).Error)
				return fmt.Sprint(ls, ps)
			}
			for _, w := range writes {
				t.Run(w.name, func(t *testing.T) {
					before := state()
					err := fcSafe(t, func() error { return w.write(as(db2, david)) })
					fmRefused(t, err, "the second node changed a member of order 2, held by Martin")
					assert.Equal(t, before, state())
					assert.Empty(t, fcLocksOf(t, db, p, david))
				})
			}
		})
	}
}

// FtSoftR is locked on load and soft-deleted.
