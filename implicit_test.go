package offlinelock_test

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// waitForLockWait waits until a PostgreSQL backend is blocked on a lock
// while running a statement on table: the proof that the other goroutine
// has reached the point under test.
func waitForLockWait(t *testing.T, db *gorm.DB, table string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int64
		require.NoError(t, db.Raw(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE ?`, "%"+table+"%").Scan(&n).Error)
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no statement on %s ever waited for a lock", table)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestLoadSeesWritesCommittedBeforeItsLock: David saves and releases in
// one transaction; Martin's load, started while that transaction is open,
// waits for its lock and then reads David's committed credit, never the
// value from before.
func TestLoadSeesWritesCommittedBeforeItsLock(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			table := "ol_" + randomHex(6)
			db, p := setupModels(t, d, offlinelock.Config{Table: table})
			seedAccounts(t, db, 1)
			require.NoError(t, as(db, david).First(&Account{}, 1).Error)

			tx := as(db, david).Begin()
			require.NoError(t, tx.Error)
			require.NoError(t, tx.Model(&Account{ID: 1}).Update("credit", 8000).Error)
			require.NoError(t, p.Release(tx, &Account{ID: 1}))

			type result struct {
				a   Account
				err error
			}
			done := make(chan result, 1)
			go func() {
				var a Account
				err := as(db, martin).First(&a, 1).Error
				done <- result{a, err}
			}()
			if d.name == "postgres" {
				waitForLockWait(t, db, table) // Martin's lock waits for David's transaction
			}
			require.NoError(t, tx.Commit().Error)
			r := <-done
			require.NoError(t, r.err)
			assert.Equal(t, 8000, r.a.Credit, "the load is never older than its lock")
		})
	}
}

// pauseKey carries a function the test callback calls between the plugin's
// check and its fence.
type pauseKey struct{}

func pauseBetweenCheckAndCommit(t *testing.T, db *gorm.DB) {
	t.Helper()
	pause := func(db *gorm.DB) {
		switch f := db.Statement.Context.Value(pauseKey{}).(type) {
		case func():
			f()
		case func(*gorm.DB):
			f(db)
		}
	}
	cb := db.Callback()
	require.NoError(t, cb.Update().After("gorm:update").Before("offlinelock:fence_update").Register("test:pause_update", pause))
	require.NoError(t, cb.Delete().After("gorm:delete").Before("offlinelock:fence_delete").Register("test:pause_delete", pause))
	require.NoError(t, cb.Create().After("gorm:create").Before("offlinelock:fence_create").Register("test:pause_create", pause))
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

func TestPreloadsAreLockedAllOrNothing(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&Team{ID: 1, Name: "core", Members: []Member{{ID: 1}, {ID: 2}, {ID: 3}}}).Error)
		var team Team
		require.NoError(t, as(db, martin).Preload("Members").First(&team, 1).Error)
		assert.Len(t, team.Members, 3)
		mine, err := p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		assert.Len(t, mine, 3, "one lock per member loaded")

		before := Team{Name: "untouched"}
		got := before
		err = as(db, david).Preload("Members").First(&got, 1).Error
		require.ErrorIs(t, err, offlinelock.ErrLocked)
		assert.Equal(t, before, got)
		err = as(db, david).Transaction(func(tx *gorm.DB) error {
			return tx.Preload("Members").First(&Team{}, 1).Error
		})
		require.ErrorIs(t, err, offlinelock.ErrLocked)
		theirs, err := p.List(db, offlinelock.Filter{Session: david.Session})
		require.NoError(t, err)
		assert.Empty(t, theirs)
	})
}

func TestJoinsLockTheStructsTheyFill(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		desk := uint(9)
		require.NoError(t, admin(db).Create(&Desk{ID: desk, Floor: 3}).Error)
		require.NoError(t, admin(db).Create(&Team{ID: 1}).Error)
		require.NoError(t, admin(db).Create(&Member{ID: 1, TeamID: 1, DeskID: &desk}).Error)
		var m Member
		require.NoError(t, as(db, martin).Joins("Desk").First(&m, 1).Error)
		require.NotNil(t, m.Desk)
		assert.Equal(t, 3, m.Desk.Floor)
		h, err := p.Holders(db, &Desk{ID: desk})
		require.NoError(t, err)
		require.Len(t, h, 1, "the joined desk is locked too")
		assert.Equal(t, martin, h[0].Owner)
		require.ErrorIs(t, as(db, david).First(&Desk{}, desk).Error, offlinelock.ErrLocked)
	})
}

func TestEveryLoadPathIsLocked(t *testing.T) {
	loads := []struct {
		name string
		load func(db *gorm.DB) error
	}{
		{"Find", func(db *gorm.DB) error { return db.Find(&[]Account{}).Error }},
		{"Take", func(db *gorm.DB) error { return db.Where("id = ?", 2).Take(&Account{}).Error }},
		{"Last", func(db *gorm.DB) error { return db.Last(&Account{}).Error }},
		{"First of a struct with its key", func(db *gorm.DB) error { return db.First(&Account{ID: 2}).Error }},
		{"FindInBatches", func(db *gorm.DB) error {
			return db.FindInBatches(&[]Account{}, 1, func(*gorm.DB, int) error { return nil }).Error
		}},
		{"Pluck", func(db *gorm.DB) error { var names []string; return db.Model(&Account{}).Pluck("name", &names).Error }},
		{"Scan into a DTO", func(db *gorm.DB) error {
			var dto []struct{ Name string }
			return db.Model(&Account{}).Scan(&dto).Error
		}},
		{"Rows", func(db *gorm.DB) error {
			rows, err := db.Model(&Account{}).Where("id > ?", 0).Rows()
			if err == nil {
				rows.Close()
			}
			return err
		}},
		{"Raw into the model", func(db *gorm.DB) error { return db.Raw(`SELECT * FROM accounts`).Find(&[]Account{}).Error }},
		{"Group.Pluck", func(db *gorm.DB) error {
			var names []string
			return db.Model(&Account{}).Where("id = ?", 2).Group("id").Pluck("name", &names).Error
		}},
		{"Group.Scan into a DTO", func(db *gorm.DB) error {
			var dto []struct{ ID uint }
			return db.Model(&Account{}).Select("id").Where("id = ?", 2).Group("id").Scan(&dto).Error
		}},
	}
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 3)
		for _, l := range loads {
			require.NoError(t, l.load(as(db, martin)), l.name)
			mine, err := p.List(db, offlinelock.Filter{Session: martin.Session})
			require.NoError(t, err)
			require.NotEmpty(t, mine, "%s locks the rows it reads", l.name)
			require.ErrorIs(t, l.load(as(db, david)), offlinelock.ErrLocked, l.name)
			_, err = p.ReleaseAll(db, martin.Session)
			require.NoError(t, err)
		}
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

// counter is a GORM logger that counts statements.
type counter struct {
	logger.Interface
	n atomic.Int64
}

func (c *counter) LogMode(logger.LogLevel) logger.Interface { return c }
func (c *counter) Trace(_ context.Context, _ time.Time, _ func() (string, int64), _ error) {
	c.n.Add(1)
}

func TestManyRowsAreLockedInABoundedNumberOfStatements(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 1000)
		count := func(n int, owner offlinelock.Owner) int64 {
			c := &counter{Interface: logger.Discard}
			var got []Account
			require.NoError(t, as(db, owner).Session(&gorm.Session{Logger: c}).Where("id <= ?", n).Find(&got).Error)
			require.Len(t, got, n)
			return c.n.Load()
		}
		few := count(10, martin)
		_, err := p.ReleaseAll(db, martin.Session)
		require.NoError(t, err)
		many := count(1000, david)
		t.Logf("statements: %d for 10 rows, %d for 1000 rows", few, many)
		assert.LessOrEqual(t, many, few+8, "1000 rows cost a few more batches, not 990 more statements")
		all, err := p.List(db, offlinelock.Filter{Session: david.Session})
		require.NoError(t, err)
		assert.Len(t, all, 1000)
	})
}

// The Martin and David scenarios of the walk-through, played through the
// callbacks alone.

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

func TestLockRefusedWithWhoAndSinceWhen(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&Account{ID: 129, Name: "Acme Ltd"}).Error)
		require.NoError(t, as(db, martin).First(&Account{}, 129).Error)
		h, err := p.Holders(db, &Account{ID: 129})
		require.NoError(t, err)
		err = as(db, david).First(&Account{}, 129).Error
		var le *offlinelock.LockedError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, h[0].AcquiredAt, le.Holders[0].AcquiredAt)
		want := fmt.Sprintf("accounts 129 is locked by martin since %s until %s (UTC)",
			h[0].AcquiredAt.Format("15:04:05"), h[0].ExpiresAt.Format("15:04:05"))
		if h[0].ExpiresAt.YearDay() != h[0].AcquiredAt.YearDay() {
			want = regexp.QuoteMeta("accounts 129 is locked by martin since ")
		}
		assert.Contains(t, err.Error(), want)
	})
}

func TestAbandonedSessionExpiresAndOtherUserGetsLock(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&Account{ID: 129, Name: "Acme Ltd"}).Error)
		require.NoError(t, withTTL(db, martin, time.Second).First(&Account{}, 129).Error)
		h, err := p.Holders(db, &Account{ID: 129})
		require.NoError(t, err)
		require.ErrorIs(t, as(db, david).First(&Account{}, 129).Error, offlinelock.ErrLocked)
		waitPast(t, db, h[0].ExpiresAt) // Martin walked away
		var a Account
		require.NoError(t, as(db, david).First(&a, 129).Error)
		a.Name = "Martin's is late"
		require.ErrorIs(t, as(db, martin).Save(&a).Error, offlinelock.ErrLocked, "Martin's late save is refused")
	})
}

func TestReadWriteLocksWithRefusedAndGrantedUpgrade(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&Policy{ID: 129, Name: "home"}).Error)
		var pm, pd Policy
		require.NoError(t, as(db, martin).First(&pm, 129).Error)
		require.NoError(t, as(db, david).First(&pd, 129).Error)
		_, err := p.Acquire(as(db, david), &pd, offlinelock.Write)
		require.ErrorIs(t, err, offlinelock.ErrLocked, "WRITE refused while Martin reads")
		require.NoError(t, p.Release(as(db, martin), &pm)) // Martin closes the page
		w, err := p.Acquire(as(db, david), &pd, offlinelock.Write)
		require.NoError(t, err, "David, now the only reader, upgrades")
		assert.Equal(t, offlinelock.Write, w.Access)
		require.ErrorIs(t, as(db, martin).First(&pm, 129).Error, offlinelock.ErrLocked, "READ refused while David writes")
	})
}

func TestASingleValueReadIsLockedButACountIsNot(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 2)
		var credit int
		require.NoError(t, as(db, martin).Model(&Account{}).Select("credit").Where("id = ?", 1).Take(&credit).Error)
		assert.Equal(t, 100, credit)
		require.ErrorIs(t, as(db, david).Model(&Account{}).Select("credit").Where("id = ?", 1).Take(&credit).Error, offlinelock.ErrLocked)
		var n int64
		require.NoError(t, as(db, david).Model(&Account{}).Count(&n).Error)
		assert.EqualValues(t, 2, n)
		mine, err := p.List(db, offlinelock.Filter{Session: david.Session})
		require.NoError(t, err)
		assert.Empty(t, mine)
	})
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
