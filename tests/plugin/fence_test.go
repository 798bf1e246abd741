package plugin_test

// The fence folded into the write (fence.go): a verified save by the lock's
// holder is one statement, the lock is checked by that statement and its
// key row stays row-locked until commit; anything that could run between
// the write and its commit (an After hook, another plugin's callback)
// keeps the fence a statement of its own, after it.

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// FoldAfterHooked has an AfterUpdate hook: user code between the write and
// its commit.
type FoldAfterHooked struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Title string
}

func (*FoldAfterHooked) AfterUpdate(*gorm.DB) error { return nil }

// FoldBeforeHooked pauses in BeforeUpdate when its context says so: after
// the plugin's check, before the write.
type FoldBeforeHooked struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Title string
}

func (*FoldBeforeHooked) BeforeUpdate(tx *gorm.DB) error {
	if f, ok := tx.Statement.Context.Value(pauseKey{}).(func()); ok {
		f()
	}
	return nil
}

// TestFoldedFenceIsOneStatement counts the statements of a holder's Save:
// on PostgreSQL and SQLite the UPDATE alone, its fence inside; with
// another plugin's callback in the chain, the UPDATE and then the fence;
// with a hook of the model's, the check before the hook as well.
func TestFoldedFenceIsOneStatement(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setupModels(t, d, offlinelock.Config{})
			fcDropCleanup(t, db, &FoldAfterHooked{})
			require.NoError(t, admin(db).AutoMigrate(&FoldAfterHooked{}))
			require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "t"}).Error)
			require.NoError(t, admin(db).Create(&FoldAfterHooked{ID: 1, Title: "t"}).Error)
			for _, target := range []any{&Doc{ID: 1}, &FoldAfterHooked{ID: 1}} {
				_, err := p.Acquire(as(db, martin), target, offlinelock.Write)
				require.NoError(t, err)
			}
			statements := func(write func(tx *gorm.DB) error) int64 {
				c := &counter{Interface: logger.Discard}
				require.NoError(t, write(as(db, martin).Session(&gorm.Session{Logger: c})))
				return c.N.Load()
			}
			const folded int64 = 1 // on MySQL the guard's fence function (fence_mysql.go)
			assert.Equal(t, folded, statements(func(tx *gorm.DB) error { return tx.Save(&Doc{ID: 1, Title: "a"}).Error }), "Save")
			assert.Equal(t, folded, statements(func(tx *gorm.DB) error { return tx.Model(&Doc{ID: 1}).Update("title", "b").Error }), "Update")
			// An upsert is checked before and fenced after: its row count
			// cannot tell a new row (no lock needed) from an existing one.
			unchanged, upsert := int64(1), int64(3)
			if d.name == "mysql" {
				// An unchanged row reports 0 rows: Save's UPDATE, then GORM's
				// upsert, each with its fences inside (foldUpsert).
				unchanged, upsert = 2, 1
			}
			assert.Equal(t, unchanged, statements(func(tx *gorm.DB) error { return tx.Save(&Doc{ID: 1, Title: "b"}).Error }), "Save of the row as it is")
			assert.Equal(t, upsert, statements(func(tx *gorm.DB) error {
				return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&Doc{ID: 1, Title: "b2"}).Error
			}), "an upsert of the record")
			assert.Equal(t, int64(3), statements(func(tx *gorm.DB) error { return tx.Save(&FoldAfterHooked{ID: 1, Title: "a"}).Error }),
				"a model's hook: checked before it runs, the fence after it")

			require.NoError(t, db.Callback().Update().After("gorm:update").Register("test:other_plugin", func(*gorm.DB) {}))
			t.Cleanup(func() { db.Callback().Update().Remove("test:other_plugin") })
			assert.Equal(t, int64(2), statements(func(tx *gorm.DB) error { return tx.Save(&Doc{ID: 1, Title: "c"}).Error }),
				"another plugin's callback keeps the fence after it")

			var got Doc
			require.NoError(t, db.First(&got, 1).Error)
			assert.Equal(t, "c", got.Title)
		})
	}
}

