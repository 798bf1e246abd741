package plugin_test

// Writes need the session's Write lock on every row they change, checked
// inside the write's transaction before any hook or SQL of the write runs,
// and fenced at commit: a save whose lock was taken over meanwhile fails.
// A refused write has no effect at all: no row written, no model hook run.
// Creating a new row needs no lock, unless another session locked its key
// ahead. Upserts, key changes, cascades and association saves are writes
// of every row they reach. The many shapes of a write GORM's API offers
// are in write_shapes_test.go.

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

func TestExclusiveWriteLoadsAreFreeAndWritesNeedTheLock(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "draft"}).Error)
		var d Doc
		require.NoError(t, as(db, martin).First(&d, 1).Error)
		require.NoError(t, as(db, david).First(&d, 1).Error)
		all, err := p.List(db, offlinelock.Filter{})
		require.NoError(t, err)
		assert.Empty(t, all, "loads take no lock")

		d.Title = "final"
		require.ErrorIs(t, as(db, martin).Save(&d).Error, offlinelock.ErrNotLocked)
		_, err = p.Acquire(as(db, martin), &d, offlinelock.Write)
		require.NoError(t, err)
		require.NoError(t, as(db, martin).Save(&d).Error)
		require.ErrorIs(t, as(db, david).Model(&d).Update("title", "mine").Error, offlinelock.ErrLocked)
		var got Doc
		require.NoError(t, db.First(&got, 1).Error)
		assert.Equal(t, "final", got.Title)
	})
}

// TestEveryWritePathNeedsTheWriteLock runs each GORM write path on a record
// nobody has locked (ErrNotLocked), one David has locked (*LockedError),
// and one Martin has locked (allowed); a refused write changes nothing.
func TestEveryWritePathNeedsTheWriteLock(t *testing.T) {
	paths := []struct {
		name  string
		write func(db *gorm.DB, id uint) error
	}{
		{"Save", func(db *gorm.DB, id uint) error { return db.Save(&Doc{ID: id, Title: "saved"}).Error }},
		{"Update", func(db *gorm.DB, id uint) error { return db.Model(&Doc{ID: id}).Update("title", "updated").Error }},
		{"Updates", func(db *gorm.DB, id uint) error {
			return db.Model(&Doc{ID: id}).Updates(map[string]any{"title": "updates"}).Error
		}},
		{"UpdateColumn", func(db *gorm.DB, id uint) error { return db.Model(&Doc{ID: id}).UpdateColumn("title", "col").Error }},
		{"UpdateColumns", func(db *gorm.DB, id uint) error {
			return db.Model(&Doc{ID: id}).UpdateColumns(Doc{Title: "cols"}).Error
		}},
		{"Where.Update", func(db *gorm.DB, id uint) error {
			return db.Model(&Doc{}).Where("id = ?", id).Update("title", "where").Error
		}},
		{"Delete", func(db *gorm.DB, id uint) error { return db.Delete(&Doc{ID: id}).Error }},
		{"Delete by id", func(db *gorm.DB, id uint) error { return db.Delete(&Doc{}, id).Error }},
		{"Where.Delete", func(db *gorm.DB, id uint) error {
			return db.Where("title = ?", "draft").Where("id = ?", id).Delete(&Doc{}).Error
		}},
		{"Save slice (upsert)", func(db *gorm.DB, id uint) error { return db.Save(&[]Doc{{ID: id, Title: "upsert"}}).Error }},
		{"Table.Updates", func(db *gorm.DB, id uint) error {
			return db.Table("docs").Where("id = ?", id).Updates(map[string]any{"title": "table"}).Error
		}},
	}
	eachDBWithModels(t, offlinelock.Config{Models: []any{&Doc{}}}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for i, path := range paths {
			id := uint(i + 1)
			require.NoError(t, admin(db).Create(&Doc{ID: id, Title: "draft"}).Error)
			unchanged := func() {
				var got Doc
				require.NoError(t, db.First(&got, id).Error, path.name)
				assert.Equal(t, "draft", got.Title, "%s: a refused write changes nothing", path.name)
			}
			require.ErrorIs(t, path.write(as(db, martin), id), offlinelock.ErrNotLocked, path.name)
			unchanged()
			_, err := p.Acquire(as(db, david), &Doc{ID: id}, offlinelock.Write)
			require.NoError(t, err)
			err = path.write(as(db, martin), id)
			require.ErrorIs(t, err, offlinelock.ErrLocked, path.name)
			unchanged()
			require.ErrorIs(t, path.write(db, id), offlinelock.ErrNoOwner, path.name)
			unchanged()
			require.NoError(t, p.Release(as(db, david), &Doc{ID: id}))
			_, err = p.Acquire(as(db, martin), &Doc{ID: id}, offlinelock.Write)
			require.NoError(t, err)
			require.NoError(t, path.write(as(db, martin), id), path.name)
		}
	})
}

