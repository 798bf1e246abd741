package plugin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock"
)

// GaOrder is a root; its GaLines are members (issue 36, item 3).
type GaOrder struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Note  string
	Lines []GaLine
}

type GaLine struct {
	ID        uint `gorm:"primaryKey"`
	GaOrderID uint `lock:"root"`
	Qty       int
}

// TestGenericsAssociationSetOfMembers: GORM's generics association API
// (gorm.G[T](db).Where(…).Set(clause.Association{…}).Update) writes the
// members of the roots the WHERE selects through a subquery on the root's
// table. The holder's create, update, delete and unlink of its order's
// lines go through; another session's are refused with ErrLocked.
func TestGenericsAssociationSetOfMembers(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setup(t, d, offlinelock.Config{Models: []any{&GaOrder{}, &GaLine{}}})
			fcDropCleanup(t, db, &GaLine{}, &GaOrder{})
			require.NoError(t, db.AutoMigrate(&GaOrder{}, &GaLine{}))
			require.NoError(t, admin(db).Create(&GaOrder{ID: 1, Note: "n", Lines: []GaLine{{Qty: 1}}}).Error)
			_, err := p.Acquire(as(db, martin), &GaOrder{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			set := func(o offlinelock.Owner, op clause.AssociationOpType) error {
				a := clause.Association{Association: "Lines", Type: op, Set: []clause.Assignment{{Column: clause.Column{Name: "qty"}, Value: 5}}}
				if op == clause.OpDelete || op == clause.OpUnlink {
					a.Conditions = []clause.Expression{clause.Eq{Column: clause.Column{Name: "qty"}, Value: 5}}
				}
				_, err := gorm.G[GaOrder](db).Where("note = ?", "n").Set(a).Update(offlinelock.WithOwner(context.Background(), o))
				return err
			}
			count := func(q string) (n int64) {
				require.NoError(t, admin(db).Model(&GaLine{}).Where(q).Count(&n).Error)
				return n
			}
			for _, op := range []clause.AssociationOpType{clause.OpUpdate, clause.OpCreate} {
				require.ErrorIs(t, set(david, op), offlinelock.ErrLocked, "david, op %v", op)
				require.NoError(t, set(martin, op), "martin, op %v", op)
			}
			require.Equal(t, int64(2), count("qty = 5"), "martin's update and create")
			require.ErrorIs(t, set(david, clause.OpUnlink), offlinelock.ErrLocked)
			require.ErrorIs(t, set(david, clause.OpDelete), offlinelock.ErrLocked)
			require.Equal(t, int64(2), count("qty = 5 AND ga_order_id = 1"))
			require.NoError(t, set(martin, clause.OpDelete))
			require.Equal(t, int64(0), count("1 = 1"))
		})
	}
}
