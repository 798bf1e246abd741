package offlinelock_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock"
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

func (n *RkNatural) BeforeUpdate(*gorm.DB) error {
	if id, err := strconv.Atoi(n.Code); err == nil && n.Code != "" {
		n.ID = uint(id)
	}
	return nil
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