func TestBulkWritesCheckEveryRowAndGlobalWritesAreRefused(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for i := uint(1); i <= 5; i++ {
			require.NoError(t, admin(db).Create(&Doc{ID: i, Title: "draft"}).Error)
		}
		for i := uint(1); i <= 4; i++ {
			_, err := p.Acquire(as(db, martin), &Doc{ID: i}, offlinelock.Write)
			require.NoError(t, err)
		}
		err := as(db, martin).Model(&Doc{}).Where("title = ?", "draft").Update("body", "x").Error
		require.ErrorIs(t, err, offlinelock.ErrNotLocked, "row 5 is not locked")
		var n int64
		require.NoError(t, db.Model(&Doc{}).Where("body = ?", "x").Count(&n).Error)
		assert.Zero(t, n)

		res := as(db, martin).Model(&Doc{}).Where("id <= ?", 4).Update("body", "x")
		require.NoError(t, res.Error)
		assert.EqualValues(t, 4, res.RowsAffected)

		global := as(db, martin).Session(&gorm.Session{AllowGlobalUpdate: true})
		require.ErrorIs(t, global.Model(&Doc{}).Update("body", "y").Error, offlinelock.ErrInvalid)
		require.ErrorIs(t, global.Delete(&Doc{}).Error, offlinelock.ErrInvalid)
		require.NoError(t, db.Model(&Doc{}).Where("body = ?", "y").Count(&n).Error)
		assert.Zero(t, n)
	})
}

func TestAWriteByKeyCannotReachOtherRows(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for i := uint(1); i <= 3; i++ {
			require.NoError(t, admin(db).Create(&Doc{ID: i, Title: "draft"}).Error)
		}
		_, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		_, err = p.Acquire(as(db, david), &Doc{ID: 2}, offlinelock.Write)
		require.NoError(t, err)
		err = as(db, martin).Model(&Doc{ID: 1}).Where("title = ?", "draft").Or("id = ?", 2).Update("title", "mine").Error
		require.Error(t, err)
		var docs []Doc
		require.NoError(t, db.Order("id").Find(&docs).Error)
		for _, d := range docs {
			assert.Equal(t, "draft", d.Title, "doc %d", d.ID)
		}
	})
}

// TestLostUpdatePrevented is the lost update of the walk-through, played
// through the callbacks alone.
func TestLostUpdatePrevented(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&Doc{ID: 129, Title: "Acme Ltd", Body: "credit 5000"}).Error)
		var m, d Doc
		require.NoError(t, as(db, martin).First(&m, 129).Error)
		_, err := p.Acquire(as(db, martin), &m, offlinelock.Write)
		require.NoError(t, err)
		require.NoError(t, as(db, david).First(&d, 129).Error)
		d.Body = "credit 8000"
		require.ErrorIs(t, as(db, david).Save(&d).Error, offlinelock.ErrLocked, "David cannot overwrite Martin's edit")
		m.Title = "Acme Group"
		require.NoError(t, as(db, martin).Transaction(func(tx *gorm.DB) error {
			if err := tx.Save(&m).Error; err != nil {
				return err
			}
			return p.Release(tx, &m)
		}))
		require.NoError(t, as(db, david).First(&d, 129).Error)
		assert.Equal(t, "Acme Group", d.Title, "David sees Martin's change before he edits")
	})
}

// FcHooked counts its hooks in the fcHookCounter its statement's context
// carries at fcHooksKey, so each test has its own (testkit's
// models_hooked.go).
type (
	FcHooked      = testkit.FcHooked
	fcHooksKey    = testkit.FcHooksKey
	fcHookCounter = testkit.FcHookCounter
)

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
					assert.Zero(t, c.N.Load(), "hooks ran for a refused write (locked by %v)", lockedBy)
					assert.Equal(t, before, state(), "the refused write changed rows")
				}
				// The holder: hooks run and the row changes.
				require.NoError(t, admin(db).Where("1 = 1").Delete(&FcHooked{}).Error)
				require.NoError(t, admin(db).Create(&FcHooked{ID: 1, Name: "orig"}).Error)
				var loaded FcHooked
				require.NoError(t, as(db, martin).First(&loaded, 1).Error)
				tx, c := counted(martin)
				require.NoError(t, fcSafe(t, func() error { return w.write(tx, &loaded) }))
				assert.NotZero(t, c.N.Load(), "setup: the hooks are counted")
				assert.NotEqual(t, before, state(), "the holder's write changed something")
			})
		}
	})
}

