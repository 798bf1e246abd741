package plugin_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// RkNatural derives its key from its code in BeforeCreate (a natural-key
// upsert), and a BeforeUpdate moves a save to the record its code names:
// keys set after the plugin's check, before the statement is built.
type RkNatural struct {
	ID   uint `gorm:"primaryKey;autoIncrement:false" lock:"exclusive_write"`
	Code string
	Note string
}

func (n *RkNatural) BeforeCreate(*gorm.DB) error {
	if n.ID == 0 {
		id, _ := strconv.Atoi(n.Code)
		n.ID = uint(id)
	}
	return nil
}

func (n *RkNatural) BeforeUpdate(tx *gorm.DB) error {
	if id, err := strconv.Atoi(n.Code); err == nil && n.Code != "" {
		n.ID = uint(id)
	}
	return rkSetColumns(tx)
}

// rkSetKey carries columns a BeforeUpdate hook sets with SetColumn.
type rkSetKey struct{}

func rkSetColumns(tx *gorm.DB) error {
	if cols, ok := tx.Statement.Context.Value(rkSetKey{}).(map[string]any); ok {
		for k, v := range cols {
			tx.Statement.SetColumn(k, v)
		}
	}
	return nil
}

func rkWith(tx *gorm.DB, cols map[string]any) *gorm.DB {
	return tx.WithContext(context.WithValue(tx.Statement.Context, rkSetKey{}, cols))
}

// RkLine is a member of an order whose hooks are counted, and whose
// BeforeUpdate may set columns with SetColumn.
type RkLine struct {
	ID      uint `gorm:"primaryKey"`
	OrderID uint `lock:"root"`
	Order   *Order
	Qty     int
}

func (*RkLine) BeforeSave(tx *gorm.DB) error   { return testkit.FcCount(tx) }
func (*RkLine) BeforeCreate(tx *gorm.DB) error { return testkit.FcCount(tx) }
func (*RkLine) BeforeUpdate(tx *gorm.DB) error {
	if err := testkit.FcCount(tx); err != nil {
		return err
	}
	return rkSetColumns(tx)
}

// TestAHookOrAnAssignmentMovingAMember: a member moved by a hook's
// SetColumn is checked on where it lands; one moved by assigning its
// belongs-to root is refused before any hook runs.
func TestAHookOrAnAssignmentMovingAMember(t *testing.T) {
	eachDBWithAggregates(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcDropCleanup(t, db, &RkLine{})
		require.NoError(t, admin(db).AutoMigrate(&RkLine{}))
		seedOrder(t, db, 7, 0)
		seedOrder(t, db, 8, 0)
		orderOf := func(id uint) uint {
			var l RkLine
			require.NoError(t, admin(db).First(&l, id).Error)
			return l.OrderID
		}
		counted := func() (*gorm.DB, *fcHookCounter) {
			c := &fcHookCounter{}
			return db.WithContext(context.WithValue(offlinelock.WithOwner(context.Background(), martin), fcHooksKey{}, c)), c
		}
		moves := []struct {
			name     string
			hooksRun bool // the move is seen only once a hook ran
			move     func(tx *gorm.DB) error
		}{
			{"Updates(map) with SetColumn(OrderID) in BeforeUpdate", true, func(tx *gorm.DB) error {
				return rkWith(tx, map[string]any{"OrderID": uint(8)}).Model(&RkLine{ID: 1}).Updates(map[string]any{"qty": 5}).Error
			}},
			{"Update(qty) with SetColumn(order_id) in BeforeUpdate", true, func(tx *gorm.DB) error {
				return rkWith(tx, map[string]any{"order_id": uint(8)}).Model(&RkLine{ID: 1}).Update("qty", 6).Error
			}},
			{"Save with the belongs-to Order assigned", false, func(tx *gorm.DB) error {
				return tx.Save(&RkLine{ID: 1, OrderID: 7, Qty: 2, Order: &Order{ID: 8}}).Error
			}},
			{"Create with the belongs-to Order assigned", false, func(tx *gorm.DB) error {
				return tx.Create(&RkLine{ID: 2, OrderID: 7, Qty: 2, Order: &Order{ID: 8}}).Error
			}},
		}
		for _, mv := range moves {
			t.Run(mv.name, func(t *testing.T) {
				reset := func() {
					fcReset(t, db, p)
					require.NoError(t, admin(db).Where("1 = 1").Delete(&RkLine{}).Error)
					require.NoError(t, admin(db).Create(&RkLine{ID: 1, OrderID: 7, Qty: 1}).Error)
				}
				reset()
				_, err := p.Acquire(as(db, martin), &Order{ID: 7}, offlinelock.Write)
				require.NoError(t, err)
				tx, c := counted()
				err = fcSafe(t, func() error { return mv.move(tx) })
				assert.True(t, fcRefused(err), "martin moved a line into order 8 without its lock: %v", err)
				assert.Equal(t, uint(7), orderOf(1))
				var n int64
				require.NoError(t, admin(db).Model(&RkLine{}).Where("id = 2").Count(&n).Error)
				assert.Zero(t, n)
				if !mv.hooksRun {
					assert.Zero(t, c.N.Load(), "hooks ran for a move seen before them")
				}

				reset()
				for _, id := range []uint{7, 8} {
					_, err := p.Acquire(as(db, martin), &Order{ID: id}, offlinelock.Write)
					require.NoError(t, err)
				}
				tx, _ = counted()
				require.NoError(t, mv.move(tx), "both roots held")
				var landed int64
				require.NoError(t, admin(db).Model(&RkLine{}).Where("order_id = 8").Count(&landed).Error)
				assert.Equal(t, int64(1), landed)
			})
		}
	})
}

