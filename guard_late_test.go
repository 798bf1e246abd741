package offlinelock_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
)

// QsOrder and QsLine are an aggregate made the Quick start's way: tables
// created after db.Use, no Config.Models.
type QsOrder struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Note  string
	Lines []QsLine
}

type QsLine struct {
	ID        uint `gorm:"primaryKey"`
	QsOrderID uint `lock:"root"`
	Qty       int
}

// TestGuardCoversMembersLearnedLate: a member table created after db.Use
// without Config.Models is guarded before its root's first lock is
// granted.
func TestGuardCoversMembersLearnedLate(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setup(t, d, offlinelock.Config{})
			fcDropCleanup(t, db, &QsLine{}, &QsOrder{})
			require.NoError(t, db.AutoMigrate(&QsOrder{}, &QsLine{}))
			require.NoError(t, admin(db).Create(&[]QsOrder{{ID: 1, Note: "held"}, {ID: 2, Note: "free"}}).Error)
			require.NoError(t, admin(db).Create(&[]QsLine{{ID: 1, QsOrderID: 1, Qty: 1}, {ID: 2, QsOrderID: 2, Qty: 2}}).Error)
			_, err := p.Acquire(as(db, martin), &QsOrder{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			plain := plainGORM(t, db)
			err = plain.Exec(`UPDATE qs_lines SET qty = 0 WHERE id = 1`).Error
			require.True(t, refusedByGuard(err, "qs_orders", "1"), "a member of a held root: %v", err)
			require.NoError(t, plain.Exec(`UPDATE qs_lines SET qty = 0 WHERE id = 2`).Error, "a member of a free root")
		})
	}
}