// TestFenceFailsASaveWhoseLockWasTakenOver pauses a save between its lock
// check and its commit, lets the lock expire and another session take it,
// then lets the save go on: it must fail, on every write path, and leave
// the row as it was. PostgreSQL only: on SQLite a write transaction holds
// the whole database, so nobody can take a lock over during a save.
func TestFenceFailsASaveWhoseLockWasTakenOver(t *testing.T) {
	paths := []struct {
		name  string
		write func(db *gorm.DB, id uint) error
	}{
		{"Save", func(db *gorm.DB, id uint) error { return db.Save(&Doc{ID: id, Title: "late"}).Error }},
		{"Updates", func(db *gorm.DB, id uint) error { return db.Model(&Doc{ID: id}).Updates(Doc{Title: "late"}).Error }},
		{"UpdateColumn", func(db *gorm.DB, id uint) error { return db.Model(&Doc{ID: id}).UpdateColumn("title", "late").Error }},
		{"Where.Update", func(db *gorm.DB, id uint) error {
			return db.Model(&Doc{}).Where("id = ?", id).Update("title", "late").Error
		}},
		{"Delete", func(db *gorm.DB, id uint) error { return db.Delete(&Doc{ID: id}).Error }},
		{"Save slice (upsert)", func(db *gorm.DB, id uint) error { return db.Save(&[]Doc{{ID: id, Title: "late"}}).Error }},
	}
	d := databases()[1]
	db, p := setupModels(t, d, offlinelock.Config{})
	pauseBetweenCheckAndCommit(t, db)
	for i, path := range paths {
		t.Run(path.name, func(t *testing.T) {
			id := uint(i + 1)
			require.NoError(t, admin(db).Create(&Doc{ID: id, Title: "draft"}).Error)
			mine, err := p.Acquire(withTTL(db, martin, time.Second), &Doc{ID: id}, offlinelock.Write)
			require.NoError(t, err)

			paused, resume := make(chan struct{}), make(chan struct{})
			ctx := context.WithValue(offlinelock.WithOwner(context.Background(), martin), pauseKey{}, func() {
				close(paused)
				<-resume
			})
			done := make(chan error, 1)
			go func() { done <- path.write(db.WithContext(ctx), id) }()
			<-paused
			waitPast(t, db, mine.ExpiresAt)
			taken, err := p.Acquire(as(db, david), &Doc{ID: id}, offlinelock.Write)
			require.NoError(t, err, "the takeover does not wait for the paused save")
			assert.Greater(t, taken.Generation, mine.Generation)
			close(resume)

			err = <-done
			require.ErrorIs(t, err, offlinelock.ErrLocked, "the save whose lock was taken over fails")
			var got Doc
			require.NoError(t, db.First(&got, id).Error)
			assert.Equal(t, "draft", got.Title, "nothing of the late save landed")
		})
	}
}

// TestFenceFailsAnAssociationSaveWhoseLockWasTakenOver is the fence test
// for the last write path: members saved through their team with
// FullSaveAssociations (an upsert in the Create chain).
func TestFenceFailsAnAssociationSaveWhoseLockWasTakenOver(t *testing.T) {
	d := databases()[1]
	db, p := setupModels(t, d, offlinelock.Config{})
	pauseBetweenCheckAndCommit(t, db)
	require.NoError(t, admin(db).Create(&Team{ID: 1, Name: "core", Members: []Member{{ID: 1, Name: "a"}}}).Error)
	var team Team
	require.NoError(t, withTTL(db, martin, time.Second).Preload("Members").First(&team, 1).Error)
	h, err := p.Holders(db, &Member{ID: 1})
	require.NoError(t, err)
	mine := h[0]

	paused, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ctx := context.WithValue(offlinelock.WithOwner(context.Background(), martin), pauseKey{}, func(tx *gorm.DB) {
		if tx.Statement.Table == "members" {
			once.Do(func() { close(paused); <-resume })
		}
	})
	team.Members[0].Name = "late"
	done := make(chan error, 1)
	go func() {
		done <- db.WithContext(ctx).Session(&gorm.Session{FullSaveAssociations: true}).Save(&team).Error
	}()
	<-paused
	waitPast(t, db, mine.ExpiresAt)
	taken, err := p.Acquire(as(db, david), &Member{ID: 1}, offlinelock.Write)
	require.NoError(t, err)
	assert.Greater(t, taken.Generation, mine.Generation)
	close(resume)
	require.ErrorIs(t, <-done, offlinelock.ErrLocked)
	var m Member
	require.NoError(t, admin(db).First(&m, 1).Error)
	assert.Equal(t, "a", m.Name)
}

func TestCreatingNewRowsNeedsNoLock(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, as(db, martin).Create(&Doc{Title: "auto id"}).Error)
		require.NoError(t, as(db, martin).Create(&Doc{ID: 40, Title: "explicit id"}).Error)
		require.NoError(t, as(db, martin).Save(&Doc{ID: 41, Title: "save of a new row"}).Error)
		// But not a row whose key someone else has locked ahead of creating it.
		_, err := p.Acquire(as(db, david), &Doc{ID: 42}, offlinelock.Write)
		require.NoError(t, err)
		require.ErrorIs(t, as(db, martin).Create(&Doc{ID: 42}).Error, offlinelock.ErrLocked)
	})
}

