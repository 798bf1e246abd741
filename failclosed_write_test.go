package offlinelock_test

// Fail closed, writes: a write of any shape needs the session's Write lock
// on every row it changes, and a refused write has no effect at all: no
// row written, no model hook run.

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock"
)

// FcDocView is a DTO over the lockable table docs (exclusive_write).
type FcDocView struct {
	ID    uint `gorm:"primaryKey"`
	Title string
	Body  string
}

func (FcDocView) TableName() string { return "docs" }

// FcDocPatch is a patch struct without the key.
type FcDocPatch struct {
	Title string
}

// fcWrite is one call shape of a write that changes doc 129's title to
// "changed" (or deletes it, when deletes is set).
type fcWrite struct {
	name    string
	only    string // "sqlite" or "postgres"
	deletes bool
	// mayRefuse: the shape is exotic enough that refusing it as
	// unenforceable is acceptable for the holder too.
	mayRefuse bool
	write     func(tx *gorm.DB) error
}

var fcWrites = []fcWrite{
	// The plain shapes, for reference.
	{name: "Save(model)", write: func(tx *gorm.DB) error { return tx.Save(&Doc{ID: 129, Title: "changed"}).Error }},
	{name: "Model(key).Update", write: func(tx *gorm.DB) error {
		return tx.Model(&Doc{ID: 129}).Update("title", "changed").Error
	}},
	// Key spellings.
	{name: `Where("id = ?", "0129").Update`, write: func(tx *gorm.DB) error {
		return tx.Model(&Doc{}).Where("id = ?", "0129").Update("title", "changed").Error
	}},
	{name: `Where("id IN ?", []string{"0129"}).Updates(map)`, write: func(tx *gorm.DB) error {
		return tx.Model(&Doc{}).Where("id IN ?", []string{"0129"}).Updates(map[string]any{"title": "changed"}).Error
	}},
	{name: `Where(map{"id": "0129"}).Updates(map)`, write: func(tx *gorm.DB) error {
		return tx.Model(&Doc{}).Where(map[string]any{"id": "0129"}).Updates(map[string]any{"title": "changed"}).Error
	}},
	{name: `Delete(&Doc{}, "0129")`, deletes: true, write: func(tx *gorm.DB) error { return tx.Delete(&Doc{}, "0129").Error }},
	{name: `Where("id = ?", int64(129)).Delete`, deletes: true, write: func(tx *gorm.DB) error {
		return tx.Where("id = ?", int64(129)).Delete(&Doc{}).Error
	}},
	// Creates of slices of maps, upserts.
	{name: "Model.OnConflict(UpdateAll).Create([]map id 129)", write: func(tx *gorm.DB) error {
		return tx.Model(&Doc{}).Clauses(clause.OnConflict{UpdateAll: true}).
			Create(&[]map[string]any{{"id": 129, "title": "changed", "body": ""}}).Error
	}},
	{name: `Model.OnConflict(UpdateAll).Create([]map id "0129")`, write: func(tx *gorm.DB) error {
		return tx.Model(&Doc{}).Clauses(clause.OnConflict{UpdateAll: true}).
			Create(&[]map[string]any{{"id": "0129", "title": "changed", "body": ""}}).Error
	}},
	{name: "Model.OnConflict(UpdateAll).Create(map id 129)", write: func(tx *gorm.DB) error {
		return tx.Model(&Doc{}).Clauses(clause.OnConflict{UpdateAll: true}).
			Create(map[string]any{"id": 129, "title": "changed", "body": ""}).Error
	}},
	{name: "Model.OnConflict(id, DoUpdates title).Create([]map)", write: func(tx *gorm.DB) error {
		return tx.Model(&Doc{}).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoUpdates: clause.AssignmentColumns([]string{"title"})}).
			Create(&[]map[string]any{{"id": int64(129), "title": "changed", "body": ""}}).Error
	}},
	{name: "Table(docs).OnConflict(id, DoUpdates title).Create([]map)", write: func(tx *gorm.DB) error {
		return tx.Table("docs").Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoUpdates: clause.AssignmentColumns([]string{"title"})}).
			Create(&[]map[string]any{{"id": "0129", "title": "changed", "body": ""}}).Error
	}},
	{name: "OnConflict(UpdateAll).Create(DTO)", write: func(tx *gorm.DB) error {
		return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&FcDocView{ID: 129, Title: "changed"}).Error
	}},
	{name: "OnConflict(UpdateAll).Create([]model)", write: func(tx *gorm.DB) error {
		return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&[]Doc{{ID: 129, Title: "changed"}}).Error
	}},
	// DTO types and Table.
	{name: "Model(DTO key).Updates(DTO)", write: func(tx *gorm.DB) error {
		return tx.Model(&FcDocView{ID: 129}).Updates(FcDocView{Title: "changed"}).Error
	}},
	{name: "Model(DTO).Where.Update", write: func(tx *gorm.DB) error {
		return tx.Model(&FcDocView{}).Where("id = ?", 129).Update("title", "changed").Error
	}},
	{name: "Table(docs).Where.Updates(patch struct)", write: func(tx *gorm.DB) error {
		return tx.Table("docs").Where("id = ?", 129).Updates(FcDocPatch{Title: "changed"}).Error
	}},
	{name: "Table(docs).Where.Updates(map)", write: func(tx *gorm.DB) error {
		return tx.Table("docs").Where("id = ?", "0129").Updates(map[string]any{"title": "changed"}).Error
	}},
	{name: "Table(docs).Where.UpdateColumn", write: func(tx *gorm.DB) error {
		return tx.Table("docs").Where("id = ?", "0129").UpdateColumn("title", "changed").Error
	}},
	{name: "Model(DTO key).UpdateColumns(map)", write: func(tx *gorm.DB) error {
		return tx.Model(&FcDocView{ID: 129}).UpdateColumns(map[string]any{"title": "changed"}).Error
	}},
	{name: "Model(key).UpdateColumns(struct)", write: func(tx *gorm.DB) error {
		return tx.Model(&Doc{ID: 129}).UpdateColumns(Doc{Title: "changed"}).Error
	}},
	{name: "Table(docs AS d).Where.Updates(map)", mayRefuse: true, write: func(tx *gorm.DB) error {
		return tx.Table("docs AS d").Where("d.id = ?", 129).Updates(map[string]any{"title": "changed"}).Error
	}},
	{name: "Table(docs AS d).Where.Update", mayRefuse: true, write: func(tx *gorm.DB) error {
		return tx.Table("docs AS d").Where("d.id = ?", 129).Update("title", "changed").Error
	}},
	{name: "Table(DOCS).Where.Update", only: "sqlite", mayRefuse: true, write: func(tx *gorm.DB) error {
		return tx.Table("DOCS").Where("id = ?", 129).Update("title", "changed").Error
	}},
	{name: "Table(main.docs).Where.Update", only: "sqlite", mayRefuse: true, write: func(tx *gorm.DB) error {
		return tx.Table("main.docs").Where("id = ?", 129).Update("title", "changed").Error
	}},
	{name: "Table(public.docs).Where.Update", only: "postgres", mayRefuse: true, write: func(tx *gorm.DB) error {
		return tx.Table("public.docs").Where("id = ?", 129).Update("title", "changed").Error
	}},
	{name: "Table(docs).Where.Delete(DTO)", deletes: true, write: func(tx *gorm.DB) error {
		return tx.Table("docs").Where("id = ?", 129).Delete(&FcDocView{}).Error
	}},
	{name: "Delete(DTO key)", deletes: true, write: func(tx *gorm.DB) error { return tx.Delete(&FcDocView{ID: 129}).Error }},
	{name: "Where.Delete(DTO)", deletes: true, write: func(tx *gorm.DB) error {
		return tx.Where("id = ?", "0129").Delete(&FcDocView{}).Error
	}},
	{name: "Save(DTO)", write: func(tx *gorm.DB) error { return tx.Save(&FcDocView{ID: 129, Title: "changed"}).Error }},
	{name: "Save([]DTO)", write: func(tx *gorm.DB) error { return tx.Save(&[]FcDocView{{ID: 129, Title: "changed"}}).Error }},
	// clause.Set and generics.
	{name: "Model.Where.Clauses(clause.Set).Updates(empty map)", write: func(tx *gorm.DB) error {
		return tx.Model(&Doc{}).Where("id = ?", 129).Clauses(clause.Set{{Column: clause.Column{Name: "title"}, Value: "changed"}}).
			Updates(map[string]any{}).Error
	}},
	{name: "gorm.G[Doc].Where.Update", write: func(tx *gorm.DB) error {
		_, err := gorm.G[Doc](tx).Where("id = ?", 129).Update(tx.Statement.Context, "title", "changed")
		return err
	}},
	{name: "gorm.G[Doc].Where.Updates", write: func(tx *gorm.DB) error {
		_, err := gorm.G[Doc](tx).Where("id = ?", "0129").Updates(tx.Statement.Context, Doc{Title: "changed"})
		return err
	}},
	{name: "gorm.G[Doc].Where.Set(Assignment).Update", write: func(tx *gorm.DB) error {
		_, err := gorm.G[Doc](tx).Where("id = ?", 129).
			Set(clause.Assignment{Column: clause.Column{Name: "title"}, Value: "changed"}).Update(tx.Statement.Context)
		return err
	}},
	{name: "gorm.G[DTO].Where.Update", write: func(tx *gorm.DB) error {
		_, err := gorm.G[FcDocView](tx).Where("id = ?", 129).Update(tx.Statement.Context, "title", "changed")
		return err
	}},
	{name: "gorm.G[Doc].Where.Delete", deletes: true, write: func(tx *gorm.DB) error {
		_, err := gorm.G[Doc](tx).Where("id = ?", 129).Delete(tx.Statement.Context)
		return err
	}},
	{name: "Model.Where(subquery).Update", write: func(tx *gorm.DB) error {
		sub := tx.Session(&gorm.Session{NewDB: true}).Table("docs").Select("id").Where("body = ?", "secret")
		return tx.Model(&Doc{}).Where("id IN (?)", sub).Update("title", "changed").Error
	}},
	{name: "Model.Where(expr).Update(Expr)", write: func(tx *gorm.DB) error {
		return tx.Model(&Doc{}).Where("id + 0 = ?", 129).Update("title", gorm.Expr("? || ''", "changed")).Error
	}},
}

