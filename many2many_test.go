package offlinelock_test

// Relationships are part of the record: a many-to-many association of a
// lockable model changes only under the model's Write lock, whatever the
// call shape.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// FcArticle is lockable and has a many-to-many association.
type FcArticle struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Title string
	Tags  []FcTag `gorm:"many2many:fc_article_tags"`
}

type FcTag struct {
	ID   uint `gorm:"primaryKey"`
	Name string
}

func TestFailClosedManyToManyNeedsTheWriteLock(t *testing.T) {
	ops := []struct {
		name string
		op   func(tx *gorm.DB) error
		want []uint // the article's tags afterwards, when allowed
	}{
		{"Append", func(tx *gorm.DB) error { return tx.Model(&FcArticle{ID: 1}).Association("Tags").Append(&FcTag{ID: 3}) }, []uint{1, 2, 3}},
		{"Append new tag", func(tx *gorm.DB) error {
			return tx.Model(&FcArticle{ID: 1}).Association("Tags").Append(&FcTag{ID: 4, Name: "new"})
		}, []uint{1, 2, 4}},
		{"Replace", func(tx *gorm.DB) error {
			return tx.Model(&FcArticle{ID: 1}).Association("Tags").Replace(&FcTag{ID: 3})
		}, []uint{3}},
		{"Clear", func(tx *gorm.DB) error { return tx.Model(&FcArticle{ID: 1}).Association("Tags").Clear() }, []uint{}},
		{"Delete", func(tx *gorm.DB) error {
			return tx.Model(&FcArticle{ID: 1}).Association("Tags").Delete(&FcTag{ID: 1})
		}, []uint{2}},
		{"FullSaveAssociations Save with tags", func(tx *gorm.DB) error {
			a := FcArticle{ID: 1, Title: "a", Tags: []FcTag{{ID: 1, Name: "t1"}, {ID: 2, Name: "t2"}, {ID: 3, Name: "t3"}}}
			return tx.Session(&gorm.Session{FullSaveAssociations: true}).Save(&a).Error
		}, []uint{1, 2, 3}},
		{"Omit(Tags.*).Save keeps the join rows", func(tx *gorm.DB) error {
			a := FcArticle{ID: 1, Title: "a", Tags: []FcTag{{ID: 3}}}
			return tx.Omit("Tags.*").Save(&a).Error
		}, []uint{1, 2, 3}},
	}
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, db.Migrator().DropTable("fc_article_tags", &FcArticle{}, &FcTag{}))
		require.NoError(t, admin(db).AutoMigrate(&FcArticle{}, &FcTag{}))
		t.Cleanup(func() { db.Migrator().DropTable("fc_article_tags", &FcArticle{}, &FcTag{}) })
		tags := func(article uint) []uint {
			var ids []uint
			require.NoError(t, admin(db).Table("fc_article_tags").Where("fc_article_id = ?", article).
				Order("fc_tag_id").Pluck("fc_tag_id", &ids).Error)
			return ids
		}
		reset := func() {
			fcReset(t, db, p)
			require.NoError(t, admin(db).Exec("DELETE FROM fc_article_tags").Error)
			require.NoError(t, admin(db).Where("1 = 1").Delete(&FcTag{}).Error)
			require.NoError(t, admin(db).Where("1 = 1").Delete(&FcArticle{}).Error)
			require.NoError(t, admin(db).Create(&FcArticle{ID: 1, Title: "a", Tags: []FcTag{{ID: 1, Name: "t1"}, {ID: 2, Name: "t2"}}}).Error)
			require.NoError(t, admin(db).Create(&FcArticle{ID: 2, Title: "b", Tags: []FcTag{{ID: 3, Name: "t3"}}}).Error)
		}
		for _, o := range ops {
			t.Run(o.name, func(t *testing.T) {
				for _, holder := range []*offlinelock.Owner{nil, &martin} {
					reset()
					if holder != nil {
						_, err := p.Acquire(as(db, *holder), &FcArticle{ID: 1}, offlinelock.Write)
						require.NoError(t, err)
					}
					err := fcSafe(t, func() error { return o.op(as(db, david)) })
					if assert.Error(t, err, "David changed article 1's tags (held by %v)", holder) {
						assert.True(t, fcRefused(err), "got %v", err)
					}
					assert.Equal(t, []uint{1, 2}, tags(1), "the refused change altered the join table (held by %v)", holder)
					assert.Equal(t, []uint{3}, tags(2))
				}
				reset()
				_, err := p.Acquire(as(db, martin), &FcArticle{ID: 1}, offlinelock.Write)
				require.NoError(t, err)
				require.NoError(t, fcSafe(t, func() error { return o.op(as(db, martin)) }), "the holder changes the tags")
				assert.Equal(t, o.want, tags(1))
				assert.Equal(t, []uint{3}, tags(2), "another article's tags changed")
			})
		}
	})
}