// TestKeylessCreateOntoAReservedKey: a Create without a key whose
// generated key another session reserved with Acquire is refused, on
// every database, and leaves no row.
func TestKeylessCreateOntoAReservedKey(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		first := Doc{Title: "first"}
		require.NoError(t, as(db, martin).Create(&first).Error)
		next := first.ID + 1
		_, err := p.Acquire(as(db, david), &Doc{ID: next}, offlinelock.Write)
		require.NoError(t, err)
		err = as(db, martin).Create(&Doc{Title: "keyless"}).Error
		var le *offlinelock.LockedError
		require.ErrorAs(t, err, &le)
		require.Equal(t, strconv.FormatUint(uint64(next), 10), le.ID)
		var n int64
		require.NoError(t, admin(db).Model(&Doc{}).Where("title = ?", "keyless").Count(&n).Error)
		require.Zero(t, n, "refused: no row remains")
		require.NoError(t, as(db, david).Create(&Doc{Title: "the holder's"}).Error, "the holder may create it")
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

func TestAnUpsertOnAnotherUniqueKeyIsRefused(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, db.AutoMigrate(&Badge{}))
		t.Cleanup(func() { db.Migrator().DropTable(&Badge{}) })
		require.NoError(t, admin(db).Create(&Badge{ID: 2, Code: "b2", Name: "david's"}).Error)
		_, err := p.Acquire(as(db, david), &Badge{ID: 2}, offlinelock.Write)
		require.NoError(t, err)
		err = as(db, martin).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "code"}}, UpdateAll: true}).
			Create(&Badge{Code: "b2", Name: "hijack"}).Error
		require.ErrorIs(t, err, offlinelock.ErrInvalid)
		var b Badge
		require.NoError(t, db.First(&b, 2).Error)
		assert.Equal(t, "david's", b.Name)
	})
}

// TestFailClosedMoreUpserts: upserts whose real conflict target is not the
// key they name.
func TestFailClosedMoreUpserts(t *testing.T) {
	eachFm(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		if db.Dialector.Name() != "postgres" {
			t.Skip("ON CONSTRAINT is PostgreSQL's")
		}
		require.NoError(t, admin(db).Exec(`ALTER TABLE fm_uqs ADD CONSTRAINT fm_uqs_name_key UNIQUE (name)`).Error)
		upserts := []fmWrite{
			{"OnConflict{Columns: id, OnConstraint: unique name, DoUpdates}.Create(new key)", func(tx *gorm.DB) error {
				return tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, OnConstraint: "fm_uqs_name_key",
					DoUpdates: clause.Assignments(map[string]any{"credit": 777})}).Create(&FmUq{ID: 500, Name: "secret", Credit: 1}).Error
			}},
			{"OnConflict{UpdateAll, OnConstraint: unique name}.Create(new key)", func(tx *gorm.DB) error {
				return tx.Clauses(clause.OnConflict{UpdateAll: true, OnConstraint: "fm_uqs_name_key"}).
					Create(&FmUq{ID: 500, Name: "secret", Credit: 777}).Error
			}},
		}
		for _, u := range upserts {
			t.Run(u.name, func(t *testing.T) {
				fcReset(t, db, p)
				require.NoError(t, admin(db).Where("1 = 1").Delete(&FmUq{}).Error)
				require.NoError(t, admin(db).Create(&FmUq{ID: 129, Name: "secret", Credit: 1}).Error)
				_, err := p.Acquire(as(db, martin), &FmUq{ID: 129}, offlinelock.Write)
				require.NoError(t, err)
				err = fcSafe(t, func() error { return u.write(as(db, david)) })
				fmRefused(t, err, "David's upsert overwrote row 129 held by Martin")
				var got FmUq
				require.NoError(t, admin(db).First(&got, 129).Error)
				assert.Equal(t, 1, got.Credit, "row 129 held by Martin changed")

				err = fcSafe(t, func() error { return u.write(as(db, martin)) })
				if err != nil {
					assert.True(t, fcUnenforceable(err), "the holder may only be refused as unenforceable, got %v", err)
				}
			})
		}
	})
}

// TestFailClosedMoreChangingThePrimaryKey: an Update of the key itself
// creates the new key's record: a key another session locked ahead must
// refuse it, as it refuses Create.
func TestFailClosedMoreChangingThePrimaryKey(t *testing.T) {
	writes := []fmWrite{
		{"Model(key).Update(id)", func(tx *gorm.DB) error { return tx.Model(&FmDoc{ID: 1}).Update("id", 500).Error }},
		{"Model(key).Updates(map id)", func(tx *gorm.DB) error {
			return tx.Model(&FmDoc{ID: 1}).Updates(map[string]any{"id": 500, "title": "moved"}).Error
		}},
		{"Where.UpdateColumn(id)", func(tx *gorm.DB) error {
			return tx.Model(&FmDoc{}).Where("id = ?", 1).UpdateColumn("id", 500).Error
		}},
	}
	eachFm(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		exists := func(id uint) bool {
			var n int64
			require.NoError(t, admin(db).Model(&FmDoc{}).Where("id = ?", id).Count(&n).Error)
			return n == 1
		}
		for _, w := range writes {
			t.Run(w.name, func(t *testing.T) {
				fcReset(t, db, p)
				require.NoError(t, admin(db).Where("1 = 1").Delete(&FmDoc{}).Error)
				require.NoError(t, admin(db).Create(&FmDoc{ID: 1, Title: "mine"}).Error)
				_, err := p.Acquire(as(db, martin), &FmDoc{ID: 500}, offlinelock.Write)
				require.NoError(t, err)
				_, err = p.Acquire(as(db, david), &FmDoc{ID: 1}, offlinelock.Write)
				require.NoError(t, err)
				err = fcSafe(t, func() error { return w.write(as(db, david)) })
				fmRefused(t, err, "David created doc 500, locked ahead by Martin, by changing doc 1's key")
				assert.False(t, exists(500), "doc 500 exists")
				assert.True(t, exists(1))

				// Holding both, Martin moves the key.
				fcReset(t, db, p)
				for _, id := range []uint{1, 500} {
					_, err := p.Acquire(as(db, martin), &FmDoc{ID: id}, offlinelock.Write)
					require.NoError(t, err)
				}
				require.NoError(t, fcSafe(t, func() error { return w.write(as(db, martin)) }))
				assert.True(t, exists(500))
			})
		}
	})
}