// fcDoc reads doc 129 under admin; found is false when it is gone.
func fcDoc(t *testing.T, db *gorm.DB) (Doc, bool) {
	t.Helper()
	var d []Doc
	require.NoError(t, admin(db).Where("id = ?", 129).Find(&d).Error)
	if len(d) == 0 {
		return Doc{}, false
	}
	return d[0], true
}

func fcResetDoc(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
	t.Helper()
	fcReset(t, db, p)
	fcResetDocRow(t, db)
}

// fcResetDocRow puts doc 129 back as it was, so that one leak does not hide
// the next check.
func fcResetDocRow(t *testing.T, db *gorm.DB) {
	t.Helper()
	require.NoError(t, admin(db).Save(&Doc{ID: 129, Title: "draft", Body: "secret"}).Error)
}

func fcAssertDocUnchanged(t *testing.T, db *gorm.DB) {
	t.Helper()
	d, ok := fcDoc(t, db)
	if assert.True(t, ok, "the refused write deleted doc 129") {
		assert.Equal(t, Doc{ID: 129, Title: "draft", Body: "secret"}, d, "the refused write changed doc 129")
	}
}

func TestFailClosedWritesOfEveryShape(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "other", Body: "x"}).Error)
		for _, w := range fcWrites {
			if w.only != "" && w.only != db.Dialector.Name() {
				continue
			}
			t.Run(w.name, func(t *testing.T) {
				// Nobody holds doc 129: David's write lacks his Write lock.
				fcResetDoc(t, db, p)
				err := fcSafe(t, func() error { return w.write(as(db, david)) })
				if assert.Error(t, err, "David wrote doc 129 without a lock") {
					assert.True(t, fcRefused(err), "got %v", err)
				}
				fcAssertDocUnchanged(t, db)

				// Martin holds it: David's write is refused as locked.
				fcResetDoc(t, db, p)
				_, err = p.Acquire(as(db, martin), &Doc{ID: 129}, offlinelock.Write)
				require.NoError(t, err)
				err = fcSafe(t, func() error { return w.write(as(db, david)) })
				if assert.Error(t, err, "David wrote doc 129 held by Martin") {
					assert.True(t, fcRefused(err), "got %v", err)
				}
				fcAssertDocUnchanged(t, db)
				assert.Empty(t, fcLocksOf(t, db, p, david))
				fcResetDocRow(t, db)

				// Without an owner: refused.
				err = fcSafe(t, func() error { return w.write(db.WithContext(context.Background())) })
				if assert.Error(t, err, "a write without owner went through") {
					assert.True(t, fcRefused(err), "got %v", err)
				}
				fcAssertDocUnchanged(t, db)
				fcResetDocRow(t, db)

				// The holder: the write lands.
				err = fcSafe(t, func() error { return w.write(as(db, martin)) })
				if err != nil && w.mayRefuse && fcUnenforceable(err) {
					fcAssertDocUnchanged(t, db)
					return
				}
				require.NoError(t, err, "the holder's write was refused")
				d, ok := fcDoc(t, db)
				if w.deletes {
					assert.False(t, ok, "the holder's delete did not delete")
				} else {
					assert.Equal(t, "changed", d.Title, "the holder's write did not land")
				}
				other := Doc{}
				require.NoError(t, admin(db).First(&other, 1).Error)
				assert.Equal(t, "other", other.Title, "the write changed another row")
			})
		}
	})
}