// TestFoldedFenceRefusesALockTakenOverBeforeTheWrite pauses a holder's
// save after the plugin's check and before the write (in BeforeUpdate),
// lets the lock expire and another session take it: the write's own
// statement finds the lock gone, changes nothing, and the save fails.
func TestFoldedFenceRefusesALockTakenOverBeforeTheWrite(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setupModels(t, d, offlinelock.Config{})
			fcDropCleanup(t, db, &FoldBeforeHooked{})
			require.NoError(t, admin(db).AutoMigrate(&FoldBeforeHooked{}))
			require.NoError(t, admin(db).Create(&FoldBeforeHooked{ID: 1, Title: "draft"}).Error)
			mine, err := p.Acquire(withTTL(db, martin, 1500*time.Millisecond), &FoldBeforeHooked{ID: 1}, offlinelock.Write)
			require.NoError(t, err)

			paused, resume := make(chan struct{}), make(chan struct{})
			ctx := context.WithValue(offlinelock.WithOwner(context.Background(), martin), pauseKey{}, func() {
				close(paused)
				<-resume
			})
			done := make(chan error, 1)
			go func() { done <- db.WithContext(ctx).Save(&FoldBeforeHooked{ID: 1, Title: "late"}).Error }()
			<-paused
			if d.name == "sqlite" {
				// The save's transaction holds SQLite's write lock: nobody can
				// take the lock over until it ends, and it ends with the lock
				// expired.
				waitPast(t, db, mine.ExpiresAt)
				close(resume)
				require.ErrorIs(t, <-done, offlinelock.ErrNotLocked)
			} else {
				waitPast(t, db, mine.ExpiresAt)
				taken, err := p.Acquire(as(db, david), &FoldBeforeHooked{ID: 1}, offlinelock.Write)
				require.NoError(t, err, "the takeover does not wait for a save paused before its write")
				assert.Greater(t, taken.Generation, mine.Generation)
				close(resume)
				require.ErrorIs(t, <-done, offlinelock.ErrLocked)
			}
			var got FoldBeforeHooked
			require.NoError(t, db.First(&got, 1).Error)
			assert.Equal(t, "draft", got.Title, "nothing of the late save landed")
		})
	}
}

// TestFoldedFenceRowLocksTheLockUntilCommit: after a folded write inside a
// transaction, the lock's key row is row-locked until that transaction
// ends, so a takeover cannot commit between the write and its commit.
func TestFoldedFenceRowLocksTheLockUntilCommit(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setupModels(t, d, offlinelock.Config{})
			table := lockTableName(t, db, p)
			require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "t"}).Error)
			_, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			other := d.open(t)
			probe := func() error {
				return other.Transaction(func(tx *gorm.DB) error {
					var n int
					return tx.Raw(`SELECT 1 FROM ` + table + ` WHERE resource = 'docs' AND lock_id = '1' AND holder = '' FOR UPDATE NOWAIT`).Scan(&n).Error
				})
			}
			busy := map[string]string{"postgres": "55P03", "mysql": "1205"}[d.name] // lock_not_available; MariaDB's NOWAIT
			require.NoError(t, probe(), "before the save nothing holds the key row")
			for _, isolation := range []sql.IsolationLevel{sql.LevelDefault, sql.LevelReadCommitted} {
				require.NoError(t, as(db, martin).Transaction(func(tx *gorm.DB) error {
					c := &counter{Interface: logger.Discard}
					require.NoError(t, tx.Session(&gorm.Session{Logger: c}).Save(&Doc{ID: 1, Title: "saved " + isolation.String()}).Error)
					require.Equal(t, int64(3), c.N.Load(), "savepoint, the folded UPDATE, release")
					err := probe()
					require.Error(t, err, "%s: between the write and its commit the key row is row-locked", isolation)
					assert.Contains(t, err.Error(), busy)
					return nil
				}, &sql.TxOptions{Isolation: isolation}))
				require.NoError(t, probe(), "after the commit the key row is free again")
			}
		})
	}
}