// TestFailClosedMoreSchemaObjects: what the schema does on its own: a
// cascading foreign key, a view made with GORM's Migrator.
func TestFailClosedMoreSchemaObjects(t *testing.T) {
	eachFm(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		t.Run("Delete of a parent cascades to a child held by another session", func(t *testing.T) {
			fcReset(t, db, p)
			require.NoError(t, admin(db).Where("1 = 1").Delete(&FmChild{}).Error)
			require.NoError(t, admin(db).Where("1 = 1").Delete(&FmParent{}).Error)
			require.NoError(t, admin(db).Create(&FmParent{ID: 1}).Error)
			require.NoError(t, admin(db).Create(&FmChild{ID: 1, FmParentID: 1, Name: "martin's"}).Error)
			_, err := p.Acquire(as(db, martin), &FmChild{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			_, err = p.Acquire(as(db, david), &FmParent{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			err = fcSafe(t, func() error { return as(db, david).Delete(&FmParent{ID: 1}).Error })
			fmRefused(t, err, "David's delete removed child 1 held by Martin")
			var n int64
			require.NoError(t, admin(db).Model(&FmChild{}).Where("id = ?", 1).Count(&n).Error)
			assert.EqualValues(t, 1, n, "child 1, held by Martin, was deleted")

			// The holder of both deletes them.
			fcReset(t, db, p)
			require.NoError(t, admin(db).Save(&FmParent{ID: 1}).Error)
			require.NoError(t, admin(db).Save(&FmChild{ID: 1, FmParentID: 1, Name: "martin's"}).Error)
			_, err = p.Acquire(as(db, martin), &FmChild{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			_, err = p.Acquire(as(db, martin), &FmParent{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			require.NoError(t, as(db, martin).Delete(&FmParent{ID: 1}).Error)
		})
		t.Run("Select(Associations).Delete of a parent (GORM's own cascade)", func(t *testing.T) {
			type FmParentWithKids struct {
				ID       uint      `gorm:"primaryKey" lock:"exclusive_write"`
				FmChilds []FmChild `gorm:"foreignKey:FmParentID"`
			}
			fcReset(t, db, p)
			require.NoError(t, admin(db).Where("1 = 1").Delete(&FmChild{}).Error)
			require.NoError(t, admin(db).Where("1 = 1").Delete(&FmParent{}).Error)
			require.NoError(t, admin(db).Create(&FmParent{ID: 1}).Error)
			require.NoError(t, admin(db).Create(&FmChild{ID: 1, FmParentID: 1, Name: "martin's"}).Error)
			_, err := p.Acquire(as(db, martin), &FmChild{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			_, err = p.Acquire(as(db, david), &FmParent{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			err = fcSafe(t, func() error {
				return as(db, david).Table("fm_parents").Select(clause.Associations).Delete(&FmParentWithKids{ID: 1}).Error
			})
			fmRefused(t, err, "David's association delete removed child 1 held by Martin")
			var n int64
			require.NoError(t, admin(db).Model(&FmChild{}).Where("id = ?", 1).Count(&n).Error)
			assert.EqualValues(t, 1, n, "child 1, held by Martin, was deleted")
		})
		t.Run("Migrator().CreateView over a lockable table, then read and write through it", func(t *testing.T) {
			fcReset(t, db, p)
			t.Cleanup(func() { admin(db).Migrator().DropView("fm_acct_view"); admin(db).Migrator().DropView("fm_doc_view") })
			require.NoError(t, admin(db).Create(&FmDoc{ID: 129, Title: "draft"}).Error)
			require.NoError(t, as(db, martin).First(&FmAcct{}, 129).Error)
			_, err := p.Acquire(as(db, martin), &FmDoc{ID: 129}, offlinelock.Write)
			require.NoError(t, err)

			dv := as(db, david)
			errView := fcSafe(t, func() error {
				return dv.Migrator().CreateView("fm_acct_view", gorm.ViewOption{Query: dv.Model(&FmAcct{})})
			})
			if errView != nil {
				fmRefused(t, errView, "CreateView")
			} else {
				var v []map[string]any
				err := fcSafe(t, func() error { return dv.Table("fm_acct_view").Where("id = ?", 129).Find(&v).Error })
				if !assert.Empty(t, v, "David read account 129 held by Martin through a view") {
					fmRefused(t, err, "the read through the view")
				}
			}
			errView = fcSafe(t, func() error {
				return dv.Migrator().CreateView("fm_doc_view", gorm.ViewOption{Query: dv.Model(&FmDoc{})})
			})
			if errView != nil {
				fmRefused(t, errView, "CreateView")
			} else if db.Dialector.Name() == "postgres" { // simple views are updatable
				err := fcSafe(t, func() error {
					return dv.Table("fm_doc_view").Where("id = ?", 129).Update("title", "leak").Error
				})
				var d FmDoc
				require.NoError(t, admin(db).First(&d, 129).Error)
				if !assert.Equal(t, "draft", d.Title, "David wrote doc 129 held by Martin through a view") {
					fmRefused(t, err, "the write through the view")
				}
			}
		})
	})
}

func TestAssociationSavesNeedTheMembersLocks(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&Team{ID: 1, Name: "core", Members: []Member{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}}}).Error)
		full := &gorm.Session{FullSaveAssociations: true}

		var team Team
		require.NoError(t, admin(db).Preload("Members").First(&team, 1).Error)
		team.Members[0].Name = "changed"
		err := as(db, david).Session(full).Save(&team).Error
		require.ErrorIs(t, err, offlinelock.ErrNotLocked, "the upsert of existing members needs their locks")

		require.NoError(t, as(db, martin).Preload("Members").First(&team, 1).Error) // locks the members
		team.Members[0].Name = "changed"
		require.NoError(t, as(db, martin).Session(full).Save(&team).Error)
		var m Member
		require.NoError(t, admin(db).First(&m, 1).Error)
		assert.Equal(t, "changed", m.Name)
	})
}

// TestFailClosedMoreAssociationSaves: saving an untagged model writes its
// lockable belongs-to association.
func TestFailClosedMoreAssociationSaves(t *testing.T) {
	saves := []fmWrite{
		{"Session(FullSaveAssociations).Save(seat with account 129)", func(tx *gorm.DB) error {
			return tx.Session(&gorm.Session{FullSaveAssociations: true}).
				Save(&FmSeat{ID: 1, Label: "s1", FmAcctID: 129, FmAcct: &FmAcct{ID: 129, Name: "leak", Credit: 1}}).Error
		}},
		{"Session(FullSaveAssociations).Updates(seat with account 129)", func(tx *gorm.DB) error {
			return tx.Session(&gorm.Session{FullSaveAssociations: true}).Model(&FmSeat{ID: 1}).
				Updates(&FmSeat{Label: "s1", FmAcct: &FmAcct{ID: 129, Name: "leak", Credit: 1}}).Error
		}},
		{"Save(seat with account 129) plain", func(tx *gorm.DB) error {
			return tx.Save(&FmSeat{ID: 1, Label: "s1", FmAcctID: 129, FmAcct: &FmAcct{ID: 129, Name: "leak", Credit: 1}}).Error
		}},
	}
	eachFm(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for _, s := range saves {
			t.Run(s.name, func(t *testing.T) {
				fcReset(t, db, p)
				require.NoError(t, admin(db).Save(&FmAcct{ID: 129, Name: "secret", Credit: 9999}).Error)
				require.NoError(t, as(db, martin).First(&FmAcct{}, 129).Error)
				err := fcSafe(t, func() error { return s.write(as(db, david)) })
				assert.Equal(t, "secret", fmAcctName(t, db, 129), "David's association save changed account 129 held by Martin")
				if err != nil {
					assert.True(t, fcRefused(err), "got %v", err)
				}
				assert.Empty(t, fcLocksOf(t, db, p, david))
				require.NoError(t, fcSafe(t, func() error { return s.write(as(db, martin)) }), "the holder")
			})
		}
	})
}

type FtPol struct {
	ID   uint `gorm:"primaryKey" lock:"read_write"`
	Name string
}

type FtPolView struct {
	ID   uint
	Name string
}

func (FtPolView) TableName() string { return "ft_pols" }

// TestFailClosedReadLocksDoNotWrite: a Read lock (read_write, taken by
// a load) never lets a write through, whatever its shape; the Write lock
// (Acquire) does.
func TestFailClosedReadLocksDoNotWrite(t *testing.T) {
	writes := []struct {
		name  string
		write func(tx *gorm.DB) error
	}{
		{"Model.Update", func(tx *gorm.DB) error { return tx.Model(&FtPol{ID: 1}).Update("name", "w").Error }},
		{"Save(loaded)", func(tx *gorm.DB) error {
			var v FtPol
			if err := tx.First(&v, 1).Error; err != nil {
				return err
			}
			v.Name = "w"
			return tx.Save(&v).Error
		}},
		{"DTO Save", func(tx *gorm.DB) error { return tx.Save(&FtPolView{ID: 1, Name: "w"}).Error }},
		{"DTO Model.Updates(map)", func(tx *gorm.DB) error {
			return tx.Model(&FtPolView{ID: 1}).Updates(map[string]any{"name": "w"}).Error
		}},
		{"Table.Where.Updates(map)", func(tx *gorm.DB) error {
			return tx.Table("ft_pols").Where("id = ?", 1).Updates(map[string]any{"name": "w"}).Error
		}},
		{"Table.Where.Delete(map)", func(tx *gorm.DB) error {
			return tx.Table("ft_pols").Where("id = ?", 1).Delete(map[string]any{}).Error
		}},
		{"OnConflict upsert", func(tx *gorm.DB) error {
			return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&FtPol{ID: 1, Name: "w"}).Error
		}},
		{"G[FtPol].Where.Update", func(tx *gorm.DB) error {
			_, err := gorm.G[FtPol](tx).Where("id = ?", 1).Update(tx.Statement.Context, "name", "w")
			return err
		}},
	}
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p, _ := ftSetup(t, d, []any{&FtPol{}})
			for _, w := range writes {
				t.Run(w.name, func(t *testing.T) {
					for _, shared := range []bool{false, true} {
						fcReset(t, db, p)
						require.NoError(t, admin(db).Unscoped().Where("1 = 1").Delete(&FtPol{}).Error)
						require.NoError(t, admin(db).Create(&FtPol{ID: 1, Name: "p"}).Error)
						require.NoError(t, as(db, david).First(&FtPol{}, 1).Error)
						if shared {
							require.NoError(t, as(db, martin).First(&FtPol{}, 1).Error)
						}
						err := fcSafe(t, func() error { return w.write(as(db, david)) })
						fmRefused(t, err, "David wrote policy 1 with a Read lock only (shared: %v)", shared)
						var v FtPol
						require.NoError(t, admin(db).First(&v, 1).Error)
						assert.Equal(t, "p", v.Name, "shared: %v", shared)
					}
					fcReset(t, db, p)
					_, err := p.Acquire(as(db, david), &FtPol{ID: 1}, offlinelock.Write)
					require.NoError(t, err)
					require.NoError(t, fcSafe(t, func() error { return w.write(as(db, david)) }), "the Write holder")
				})
			}
		})
	}
}

// FtDoc needs a Write lock to be written.
type FtDoc struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Title string
}