// TestFailClosedCreateOfAKeyLockedAhead: a key locked ahead of its creation
// cannot be created by another session, whatever the spelling or shape.
func TestFailClosedCreateOfAKeyLockedAhead(t *testing.T) {
	creates := []struct {
		name   string
		create func(tx *gorm.DB) error
	}{
		{"Create(model)", func(tx *gorm.DB) error { return tx.Create(&Doc{ID: 500, Title: "mine"}).Error }},
		{"Create([]map id 500)", func(tx *gorm.DB) error {
			return tx.Model(&Doc{}).Create(&[]map[string]any{{"id": 500, "title": "mine", "body": ""}}).Error
		}},
		{`Create([]map id "0500")`, func(tx *gorm.DB) error {
			return tx.Model(&Doc{}).Create(&[]map[string]any{{"id": "0500", "title": "mine", "body": ""}}).Error
		}},
		{"Create(map id int64)", func(tx *gorm.DB) error {
			return tx.Model(&Doc{}).Create(map[string]any{"id": int64(500), "title": "mine", "body": ""}).Error
		}},
		{"Table(docs).Create(map)", func(tx *gorm.DB) error {
			return tx.Table("docs").Create(map[string]any{"id": 500, "title": "mine", "body": ""}).Error
		}},
		{"Create(DTO)", func(tx *gorm.DB) error { return tx.Create(&FcDocView{ID: 500, Title: "mine"}).Error }},
		{"CreateInBatches([]DTO)", func(tx *gorm.DB) error {
			return tx.CreateInBatches(&[]FcDocView{{ID: 500, Title: "mine"}}, 10).Error
		}},
		{"gorm.G[DTO].Create", func(tx *gorm.DB) error {
			return gorm.G[FcDocView](tx).Create(tx.Statement.Context, &FcDocView{ID: 500, Title: "mine"})
		}},
	}
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for _, c := range creates {
			t.Run(c.name, func(t *testing.T) {
				fcReset(t, db, p)
				require.NoError(t, admin(db).Delete(&Doc{}, 500).Error)
				_, err := p.Acquire(as(db, martin), &Doc{ID: 500}, offlinelock.Write)
				require.NoError(t, err)
				err = fcSafe(t, func() error { return c.create(as(db, david)) })
				if assert.Error(t, err, "David created doc 500 locked ahead by Martin") {
					assert.True(t, fcRefused(err), "got %v", err)
				}
				var n int64
				require.NoError(t, admin(db).Model(&Doc{}).Where("id = ?", 500).Count(&n).Error)
				assert.Zero(t, n, "doc 500 was created")
				require.NoError(t, fcSafe(t, func() error { return c.create(as(db, martin)) }), "the holder creates it")
				require.NoError(t, admin(db).Model(&Doc{}).Where("id = ?", 500).Count(&n).Error)
				assert.EqualValues(t, 1, n)
			})
		}
	})
}

