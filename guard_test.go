package offlinelock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// GdCustomer is guarded by the database: exclusive_write.
type GdCustomer struct {
	ID     uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name   string
	Credit int
}

// plainGORM opens the same database without the plugin: another service.
func plainGORM(t *testing.T, db *gorm.DB) *gorm.DB {
	t.Helper()
	other, err := gorm.Open(dialectorOf(db.Dialector.Name(), dsnOf(db.Dialector.Name())), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB, _ := other.DB()
	t.Cleanup(func() { sqlDB.Close() })
	return other
}

func guardedDBs(t *testing.T, cfg offlinelock.Config, fn func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin)) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setup(t, d, cfg)
			fn(t, db, p)
		})
	}
}

func TestGuardSmoke(t *testing.T) {
	guardedDBs(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcDropCleanup(t, db, &GdCustomer{})
		require.NoError(t, db.AutoMigrate(&GdCustomer{}))
		c := GdCustomer{ID: 129, Name: "Acme", Credit: 100}
		require.NoError(t, as(db, martin).Create(&c).Error)
		_, err := p.Acquire(as(db, martin), &GdCustomer{ID: 129}, offlinelock.Write)
		require.NoError(t, err)
		other := plainGORM(t, db)
		err = other.Model(&GdCustomer{ID: 129}).Update("credit", 1).Error
		require.Error(t, err)
		t.Log(err)
		err = as(db, david).WithContext(offlinelock.Bypass(offlinelock.WithOwner(context.Background(), david), "job")).Model(&GdCustomer{ID: 129}).Update("credit", 2).Error
		var le *offlinelock.LockedError
		require.True(t, errors.As(err, &le), "%v", err)
		t.Log(le)
		c.Credit = 110
		require.NoError(t, as(db, martin).Save(&c).Error)
		var got GdCustomer
		require.NoError(t, other.First(&got, 129).Error)
		require.Equal(t, 110, got.Credit)
		require.NoError(t, other.Create(&GdCustomer{ID: 130, Name: "free"}).Error)
		require.NoError(t, other.Model(&GdCustomer{ID: 130}).Update("credit", 5).Error)
	})
}