// TestFailClosedExpiredLocks: a Write lock that expired writes
// nothing, even within the second the node's in-memory hint trusts it.
func TestFailClosedExpiredLocks(t *testing.T) {
	writes := []struct {
		name  string
		write func(tx *gorm.DB) error
	}{
		{"Model.Update by key", func(tx *gorm.DB) error { return tx.Model(&FtDoc{ID: 129}).Update("title", "w").Error }},
		{"Save", func(tx *gorm.DB) error { return tx.Save(&FtDoc{ID: 129, Title: "w"}).Error }},
		{"Delete by key", func(tx *gorm.DB) error { return tx.Delete(&FtDoc{ID: 129}).Error }},
		{"Where.Update", func(tx *gorm.DB) error {
			return tx.Model(&FtDoc{}).Where("id = ?", 129).Update("title", "w").Error
		}},
		{"SkipHooks Model.Update", func(tx *gorm.DB) error {
			return tx.Session(&gorm.Session{SkipHooks: true}).Model(&FtDoc{ID: 129}).Update("title", "w").Error
		}},
	}
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p, _ := ftSetup(t, d, []any{&FtDoc{}})
			for _, w := range writes {
				t.Run(w.name, func(t *testing.T) {
					for _, takenOver := range []bool{false, true} {
						fcReset(t, db, p)
						require.NoError(t, admin(db).Save(&FtDoc{ID: 129, Title: "t"}).Error)
						l, err := p.Acquire(withTTL(db, martin, 150*time.Millisecond), &FtDoc{ID: 129}, offlinelock.Write)
						require.NoError(t, err)
						waitPast(t, db, l.ExpiresAt)
						if takenOver {
							_, err = p.Acquire(as(db, david), &FtDoc{ID: 129}, offlinelock.Write)
							require.NoError(t, err)
						}
						err = fcSafe(t, func() error { return w.write(as(db, martin)) })
						fmRefused(t, err, "Martin wrote with an expired lock (taken over: %v)", takenOver)
						var n int64
						require.NoError(t, admin(db).Model(&FtDoc{}).Where("id = ? AND title = ?", 129, "t").Count(&n).Error)
						assert.EqualValues(t, 1, n, "the expired holder's write landed (taken over: %v)", takenOver)
					}
					fcReset(t, db, p)
					_, err := p.Acquire(as(db, martin), &FtDoc{ID: 129}, offlinelock.Write)
					require.NoError(t, err)
					require.NoError(t, fcSafe(t, func() error { return w.write(as(db, martin)) }), "the live holder")
				})
			}
		})
	}
}