// TestAHookSettingTheKeyWithSetColumn: a BeforeUpdate hook that moves the
// key with SetColumn (into the update's map) is checked as a move.
func TestAHookSettingTheKeyWithSetColumn(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcDropCleanup(t, db, &RkNatural{})
		require.NoError(t, admin(db).AutoMigrate(&RkNatural{}))
		require.NoError(t, admin(db).Create(&RkNatural{ID: 1, Note: "one"}).Error)
		_, err := p.Acquire(as(db, david), &RkNatural{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		_, err = p.Acquire(as(db, martin), &RkNatural{ID: 500}, offlinelock.Write)
		require.NoError(t, err)
		err = fcSafe(t, func() error {
			return rkWith(as(db, david), map[string]any{"ID": uint(500)}).Model(&RkNatural{ID: 1}).Updates(map[string]any{"note": "x"}).Error
		})
		require.ErrorIs(t, err, offlinelock.ErrLocked)
		var ids []uint
		require.NoError(t, admin(db).Model(&RkNatural{}).Pluck("id", &ids).Error)
		assert.Equal(t, []uint{1}, ids)
	})
}

// TestAKeySetByAHookIsChecked: a write is checked on the key the statement
// finally carries, whatever set it after the plugin's first check.
func TestAKeySetByAHookIsChecked(t *testing.T) {
	writes := []struct {
		name  string
		write func(tx *gorm.DB) error
	}{
		{"OnConflict(UpdateAll).Create, key from BeforeCreate", func(tx *gorm.DB) error {
			return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&RkNatural{Code: "129", Note: "changed"}).Error
		}},
		{"OnConflict(UpdateAll).Create of a slice, keys from BeforeCreate", func(tx *gorm.DB) error {
			return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&[]RkNatural{{Code: "129", Note: "changed"}}).Error
		}},
		{"Save of another record, moved by BeforeUpdate", func(tx *gorm.DB) error {
			return tx.Save(&RkNatural{ID: 1, Code: "129", Note: "changed"}).Error
		}},
		{"Model.Updates, moved by BeforeUpdate", func(tx *gorm.DB) error {
			return tx.Model(&RkNatural{ID: 1, Code: "129"}).Updates(map[string]any{"note": "changed"}).Error
		}},
	}
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcDropCleanup(t, db, &RkNatural{})
		require.NoError(t, admin(db).AutoMigrate(&RkNatural{}))
		rows := func() []RkNatural {
			var all []RkNatural
			require.NoError(t, admin(db).Order("id").Find(&all).Error)
			return all
		}
		for _, w := range writes {
			t.Run(w.name, func(t *testing.T) {
				fcReset(t, db, p)
				require.NoError(t, admin(db).Where("1 = 1").Delete(&RkNatural{}).Error)
				require.NoError(t, admin(db).Create(&[]RkNatural{{ID: 1, Note: "one"}, {ID: 129, Note: "held"}}).Error)
				before := rows()
				for _, target := range []uint{1, 129} {
					_, err := p.Acquire(as(db, map[uint]offlinelock.Owner{1: david, 129: martin}[target]), &RkNatural{ID: target}, offlinelock.Write)
					require.NoError(t, err)
				}
				err := fcSafe(t, func() error { return w.write(as(db, david)) })
				assert.ErrorIs(t, err, offlinelock.ErrLocked, "David's write of martin's 129")
				assert.Equal(t, before, rows(), "the refused write changed rows")
				assert.False(t, fcHolds(t, db, p, &RkNatural{ID: 129}, david, offlinelock.Write))

				// The holder of both: the write lands on 129.
				_, err = p.Acquire(as(db, martin), &RkNatural{ID: 1}, offlinelock.Write)
				require.ErrorIs(t, err, offlinelock.ErrLocked)
				fcReset(t, db, p)
				for _, target := range []uint{1, 129} {
					_, err := p.Acquire(as(db, martin), &RkNatural{ID: target}, offlinelock.Write)
					require.NoError(t, err)
				}
				require.NoError(t, fcSafe(t, func() error { return w.write(as(db, martin)) }))
				var got RkNatural
				require.NoError(t, admin(db).First(&got, 129).Error)
				assert.Equal(t, "changed", got.Note)
			})
		}
	})
}
