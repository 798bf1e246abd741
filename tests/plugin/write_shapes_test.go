package plugin_test

// Write shapes: every way GORM's API offers to change a row of a lockable
// table (key spellings, maps, upserts, DTOs, Table, clause.Set, generics,
// subqueries) needs the session's Write lock and, refused, changes
// nothing; so does a write that reads another row of its own table.

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock"
)

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
				if err != nil && !fcRefused(err) && db.Dialector.Name() == "mysql" {
					t.Skipf("SQL MySQL reads otherwise (|| is OR): %v", err)
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

var fmSelfReferenceWrites = []fmWrite{
	{"Update: Model(key).Update(name, Expr(subquery of own table))", func(tx *gorm.DB) error {
		return tx.Model(&FmAcct{ID: 1}).Update("name", gorm.Expr("(SELECT x.name FROM fm_accts x WHERE x.id = 129)")).Error
	}},
	{"Updates: Where.Updates(map with Expr(subquery of own table))", func(tx *gorm.DB) error {
		return tx.Model(&FmAcct{}).Where("id = ?", 1).
			Updates(map[string]any{"name": gorm.Expr("(SELECT x.name FROM fm_accts x WHERE x.id = 129)")}).Error
	}},
	{"UpdateColumn: Clauses(clause.Set) with subquery of own table", func(tx *gorm.DB) error {
		return tx.Model(&FmAcct{}).Where("id = ?", 1).
			Clauses(clause.Set{{Column: clause.Column{Name: "name"}, Value: gorm.Expr("(SELECT x.name FROM fm_accts x WHERE x.id = 129)")}}).
			Updates(map[string]any{}).Error
	}},
	{"Update: Where subquery of own table (oracle)", func(tx *gorm.DB) error {
		return tx.Model(&FmAcct{ID: 1}).Where("EXISTS (SELECT 1 FROM fm_accts x WHERE x.id = 129 AND x.name = 'secret')").
			Update("name", "secret").Error
	}},
	{"Generics: G[FmAcct].Where.Set(subquery of own table).Update", func(tx *gorm.DB) error {
		_, err := gorm.G[FmAcct](tx).Where("id = ?", 1).
			Set(clause.Assignment{Column: clause.Column{Name: "name"}, Value: gorm.Expr("(SELECT x.name FROM fm_accts x WHERE x.id = 129)")}).
			Update(tx.Statement.Context)
		return err
	}},
	{"Create: INSERT … SELECT-like value from own table", func(tx *gorm.DB) error {
		return tx.Model(&FmAcct{}).Create(map[string]any{"id": 3, "name": gorm.Expr("(SELECT x.name FROM fm_accts x WHERE x.id = 129)"), "credit": 0}).Error
	}},
}

// TestFailClosedMoreWritesThatReadTheOwnTable: David holds account 1 and
// writes it with a value read from account 129, which Martin holds.
func TestFailClosedMoreWritesThatReadTheOwnTable(t *testing.T) {
	eachFm(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		leaked := func() bool {
			var n int64
			require.NoError(t, admin(db).Model(&FmAcct{}).Where("id <> ? AND name = ?", 129, "secret").Count(&n).Error)
			return n > 0
		}
		reset := func() {
			fcReset(t, db, p)
			require.NoError(t, admin(db).Where("id NOT IN ?", []uint{1, 2, 129}).Delete(&FmAcct{}).Error)
			require.NoError(t, admin(db).Save(&FmAcct{ID: 1, Name: "one", Credit: 1}).Error)
		}
		for _, w := range fmSelfReferenceWrites {
			t.Run(w.name, func(t *testing.T) {
				reset()
				require.NoError(t, as(db, martin).First(&FmAcct{}, 129).Error)
				require.NoError(t, as(db, david).First(&FmAcct{}, 1).Error)
				_, err := p.Acquire(as(db, david), &FmAcct{ID: 3}, offlinelock.Write)
				require.NoError(t, err)
				err = fcSafe(t, func() error { return w.write(as(db, david)) })
				assert.False(t, leaked(), "David's row now carries account 129's name")
				fmRefused(t, err, "David's write read account 129 held by Martin")

				reset()
				require.NoError(t, as(db, martin).First(&FmAcct{}, 129).Error)
				require.NoError(t, as(db, martin).First(&FmAcct{}, 1).Error)
				_, err = p.Acquire(as(db, martin), &FmAcct{ID: 3}, offlinelock.Write)
				require.NoError(t, err)
				err = fcSafe(t, func() error { return w.write(as(db, martin)) })
				if err != nil {
					assert.True(t, fcUnenforceable(err), "the holder may only be refused as unenforceable, got %v", err)
				} else {
					assert.True(t, leaked(), "setup: the holder's write copies the name")
				}
			})
		}
	})
}
