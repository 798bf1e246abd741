package plugin_test

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

type FtOrder struct {
	ID   uint `gorm:"primaryKey" lock:"exclusive_write"`
	Note string
}

type FtTag struct {
	ID   uint `gorm:"primaryKey"`
	Name string
}

type FtLine struct {
	ID        uint `gorm:"primaryKey"`
	FtOrderID uint `lock:"root"`
	FtOrder   *FtOrder
	Qty       int
	Tags      []FtTag `gorm:"many2many:ft_line_tags"`
}

// FtComp has a composite primary key and tags.
type FtComp struct {
	A    uint   `gorm:"primaryKey;autoIncrement:false" lock:"exclusive_write"`
	B    string `gorm:"primaryKey"`
	Name string
	Tags []FtTag `gorm:"many2many:ft_comp_tags"`
}

type ftJoinOp struct {
	name string
	op   func(tx *gorm.DB) error
	want []uint // the record's tags after the holder's run
}

// TestFailClosedManyToManyOfAMember: line 1 belongs to order 2
// (Martin's); David holds order 1. Changing line 1's tags changes order
// 2's aggregate: David is refused, Martin is allowed.
func TestFailClosedManyToManyOfAMember(t *testing.T) {
	ops := []ftJoinOp{
		{"Association(Tags).Clear", func(tx *gorm.DB) error { return tx.Model(&FtLine{ID: 1}).Association("Tags").Clear() }, nil},
		{"Association(Tags).Delete", func(tx *gorm.DB) error {
			return tx.Model(&FtLine{ID: 1}).Association("Tags").Delete(&FtTag{ID: 1})
		}, nil},
		{"Association(Tags).Append", func(tx *gorm.DB) error {
			return tx.Model(&FtLine{ID: 1}).Association("Tags").Append(&FtTag{ID: 2})
		}, []uint{1, 2}},
		{"Association(Tags).Replace", func(tx *gorm.DB) error {
			return tx.Model(&FtLine{ID: 1}).Association("Tags").Replace(&FtTag{ID: 2})
		}, []uint{2}},
		{"Table(ft_line_tags).Create(map)", func(tx *gorm.DB) error {
			return tx.Table("ft_line_tags").Create(map[string]any{"ft_line_id": 1, "ft_tag_id": 2}).Error
		}, []uint{1, 2}},
		{"Table(ft_line_tags).Where.Delete", func(tx *gorm.DB) error {
			return tx.Table("ft_line_tags").Where("ft_line_id = ?", 1).Delete(map[string]any{}).Error
		}, nil},
	}
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p, _ := ftSetup(t, d, []any{&FtOrder{}, &FtLine{}}, "ft_line_tags", &FtTag{})
			tags := func() []uint {
				var ids []uint
				require.NoError(t, admin(db).Table("ft_line_tags").Where("ft_line_id = ?", 1).Order("ft_tag_id").Pluck("ft_tag_id", &ids).Error)
				return ids
			}
			reset := func() {
				fcReset(t, db, p)
				require.NoError(t, admin(db).Exec("DELETE FROM ft_line_tags").Error)
				require.NoError(t, admin(db).Where("1 = 1").Delete(&FtLine{}).Error)
				require.NoError(t, admin(db).Where("1 = 1").Delete(&FtTag{}).Error)
				require.NoError(t, admin(db).Where("1 = 1").Delete(&FtOrder{}).Error)
				require.NoError(t, admin(db).Create(&[]FtOrder{{ID: 1}, {ID: 2}}).Error)
				require.NoError(t, admin(db).Create(&FtTag{ID: 2, Name: "t2"}).Error)
				require.NoError(t, admin(db).Create(&FtLine{ID: 1, FtOrderID: 2, Qty: 1, Tags: []FtTag{{ID: 1, Name: "t1"}}}).Error)
				_, err := p.Acquire(as(db, david), &FtOrder{ID: 1}, offlinelock.Write)
				require.NoError(t, err)
				_, err = p.Acquire(as(db, martin), &FtOrder{ID: 2}, offlinelock.Write)
				require.NoError(t, err)
			}
			for _, o := range ops {
				t.Run(o.name, func(t *testing.T) {
					reset()
					err := fcSafe(t, func() error { return o.op(as(db, david)) })
					fmRefused(t, err, "David changed the tags of line 1 of order 2, held by Martin")
					assert.Equal(t, []uint{1}, tags(), "the refused change altered line 1's tags")
					reset()
					err = fcSafe(t, func() error { return o.op(as(db, martin)) })
					require.NoError(t, err, "Martin holds order 2, the root of line 1")
					assert.ElementsMatch(t, o.want, tags())
				})
			}
		})
	}
}