// FcHooked counts its hooks in a counter carried by the statement's
// context, so each test has its own.
type FcHooked struct {
	ID   uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name string
}

type fcHooksKey struct{}

type fcHookCounter struct{ n atomic.Int64 }

func fcCount(tx *gorm.DB) error {
	if c, ok := tx.Statement.Context.Value(fcHooksKey{}).(*fcHookCounter); ok {
		c.n.Add(1)
	}
	return nil
}

func (h *FcHooked) BeforeSave(tx *gorm.DB) error   { return fcCount(tx) }
func (h *FcHooked) AfterSave(tx *gorm.DB) error    { return fcCount(tx) }
func (h *FcHooked) BeforeCreate(tx *gorm.DB) error { return fcCount(tx) }
func (h *FcHooked) AfterCreate(tx *gorm.DB) error  { return fcCount(tx) }
func (h *FcHooked) BeforeUpdate(tx *gorm.DB) error { return fcCount(tx) }
func (h *FcHooked) AfterUpdate(tx *gorm.DB) error  { return fcCount(tx) }
func (h *FcHooked) BeforeDelete(tx *gorm.DB) error { return fcCount(tx) }
func (h *FcHooked) AfterDelete(tx *gorm.DB) error  { return fcCount(tx) }

// Class 8: a refused write runs no hook and writes nothing.
func TestFailClosedRefusedWritesRunNoHooks(t *testing.T) {
	writes := []struct {
		name       string
		onlyLocked bool // a new row: refused only when another session locked its key ahead
		write      func(tx *gorm.DB, loaded *FcHooked) error
	}{
		{"Save(loaded record)", false, func(tx *gorm.DB, h *FcHooked) error { h.Name = "changed"; return tx.Save(h).Error }},
		{"Model(loaded).Update", false, func(tx *gorm.DB, h *FcHooked) error { return tx.Model(h).Update("name", "changed").Error }},
		{"Model(loaded).Updates(struct)", false, func(tx *gorm.DB, h *FcHooked) error {
			return tx.Model(h).Updates(FcHooked{Name: "changed"}).Error
		}},
		{"Model(loaded).Updates(map)", false, func(tx *gorm.DB, h *FcHooked) error {
			return tx.Model(h).Updates(map[string]any{"name": "changed"}).Error
		}},
		{"Model(loaded).Select(*).Updates", false, func(tx *gorm.DB, h *FcHooked) error {
			return tx.Model(h).Select("*").Updates(FcHooked{ID: h.ID, Name: "changed"}).Error
		}},
		{"Model(empty).Where.Update", false, func(tx *gorm.DB, h *FcHooked) error {
			return tx.Model(&FcHooked{}).Where("id = ?", h.ID).Update("name", "changed").Error
		}},
		{"Delete(loaded)", false, func(tx *gorm.DB, h *FcHooked) error { return tx.Delete(h).Error }},
		{"Where.Delete", false, func(tx *gorm.DB, h *FcHooked) error { return tx.Where("id = ?", h.ID).Delete(&FcHooked{}).Error }},
		{"OnConflict(UpdateAll).Create", false, func(tx *gorm.DB, h *FcHooked) error {
			return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&FcHooked{ID: h.ID, Name: "changed"}).Error
		}},
		{"Save(slice)", false, func(tx *gorm.DB, h *FcHooked) error {
			return tx.Save(&[]FcHooked{{ID: h.ID, Name: "changed"}}).Error
		}},
		{"Save(new record with a key locked ahead)", true, func(tx *gorm.DB, _ *FcHooked) error {
			return tx.Save(&FcHooked{ID: 2, Name: "changed"}).Error
		}},
		{"Create(new record with a key locked ahead)", true, func(tx *gorm.DB, _ *FcHooked) error {
			return tx.Create(&FcHooked{ID: 2, Name: "changed"}).Error
		}},
	}
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcDropCleanup(t, db, &FcHooked{})
		require.NoError(t, admin(db).AutoMigrate(&FcHooked{}))
		counted := func(o offlinelock.Owner) (*gorm.DB, *fcHookCounter) {
			c := &fcHookCounter{}
			return db.WithContext(context.WithValue(offlinelock.WithOwner(context.Background(), o), fcHooksKey{}, c)), c
		}
		state := func() []FcHooked {
			var all []FcHooked
			require.NoError(t, admin(db).Order("id").Find(&all).Error)
			return all
		}
		for _, w := range writes {
			t.Run(w.name, func(t *testing.T) {
				fcReset(t, db, p)
				require.NoError(t, admin(db).Where("1 = 1").Delete(&FcHooked{}).Error)
				require.NoError(t, admin(db).Create(&FcHooked{ID: 1, Name: "orig"}).Error)
				before := state()
				for _, lockedBy := range []*offlinelock.Owner{nil, &martin} {
					if lockedBy == nil && w.onlyLocked {
						continue
					}
					fcReset(t, db, p)
					if lockedBy != nil {
						for _, id := range []uint{1, 2} {
							_, err := p.Acquire(as(db, *lockedBy), &FcHooked{ID: id}, offlinelock.Write)
							require.NoError(t, err)
						}
					}
					require.NoError(t, admin(db).Where("1 = 1").Delete(&FcHooked{}).Error)
					require.NoError(t, admin(db).Create(&FcHooked{ID: 1, Name: "orig"}).Error)
					var loaded FcHooked
					require.NoError(t, as(db, david).First(&loaded, 1).Error)
					tx, c := counted(david)
					err := fcSafe(t, func() error { return w.write(tx, &loaded) })
					if assert.Error(t, err, "David's write went through (locked by %v)", lockedBy) {
						assert.True(t, fcRefused(err), "got %v", err)
					}
					assert.Zero(t, c.n.Load(), "hooks ran for a refused write (locked by %v)", lockedBy)
					assert.Equal(t, before, state(), "the refused write changed rows")
				}
				// The holder: hooks run and the row changes.
				require.NoError(t, admin(db).Where("1 = 1").Delete(&FcHooked{}).Error)
				require.NoError(t, admin(db).Create(&FcHooked{ID: 1, Name: "orig"}).Error)
				var loaded FcHooked
				require.NoError(t, as(db, martin).First(&loaded, 1).Error)
				tx, c := counted(martin)
				require.NoError(t, fcSafe(t, func() error { return w.write(tx, &loaded) }))
				assert.NotZero(t, c.n.Load(), "setup: the hooks are counted")
				assert.NotEqual(t, before, state(), "the holder's write changed something")
			})
		}
	})
}
