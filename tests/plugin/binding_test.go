package plugin_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// TestOnePluginLearnsModelsOnEachDatabase: one Plugin on two databases,
// its model parsed on first use (no Config.Models, the Quick start's way)
// and used on the first database before the second. Each database's
// catalog learns the table, so a node that never parsed the model (here a
// second Plugin with Strict) knows it is lockable on either; and each
// database has its own locks.
func TestOnePluginLearnsModelsOnEachDatabase(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			first := d.open(t)
			var second *gorm.DB
			if d.name == "sqlite" {
				second = openSQLite(t)
			} else {
				second, _ = secondDatabase(t, first)
			}
			table := "ol_bind_" + randomHex(4)
			p := offlinelock.New(offlinelock.Config{Table: table, Logger: slog.New(slog.DiscardHandler)})
			for _, db := range []*gorm.DB{first, second} {
				fcDropCleanup(t, db, &GdCustomer{})
				require.NoError(t, db.AutoMigrate(&GdCustomer{}))
				require.NoError(t, db.Use(p))
				t.Cleanup(func() {
					p.RemoveGuard(db)
					for _, s := range []string{"", "_generation", "_tables", "_notes", "_order"} {
						db.Exec(`DROP TABLE IF EXISTS ` + table + s)
					}
				})
				require.NoError(t, admin(db).Create(&GdCustomer{ID: 129, Name: "Acme"}).Error)
			}
			for _, db := range []*gorm.DB{first, second} {
				_, err := p.Acquire(as(db, martin), &GdCustomer{ID: 129}, offlinelock.Write)
				require.NoError(t, err, "each database has its own locks")
				require.NoError(t, as(db, martin).Model(&GdCustomer{ID: 129}).Update("credit", 7).Error)
				require.ErrorIs(t, as(db, david).Model(&GdCustomer{ID: 129}).Update("credit", 8).Error, offlinelock.ErrLocked)
			}
			for i, db := range []*gorm.DB{first, second} {
				other := offlinelock.New(offlinelock.Config{Table: table, Strict: true, LeaveGuard: true, Logger: slog.New(slog.DiscardHandler)})
				fresh, err := gorm.Open(db.Dialector, &gorm.Config{Logger: db.Logger})
				require.NoError(t, err)
				require.NoError(t, fresh.Use(other))
				err = as(fresh, david).Exec(`UPDATE gd_customers SET credit = 9 WHERE id = 129`).Error
				require.ErrorIs(t, err, offlinelock.ErrStrict, "database %d's catalog names gd_customers", i+1)
			}
		})
	}
}