// TestFailClosedManyToManyOfACompositeKey: comp (1, "x") is Martin's.
func TestFailClosedManyToManyOfACompositeKey(t *testing.T) {
	ops := []ftJoinOp{
		{"Association(Tags).Clear", func(tx *gorm.DB) error {
			return tx.Model(&FtComp{A: 1, B: "x"}).Association("Tags").Clear()
		}, nil},
		{"Association(Tags).Delete", func(tx *gorm.DB) error {
			return tx.Model(&FtComp{A: 1, B: "x"}).Association("Tags").Delete(&FtTag{ID: 1})
		}, nil},
		{"Association(Tags).Append", func(tx *gorm.DB) error {
			return tx.Model(&FtComp{A: 1, B: "x"}).Association("Tags").Append(&FtTag{ID: 2})
		}, []uint{1, 2}},
		{"Table(ft_comp_tags).Create(map)", func(tx *gorm.DB) error {
			return tx.Table("ft_comp_tags").Create(map[string]any{"ft_comp_a": 1, "ft_comp_b": "x", "ft_tag_id": 2}).Error
		}, []uint{1, 2}},
	}
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p, _ := ftSetup(t, d, []any{&FtComp{}}, "ft_comp_tags", &FtTag{})
			if d.name == "mysql" {
				// A string key in the default collation is refused on MySQL
				// (TestFailClosedMySQLKeyCollations): b and its join column
				// become binary and non-padding, as an application declares.
				require.NoError(t, db.Connection(func(c *gorm.DB) error {
					for _, q := range []string{"ALTER TABLE ft_comp_tags DROP FOREIGN KEY fk_ft_comp_tags_ft_comp",
						"ALTER TABLE ft_comps MODIFY b VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL",
						"ALTER TABLE ft_comp_tags MODIFY ft_comp_b VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL",
						"ALTER TABLE ft_comp_tags ADD CONSTRAINT fk_ft_comp_tags_ft_comp FOREIGN KEY (ft_comp_a, ft_comp_b) REFERENCES ft_comps (a, b)"} {
						if err := c.Exec(q).Error; err != nil {
							return err
						}
					}
					return nil
				}))
			}
			tags := func() []uint {
				var ids []uint
				require.NoError(t, admin(db).Table("ft_comp_tags").Where("ft_comp_a = ? AND ft_comp_b = ?", 1, "x").
					Order("ft_tag_id").Pluck("ft_tag_id", &ids).Error)
				return ids
			}
			reset := func() {
				fcReset(t, db, p)
				require.NoError(t, admin(db).Exec("DELETE FROM ft_comp_tags").Error)
				require.NoError(t, admin(db).Where("1 = 1").Delete(&FtComp{}).Error)
				require.NoError(t, admin(db).Where("1 = 1").Delete(&FtTag{}).Error)
				require.NoError(t, admin(db).Create(&FtTag{ID: 2, Name: "t2"}).Error)
				require.NoError(t, admin(db).Create(&FtComp{A: 1, B: "x", Tags: []FtTag{{ID: 1, Name: "t1"}}}).Error)
				_, err := p.Acquire(as(db, martin), &FtComp{A: 1, B: "x"}, offlinelock.Write)
				require.NoError(t, err)
			}
			for _, o := range ops {
				t.Run(o.name, func(t *testing.T) {
					reset()
					err := fcSafe(t, func() error { return o.op(as(db, david)) })
					fmRefused(t, err, "David changed the tags of comp (1, x) held by Martin")
					assert.Equal(t, []uint{1}, tags(), "the refused change altered the tags")
					reset()
					require.NoError(t, fcSafe(t, func() error { return o.op(as(db, martin)) }), "the holder")
					assert.ElementsMatch(t, o.want, tags())
				})
			}
		})
	}
}

// FtArt is lockable; only the untagged FtLabel declares their many2many.