// FtSeat (untagged) belongs to a lockable FtAcct; FtTicket (untagged)
// belongs to a seat.

// BadgeKeyed has a unique key that includes its primary key: it collides
// only with the row of the same key.
type BadgeKeyed struct {
	ID   uint   `gorm:"primaryKey;uniqueIndex:idx_badge_keyed_code" lock:"exclusive_write"`
	Code string `gorm:"uniqueIndex:idx_badge_keyed_code;size:32"`
	Name string
}

// BadgeView is a DTO over badges that leaves out its unique key.
type BadgeView struct {
	ID   uint `gorm:"primaryKey"`
	Code string
	Name string
}

func (BadgeView) TableName() string { return "badges" }

// TestFailClosedUpsertsOnMySQLCollideOnAnyUniqueKey: MySQL runs every
// upsert as ON DUPLICATE KEY UPDATE, which overwrites the row of whichever
// unique key collides, whatever conflict columns GORM was given. An upsert
// of a table with a unique key beyond its primary key is refused there,
// for the holder too; elsewhere the database refuses the collision.
func TestFailClosedUpsertsOnMySQLCollideOnAnyUniqueKey(t *testing.T) {
	hijacks := []fmWrite{
		{"Save([]Badge new key, taken code)", func(tx *gorm.DB) error {
			return tx.Save(&[]Badge{{ID: 7, Code: "b2", Name: "hijack"}}).Error
		}},
		{"Save(Badge new key, taken code)", func(tx *gorm.DB) error { return tx.Save(&Badge{ID: 7, Code: "b2", Name: "hijack"}).Error }},
		{"OnConflict{Columns: id, UpdateAll}.Create", func(tx *gorm.DB) error {
			return tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, UpdateAll: true}).
				Create(&Badge{ID: 7, Code: "b2", Name: "hijack"}).Error
		}},
		{"OnConflict{Columns: id, DoUpdates: name}.Create", func(tx *gorm.DB) error {
			return tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoUpdates: clause.AssignmentColumns([]string{"name"})}).
				Create(&Badge{ID: 7, Code: "b2", Name: "hijack"}).Error
		}},
		{"Save([]DTO without the unique tag)", func(tx *gorm.DB) error {
			return tx.Save(&[]BadgeView{{ID: 7, Code: "b2", Name: "hijack"}}).Error
		}},
		{"Table(badges).OnConflict{UpdateAll}.Create([]map)", func(tx *gorm.DB) error {
			return tx.Table("badges").Clauses(clause.OnConflict{UpdateAll: true}).
				Create(&[]map[string]any{{"id": 7, "code": "b2", "name": "hijack"}}).Error
		}},
		{"OnConflict{UpdateAll}.CreateInBatches", func(tx *gorm.DB) error {
			return tx.Clauses(clause.OnConflict{UpdateAll: true}).CreateInBatches(&[]Badge{{ID: 7, Code: "b2", Name: "hijack"}}, 10).Error
		}},
	}
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, db.AutoMigrate(&Badge{}))
		t.Cleanup(func() { db.Migrator().DropTable(&Badge{}) })
		for _, h := range hijacks {
			t.Run(h.name, func(t *testing.T) {
				fcReset(t, db, p)
				require.NoError(t, admin(db).Where("1 = 1").Delete(&Badge{}).Error)
				require.NoError(t, admin(db).Create(&Badge{ID: 2, Code: "b2", Name: "david's"}).Error)
				_, err := p.Acquire(as(db, david), &Badge{ID: 2}, offlinelock.Write)
				require.NoError(t, err)
				for _, o := range []offlinelock.Owner{martin, david} {
					err = fcSafe(t, func() error { return h.write(as(db, o)) })
					require.Error(t, err, "%s's upsert went through", o.User)
					if db.Dialector.Name() == "mysql" {
						require.ErrorIs(t, err, offlinelock.ErrInvalid)
						assert.Contains(t, err.Error(), "overwrites the row of any unique key")
					}
					var all []Badge
					require.NoError(t, admin(db).Order("id").Find(&all).Error)
					assert.Equal(t, []Badge{{ID: 2, Code: "b2", Name: "david's"}}, all)
				}
			})
		}
	})
}