// TestFoldedFenceIsNotSplicedAway: the holder's lock was lost on another
// node (so this node's hint still says it holds it), and the write carries
// an Or, or a term that closes GORM's parenthesis: it must still fail and
// change nothing, whatever the folded condition's place in the WHERE.
func TestFoldedFenceIsNotSplicedAway(t *testing.T) {
	writes := []struct {
		name  string
		write func(tx *gorm.DB) error
	}{
		{"Model.Or.Update", func(tx *gorm.DB) error { return tx.Model(&Doc{ID: 1}).Or("title = ?", "t").Update("title", "x").Error }},
		{"Model.Where.Or.Update", func(tx *gorm.DB) error {
			return tx.Model(&Doc{ID: 1}).Where("id = ?", 1).Or("id = ?", 1).Update("title", "x").Error
		}},
		{"Or.Save", func(tx *gorm.DB) error { return tx.Or("id = ?", 1).Save(&Doc{ID: 1, Title: "x"}).Error }},
		{"Where(breakout).Updates", func(tx *gorm.DB) error {
			return tx.Model(&Doc{ID: 1}).Where("1=1) OR (1=1").Updates(map[string]any{"title": "x"}).Error
		}},
		{"Where.Or.Delete", func(tx *gorm.DB) error { return tx.Where("title = ?", "zz").Or("id = ?", 1).Delete(&Doc{ID: 1}).Error }},
	}
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			cfg := offlinelock.Config{Table: "ol_" + randomHex(6), Authorize: func(context.Context, string, offlinelock.Lock) error { return nil }}
			db, p := setupModels(t, d, cfg)
			other, q := setup(t, d, cfg) // another node on the same lock table
			require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "t"}).Error)
			for _, w := range writes {
				_, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
				require.NoError(t, err)
				require.NoError(t, q.ForceRelease(as(other, offlinelock.Owner{Session: "A1", User: "admin"}), "docs", "1"))
				_, err = q.Acquire(as(other, david), &Doc{ID: 1}, offlinelock.Write)
				require.NoError(t, err)

				err = w.write(as(db, martin))
				assert.True(t, errors.Is(err, offlinelock.ErrLocked) || errors.Is(err, offlinelock.ErrNotLocked), "%s: %v", w.name, err)
				var got Doc
				require.NoError(t, admin(db).First(&got, 1).Error)
				assert.Equal(t, "t", got.Title, "%s changed the row", w.name)
				require.NoError(t, q.Release(as(other, david), &Doc{ID: 1}))
			}
		})
	}
}

