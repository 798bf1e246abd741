package offlinelock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
)

// CpFolder is not lockable; deleting one deletes its CpPages (a declared
// ON DELETE CASCADE), which are.
type CpFolder struct {
	ID    uint
	Pages []CpPage `gorm:"constraint:OnDelete:CASCADE"`
}

type CpPage struct {
	ID         uint `gorm:"primaryKey" lock:"exclusive_write"`
	CpFolderID uint
	Text       string
}

// TestDeleteOfAnUntaggedParentNeedsItsChildrensLocks: a delete of a table
// that is not lockable, whose foreign-key action reaches lockable rows,
// needs the session's Write locks on those rows, checked before its hooks
// (issue 33: on SQLite, where no database guard stands behind the plugin).
// A delete that reaches none needs no owner.
func TestDeleteOfAnUntaggedParentNeedsItsChildrensLocks(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setup(t, d, offlinelock.Config{Models: []any{&CpPage{}}})
			fcDropCleanup(t, db, &CpPage{}, &CpFolder{})
			require.NoError(t, db.AutoMigrate(&CpFolder{}, &CpPage{}))
			require.NoError(t, admin(db).Create(&[]CpFolder{{ID: 1}, {ID: 2}, {ID: 3}}).Error)
			require.NoError(t, admin(db).Create(&[]CpPage{{ID: 1, CpFolderID: 1, Text: "held"}, {ID: 2, CpFolderID: 2, Text: "free"}}).Error)
			_, err := p.Acquire(as(db, martin), &CpPage{ID: 1}, offlinelock.Write)
			require.NoError(t, err)

			require.ErrorIs(t, as(db, david).Delete(&CpFolder{ID: 1}).Error, offlinelock.ErrLocked, "martin's page")
			require.ErrorIs(t, as(db, david).Where("id = ?", 1).Delete(&CpFolder{}).Error, offlinelock.ErrLocked, "by WHERE")
			require.ErrorIs(t, as(db, david).Delete(&CpFolder{ID: 2}).Error, offlinelock.ErrNotLocked, "a page nobody locked needs the writer's lock")
			require.ErrorIs(t, db.WithContext(context.Background()).Delete(&CpFolder{ID: 1}).Error, offlinelock.ErrNoOwner)
			require.NoError(t, db.WithContext(context.Background()).Delete(&CpFolder{ID: 3}).Error, "no lockable row reached: no owner needed")

			var pages []CpPage
			require.NoError(t, admin(db).Order("id").Find(&pages).Error)
			require.Len(t, pages, 2, "nothing cascaded")

			require.NoError(t, as(db, martin).Delete(&CpFolder{ID: 1}).Error, "the holder's delete")
			var folders, left int64
			require.NoError(t, admin(db).Model(&CpFolder{}).Count(&folders).Error)
			require.NoError(t, admin(db).Model(&CpPage{}).Count(&left).Error)
			require.Equal(t, []int64{1, 1}, []int64{folders, left})
		})
	}
}