// TestUpsertsWithoutAnotherUniqueKeyAreAllowed: where the primary key is
// the only key a row can collide on, the holder's upserts go through on
// every database, MySQL included.
func TestUpsertsWithoutAnotherUniqueKeyAreAllowed(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, db.AutoMigrate(&BadgeKeyed{}))
		t.Cleanup(func() { db.Migrator().DropTable(&BadgeKeyed{}) })
		require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "one"}).Error)
		require.NoError(t, admin(db).Create(&BadgeKeyed{ID: 1, Code: "k1", Name: "one"}).Error)
		for _, v := range []any{&Doc{ID: 1}, &BadgeKeyed{ID: 1}} {
			_, err := p.Acquire(as(db, martin), v, offlinelock.Write)
			require.NoError(t, err)
		}
		m := as(db, martin)
		require.NoError(t, m.Save(&[]Doc{{ID: 1, Title: "saved"}, {ID: 2, Title: "new"}}).Error)
		require.NoError(t, m.Clauses(clause.OnConflict{UpdateAll: true}).Create(&BadgeKeyed{ID: 1, Code: "k1", Name: "upserted"}).Error)
		require.NoError(t, m.Save(&[]BadgeKeyed{{ID: 1, Code: "k1", Name: "saved"}, {ID: 2, Code: "k2", Name: "new"}}).Error)
		var docs []Doc
		require.NoError(t, admin(db).Order("id").Find(&docs).Error)
		assert.Equal(t, []Doc{{ID: 1, Title: "saved"}, {ID: 2, Title: "new"}}, docs)
		var badges []BadgeKeyed
		require.NoError(t, admin(db).Order("id").Find(&badges).Error)
		assert.Equal(t, []BadgeKeyed{{ID: 1, Code: "k1", Name: "saved"}, {ID: 2, Code: "k2", Name: "new"}}, badges)
		// Without the lock, the same upsert is refused as any write is.
		fcReset(t, db, p)
		err := as(db, david).Save(&[]Doc{{ID: 1, Title: "stolen"}}).Error
		require.ErrorIs(t, err, offlinelock.ErrNotLocked)
	})
}