// TestHintPathRefusedWritesRunNoHooks: a write by key of a record this
// node remembers granting (the hint) is refused before any hook of the
// caller's runs, when the lock was taken away behind the node's back and
// when it never existed (granted in a transaction that rolled back).
func TestHintPathRefusedWritesRunNoHooks(t *testing.T) {
	writes := []struct {
		name  string
		write func(tx *gorm.DB) error
	}{
		{"Save", func(tx *gorm.DB) error { return tx.Save(&FcHooked{ID: 1, Name: "changed"}).Error }},
		{"Model.Update", func(tx *gorm.DB) error { return tx.Model(&FcHooked{ID: 1}).Update("name", "changed").Error }},
		{"Model.Updates", func(tx *gorm.DB) error { return tx.Model(&FcHooked{ID: 1}).Updates(FcHooked{Name: "changed"}).Error }},
		{"Delete", func(tx *gorm.DB) error { return tx.Delete(&FcHooked{ID: 1}).Error }},
	}
	lose := []struct {
		name string
		lose func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin)
	}{
		{"taken behind the node's back", func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
			_, err := p.Acquire(as(db, martin), &FcHooked{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			require.NoError(t, admin(db).Exec(`UPDATE `+lockTableOf(p)+` SET session = ?, user_name = ? WHERE resource = ? AND lock_id = ?`,
				david.Session, david.User, "fc_hookeds", "1").Error)
		}},
		{"granted in a transaction that rolled back", func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
			tx := as(db, martin).Begin()
			require.NoError(t, tx.Error)
			_, err := p.Acquire(tx, &FcHooked{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			require.NoError(t, tx.Rollback().Error)
		}},
	}
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcDropCleanup(t, db, &FcHooked{})
		require.NoError(t, admin(db).AutoMigrate(&FcHooked{}))
		counted := func(o offlinelock.Owner) (*gorm.DB, *fcHookCounter) {
			c := &fcHookCounter{}
			return db.WithContext(context.WithValue(offlinelock.WithOwner(context.Background(), o), fcHooksKey{}, c)), c
		}
		for _, l := range lose {
			for _, w := range writes {
				t.Run(l.name+"/"+w.name, func(t *testing.T) {
					fcReset(t, db, p)
					require.NoError(t, admin(db).Where("1 = 1").Delete(&FcHooked{}).Error)
					require.NoError(t, admin(db).Create(&FcHooked{ID: 1, Name: "orig"}).Error)
					l.lose(t, db, p)
					tx, c := counted(martin)
					err := fcSafe(t, func() error { return w.write(tx) })
					assert.True(t, fcRefused(err), "martin's write of a lock he lost: %v", err)
					assert.Zero(t, c.N.Load(), "hooks ran for a refused write")
					var got []FcHooked
					require.NoError(t, admin(db).Find(&got).Error)
					assert.Equal(t, []FcHooked{{ID: 1, Name: "orig"}}, got)

					// The holder's own write, on the same path: hooks run, the row changes.
					fcReset(t, db, p)
					_, err = p.Acquire(as(db, martin), &FcHooked{ID: 1}, offlinelock.Write)
					require.NoError(t, err)
					tx, c = counted(martin)
					require.NoError(t, w.write(tx))
					assert.NotZero(t, c.N.Load(), "the holder's hooks")
					got = nil
					require.NoError(t, admin(db).Find(&got).Error)
					assert.NotEqual(t, []FcHooked{{ID: 1, Name: "orig"}}, got)
				})
			}
		}
	})
}

// TestFoldedFenceRefusesALostLock: the holder's lock was force-released
// or taken over on another node (this node's hint still says he holds
// it), and he writes the record by key with no WHERE of his own, the
// path whose fence is folded into the write: every write fails with the
// error the fence names (the other holder, or ErrNotLocked) and changes
// nothing, including a Save of the row as it is (on MySQL an UPDATE that
// reports no row, then GORM's upsert).
func TestFoldedFenceRefusesALostLock(t *testing.T) {
	writes := []struct {
		name  string
		write func(tx *gorm.DB) error
	}{
		{"Save", func(tx *gorm.DB) error { return tx.Save(&Doc{ID: 1, Title: "x"}).Error }},
		{"Save unchanged", func(tx *gorm.DB) error { return tx.Save(&Doc{ID: 1, Title: "t"}).Error }},
		{"Update", func(tx *gorm.DB) error { return tx.Model(&Doc{ID: 1}).Update("title", "x").Error }},
		{"Updates", func(tx *gorm.DB) error { return tx.Model(&Doc{ID: 1}).Updates(map[string]any{"title": "x"}).Error }},
		{"Delete", func(tx *gorm.DB) error { return tx.Delete(&Doc{ID: 1}).Error }},
		{"Upsert", func(tx *gorm.DB) error {
			return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&Doc{ID: 1, Title: "x"}).Error
		}},
	}
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p, other, q := atkTwoNodes(t, d) // another node on the same lock table
			require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "t"}).Error)
			for _, w := range writes {
				for _, taken := range []bool{true, false} {
					_, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
					require.NoError(t, err)
					atkLose(t, other, q, "docs", "1", &Doc{ID: 1}, taken)
					err = w.write(as(db, martin))
					if taken {
						var le *offlinelock.LockedError
						if assert.ErrorAs(t, err, &le, "%s", w.name) && assert.Len(t, le.Holders, 1, w.name) {
							assert.Equal(t, david.Session, le.Holders[0].Owner.Session, w.name)
						}
					} else {
						assert.ErrorIs(t, err, offlinelock.ErrNotLocked, w.name)
					}
					var got Doc
					require.NoError(t, admin(db).First(&got, 1).Error)
					assert.Equal(t, "t", got.Title, "%s changed the row", w.name)
					if taken {
						require.NoError(t, q.Release(as(other, david), &Doc{ID: 1}))
					}
				}
			}
		})
	}
}

