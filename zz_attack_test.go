package offlinelock_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

func zzDocTitle(t *testing.T, db *gorm.DB, id uint) string {
	t.Helper()
	var d Doc
	if err := admin(db).First(&d, id).Error; err != nil {
		return "<" + err.Error() + ">"
	}
	return d.Title
}

func TestZZAttackWhereSplice(t *testing.T) {
	cases := []struct {
		name  string
		write func(tx *gorm.DB) error
	}{
		{"Model(1).Where(splice).Update", func(tx *gorm.DB) error {
			return tx.Model(&Doc{ID: 1}).Where("id = 129) OR (0=1").Update("title", "pwn").Error
		}},
		{"Model(1).Where(splice).Updates(map)", func(tx *gorm.DB) error {
			return tx.Model(&Doc{ID: 1}).Where("id = 129) OR (0=1").Updates(map[string]any{"title": "pwn"}).Error
		}},
		{"Where(splice).Delete(&Doc{ID:1})", func(tx *gorm.DB) error {
			return tx.Where("id = 129) OR (0=1").Delete(&Doc{ID: 1}).Error
		}},
		{"Delete(&Doc{ID:1}, splice)", func(tx *gorm.DB) error {
			return tx.Delete(&Doc{ID: 1}, "id = 129) OR (0=1").Error
		}},
		{"Where(splice).Save", func(tx *gorm.DB) error {
			return tx.Where("id = 129) OR (0=1").Save(&Doc{ID: 1, Title: "pwn"}).Error
		}},
	}
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				fcReset(t, db, p)
				require.NoError(t, admin(db).Where("1=1").Delete(&Doc{}).Error)
				require.NoError(t, admin(db).Create(&[]Doc{{ID: 1, Title: "d"}, {ID: 129, Title: "m"}}).Error)
				_, err := p.Acquire(as(db, martin), &Doc{ID: 129}, offlinelock.Write)
				require.NoError(t, err)
				_, err = p.Acquire(as(db, david), &Doc{ID: 1}, offlinelock.Write)
				require.NoError(t, err)
				err = fcSafe(t, func() error { return c.write(as(db, david)) })
				t.Logf("%s: err=%v doc1=%q doc129=%q", c.name, err, zzDocTitle(t, db, 1), zzDocTitle(t, db, 129))
			})
		}
	})
}

func TestZZAttackOrMissingRow(t *testing.T) {
	cases := []struct {
		name  string
		write func(tx *gorm.DB) error
	}{
		{"Model(1).Or(id=129).Update", func(tx *gorm.DB) error {
			return tx.Model(&Doc{ID: 1}).Or("id = ?", 129).Update("title", "pwn").Error
		}},
		{"Or(id=129).Delete(&Doc{ID:1})", func(tx *gorm.DB) error {
			return tx.Or("id = ?", 129).Delete(&Doc{ID: 1}).Error
		}},
		{"Model(1).Or(struct).Updates", func(tx *gorm.DB) error {
			return tx.Model(&Doc{ID: 1}).Or(&Doc{ID: 129}).Updates(Doc{Title: "pwn"}).Error
		}},
	}
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				fcReset(t, db, p)
				require.NoError(t, admin(db).Where("1=1").Delete(&Doc{}).Error)
				require.NoError(t, admin(db).Create(&[]Doc{{ID: 129, Title: "m"}}).Error)
				_, err := p.Acquire(as(db, martin), &Doc{ID: 129}, offlinelock.Write)
				require.NoError(t, err)
				_, err = p.Acquire(as(db, david), &Doc{ID: 1}, offlinelock.Write) // no row 1
				require.NoError(t, err)
				err = fcSafe(t, func() error { return c.write(as(db, david)) })
				t.Logf("%s: err=%v doc1=%q doc129=%q", c.name, err, zzDocTitle(t, db, 1), zzDocTitle(t, db, 129))
			})
		}
	})
}
