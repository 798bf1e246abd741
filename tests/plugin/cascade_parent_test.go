package plugin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// CpFolder is not lockable; deleting one deletes its CpPages (a declared
// ON DELETE CASCADE), which are (testkit's models_aggregate.go).
type CpFolder = testkit.CpFolder

// CpPage is a lockable page of a CpFolder.
type CpPage = testkit.CpPage

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

			// By table name alone the plugin cannot read which rows a
			// delete takes: refused, the holder's too; Bypass is the way.
			byTable := func(tx *gorm.DB, id uint) error {
				return tx.Table("cp_folders").Where("id = ?", id).Delete(map[string]any{}).Error
			}
			require.ErrorIs(t, byTable(as(db, david), 1), offlinelock.ErrUnenforceable, "by table name")
			require.ErrorIs(t, byTable(as(db, martin), 1), offlinelock.ErrUnenforceable, "by table name, the holder")
			schema := map[string]string{"sqlite": "main", "postgres": "public", "mysql": "test"}[d.name]
			require.ErrorIs(t, as(db, david).Table(schema+".cp_folders").Where("id = ?", 1).Delete(map[string]any{}).Error,
				offlinelock.ErrUnenforceable, "by a schema-qualified name")
			require.ErrorIs(t, as(db, david).Model(&CpFolder{}).Table("cp_folders").Delete(&CpFolder{ID: 1}).Error,
				offlinelock.ErrLocked, "the model with its own table named")

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

// CuFolder is not lockable; changing its key changes its CuPages' (a
// declared ON UPDATE CASCADE), which are lockable.
type CuFolder struct {
	ID    uint
	Name  string
	Pages []CuPage `gorm:"constraint:OnUpdate:CASCADE"`
}

type CuPage struct {
	ID         uint `gorm:"primaryKey" lock:"exclusive_write"`
	CuFolderID uint
	Text       string
}

// cuFolderRow is a read model of cu_folders: it declares no relationship.
type cuFolderRow struct {
	ID   uint
	Name string
}

func (cuFolderRow) TableName() string { return "cu_folders" }

// TestKeyUpdateOfAnUntaggedParentNeedsItsChildrensLocks: an update of an
// untagged parent's key, whose ON UPDATE action rewrites lockable rows,
// needs the session's Write locks on them, in every spelling GORM has for
// it; an update that leaves the key alone needs none.
func TestKeyUpdateOfAnUntaggedParentNeedsItsChildrensLocks(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			table := "ol_cu" + randomHex(5)
			db, p := setup(t, d, offlinelock.Config{Table: table, Models: []any{&CuPage{}}})
			fcDropCleanup(t, db, &CuPage{}, &CuFolder{})
			require.NoError(t, db.AutoMigrate(&CuFolder{}, &CuPage{}))
			require.NoError(t, admin(db).Create(&[]CuFolder{{ID: 1}, {ID: 2}}).Error)
			require.NoError(t, admin(db).Create(&[]CuPage{{ID: 1, CuFolderID: 1, Text: "held"}}).Error)
			_, err := p.Acquire(as(db, martin), &CuPage{ID: 1}, offlinelock.Write)
			require.NoError(t, err)

			for name, write := range map[string]func(*gorm.DB) error{
				"Update":      func(tx *gorm.DB) error { return tx.Model(&CuFolder{ID: 1}).Update("id", 10).Error },
				"Updates map": func(tx *gorm.DB) error { return tx.Model(&CuFolder{ID: 1}).Updates(map[string]any{"ID": 10}).Error },
				"Where, Updates": func(tx *gorm.DB) error {
					return tx.Model(&CuFolder{}).Where("id = ?", 1).Updates(map[string]any{"id": 10}).Error
				},
				"UpdateColumn": func(tx *gorm.DB) error { return tx.Model(&CuFolder{ID: 1}).UpdateColumn("id", 10).Error },
			} {
				require.ErrorIs(t, write(as(db, david)), offlinelock.ErrLocked, name)
				require.ErrorIs(t, write(db.WithContext(context.Background())), offlinelock.ErrNoOwner, name)
			}
			// A node that never parsed the models follows the action from
			// the catalog (a read model of the table, which declares no
			// relationship).
			db2, _ := fcTwin(t, db, table)
			byTable := func(tx *gorm.DB) error {
				return tx.Model(&cuFolderRow{}).Where("id = ?", 1).Updates(map[string]any{"id": 10}).Error
			}
			require.ErrorIs(t, byTable(as(db2, david)), offlinelock.ErrLocked, "second node")
			require.ErrorIs(t, byTable(db2.WithContext(context.Background())), offlinelock.ErrNoOwner, "second node")
			var page CuPage
			require.NoError(t, admin(db).First(&page, 1).Error)
			require.Equal(t, uint(1), page.CuFolderID, "nothing cascaded")

			require.ErrorIs(t, as(db, david).Table("cu_folders").Where("id = ?", 1).Update("id", 10).Error, offlinelock.ErrUnenforceable, "by table name")
			require.ErrorIs(t, as(db, david).Table("cu_folders").Where("id = ?", 1).Updates(map[string]any{"name": "x", "ID": 10}).Error, offlinelock.ErrUnenforceable, "by table name")
			require.NoError(t, as(db, david).Table("cu_folders").Where("id = ?", 1).Update("name", "by table").Error, "the key unchanged")
			require.NoError(t, db.WithContext(context.Background()).Model(&CuFolder{ID: 1}).Update("name", "renamed").Error, "the key unchanged: no owner needed")
			require.NoError(t, db.WithContext(context.Background()).Model(&CuFolder{ID: 2}).Update("id", 20).Error, "no lockable row reached")

			require.NoError(t, as(db, martin).Model(&CuFolder{ID: 1}).Update("id", 10).Error, "the holder's update")
			require.NoError(t, admin(db).First(&page, 1).Error)
			require.Equal(t, uint(10), page.CuFolderID)
		})
	}
}
