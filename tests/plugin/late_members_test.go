package plugin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
)

// LmShop is a root; LmShelf its member, created after db.Use with no
// Config.Models (the Quick start's way).
type LmShop struct {
	ID      uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name    string
	Shelves []LmShelf
}

type LmShelf struct {
	ID       uint `gorm:"primaryKey"`
	LmShopID uint `lock:"root"`
	Label    string
}

// TestGuardCoversMembersCreatedAfterUse: tables created after db.Use,
// with no Config.Models, by AutoMigrate or by SQL of their own, carry the
// guard once the plugin has seen their models (a lock, a load, a write):
// before the root's first lock is granted, another client's write of the
// member of a held root is refused by the database.
func TestGuardCoversMembersCreatedAfterUse(t *testing.T) {
	for _, d := range serverDatabases() {
		for _, how := range []string{"automigrate", "sql"} {
			t.Run(d.name+"/"+how, func(t *testing.T) {
				db, p := setup(t, d, offlinelock.Config{})
				fcDropCleanup(t, db, &LmShelf{}, &LmShop{})
				if how == "automigrate" {
					require.NoError(t, db.AutoMigrate(&LmShop{}, &LmShelf{}))
				} else {
					require.NoError(t, plainGORM(t, db).AutoMigrate(&LmShop{}, &LmShelf{}))
				}
				require.NoError(t, admin(db).Create(&LmShop{ID: 1, Name: "held", Shelves: []LmShelf{{ID: 1, Label: "a"}}}).Error)
				_, err := p.Acquire(as(db, martin), &LmShop{ID: 1}, offlinelock.Write)
				require.NoError(t, err)
				require.NoError(t, as(db, martin).Model(&LmShelf{ID: 1}).Update("label", "b").Error, "the holder writes its member")
				err = plainGORM(t, db).Exec(`UPDATE lm_shelves SET label = 'x' WHERE id = 1`).Error
				require.True(t, refusedByGuard(err, "lm_shops", "1"), "want the guard's refusal, got %v", err)
			})
		}
	}
}