// TestFoldedFenceFailsClosedWithoutItsFunction (MySQL/MariaDB): the
// guard's fence function dropped behind the plugin's back fails the write
// that called it, changing nothing; the next write takes the fence's own
// statement, and the holder's save lands.
func TestFoldedFenceFailsClosedWithoutItsFunction(t *testing.T) {
	d := database{"mysql", openMySQL}
	db, p := setupModels(t, d, offlinelock.Config{})
	require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "t"}).Error)
	_, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
	require.NoError(t, err)
	var fn string // this lock table's: other tests leave theirs
	require.NoError(t, admin(db).Raw(`SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE = 'FUNCTION' AND ROUTINE_NAME LIKE ? AND ROUTINE_DEFINITION LIKE ?`,
		"ol%\\_fence", "%"+lockTableName(t, db, p)+"%").Scan(&fn).Error)
	require.NotEmpty(t, fn, "no fence function: the test proves nothing")
	require.NoError(t, admin(db).Exec("DROP FUNCTION `"+fn+"`").Error)

	err = as(db, martin).Save(&Doc{ID: 1, Title: "x"}).Error
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1305")
	var got Doc
	require.NoError(t, admin(db).First(&got, 1).Error)
	assert.Equal(t, "t", got.Title)

	c := &counter{Interface: logger.Discard}
	require.NoError(t, as(db, martin).Session(&gorm.Session{Logger: c}).Save(&Doc{ID: 1, Title: "y"}).Error)
	assert.Equal(t, int64(2), c.N.Load(), "the UPDATE, then the fence's own statement")
	require.NoError(t, admin(db).First(&got, 1).Error)
	assert.Equal(t, "y", got.Title)
}

// TestFoldedUpsertFailsClosedWithoutItsFences (MySQL/MariaDB): a clause
// builder of someone else's that replaces the plugin's after db.Use, or a
// key omitted from VALUES, keeps a folded upsert's fence out of its
// statement; the fence sees that the statement did not carry it, and the
// upsert fails, changing nothing.
func TestFoldedUpsertFailsClosedWithoutItsFences(t *testing.T) {
	d := database{"mysql", openMySQL}
	db, p := setupModels(t, d, offlinelock.Config{})
	require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "t"}).Error)
	_, err := p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
	require.NoError(t, err)
	ours := db.ClauseBuilders["VALUES"]
	db.ClauseBuilders["VALUES"] = func(c clause.Clause, b clause.Builder) { c.Build(b) }
	t.Cleanup(func() { db.ClauseBuilders["VALUES"] = ours })

	err = as(db, martin).Clauses(clause.OnConflict{UpdateAll: true}).Create(&Doc{ID: 1, Title: "x"}).Error
	require.ErrorIs(t, err, offlinelock.ErrNotLocked)
	var got Doc
	require.NoError(t, admin(db).First(&got, 1).Error)
	assert.Equal(t, "t", got.Title)

	// The key omitted from VALUES: the fold has nowhere to go either.
	db.ClauseBuilders["VALUES"] = ours
	err = as(db, martin).Omit("id").Clauses(clause.OnConflict{UpdateAll: true}).Create(&Doc{ID: 1, Title: "y"}).Error
	require.ErrorIs(t, err, offlinelock.ErrNotLocked)
	var n int64
	require.NoError(t, admin(db).Model(&Doc{}).Count(&n).Error)
	assert.Equal(t, int64(1), n, "nothing inserted")
}
