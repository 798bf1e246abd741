package plugin_test

// The Implicit Lock on loads: a load of a lockable model takes the locks
// its mode asks for (exclusive_read: Write; read_write: shared Read;
// exclusive_write: none) on every row it returns, all or nothing, in the
// statement's transaction; preloads and joins lock the structs they fill.
// A load is enforced exactly or refused with a clear error, and a refusal
// leaves nothing behind: no lock row of the refused session, the
// destination as it was. The many shapes of a load GORM's API offers are
// in load_shapes_test.go.

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

func TestLoadUnderExclusiveReadTakesTheLock(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 3)
		var a Account
		require.NoError(t, as(db, martin).First(&a, 2).Error)
		assert.Equal(t, uint(2), a.ID)
		h, err := p.Holders(db, &Account{ID: 2})
		require.NoError(t, err)
		require.Len(t, h, 1)
		assert.Equal(t, martin, h[0].Owner)
		assert.Equal(t, offlinelock.Write, h[0].Access)

		before := Account{ID: 77, Name: "untouched"}
		got := before
		err = as(db, david).First(&got, 2).Error
		var le *offlinelock.LockedError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, "accounts", le.Resource)
		assert.Equal(t, "2", le.ID)
		assert.Equal(t, before, got, "the destination is left as it was")

		// Martin loads again: he holds it, so it is granted.
		require.NoError(t, as(db, martin).First(&a, 2).Error)
		// Other rows are free for David.
		var other Account
		require.NoError(t, as(db, david).First(&other, 3).Error)
	})
}

func TestReadWriteLoadsTakeSharedReadLocks(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&Policy{ID: 5, Name: "home"}).Error)
		var pm, pd Policy
		require.NoError(t, as(db, martin).First(&pm, 5).Error)
		require.NoError(t, as(db, david).First(&pd, 5).Error)
		h, err := p.Holders(db, &Policy{ID: 5})
		require.NoError(t, err)
		require.Len(t, h, 2)
		for _, l := range h {
			assert.Equal(t, offlinelock.Read, l.Access)
			assert.InDelta(t, (2 * time.Hour).Seconds(), l.ExpiresAt.Sub(l.AcquiredAt).Seconds(), 1, "ttl=2h from the tag")
		}
		// A write needs the Write lock, refused while the other reads.
		_, err = p.Acquire(as(db, david), &pd, offlinelock.Write)
		require.ErrorIs(t, err, offlinelock.ErrLocked)
		pd.Name = "flat"
		require.ErrorIs(t, as(db, david).Save(&pd).Error, offlinelock.ErrLocked)
		require.NoError(t, p.Release(as(db, martin), &pm))
		_, err = p.Acquire(as(db, david), &pd, offlinelock.Write)
		require.NoError(t, err)
		require.NoError(t, as(db, david).Save(&pd).Error)
		require.ErrorIs(t, as(db, martin).First(&pm, 5).Error, offlinelock.ErrLocked, "no reading while David writes")
	})
}

func TestLoadsOfManyRowsAreAllOrNothing(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 10)
		require.NoError(t, as(db, david).First(&Account{}, 7).Error)

		before := []Account{{ID: 99}}
		got := before
		err := as(db, martin).Order("id").Find(&got).Error
		var le *offlinelock.LockedError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, "7", le.ID)
		assert.Equal(t, "david", le.Holders[0].Owner.User)
		assert.Equal(t, before, got, "no row reaches the caller")
		mine, err := p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		assert.Empty(t, mine, "a refusal leaves none of the new locks behind")

		require.NoError(t, as(db, martin).Where("id <> ?", 7).Order("id").Find(&got).Error)
		assert.Len(t, got, 9)
		mine, err = p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		assert.Len(t, mine, 9)
	})
}

// failureLog records the errors GORM's logger is given.
type failureLog struct {
	logger.Interface
	mu     sync.Mutex
	failed []error
}

func (l *failureLog) LogMode(logger.LogLevel) logger.Interface { return l }
func (l *failureLog) Trace(_ context.Context, _ time.Time, _ func() (string, int64), err error) {
	if err != nil {
		l.mu.Lock()
		l.failed = append(l.failed, err)
		l.mu.Unlock()
	}
}

// TestARefusedLoadLogsOnlyTheRefusal: on PostgreSQL a load outside a
// transaction is refused by its one lock statement failing on purpose (a
// division by zero); that is an answer, not a failure, so the log shows
// the load's *LockedError and no database error.
func TestARefusedLoadLogsOnlyTheRefusal(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 10)
		require.NoError(t, as(db, david).First(&Account{}, 7).Error)
		log := &failureLog{Interface: logger.Discard}
		err := as(db, martin).Session(&gorm.Session{Logger: log}).Find(&[]Account{}).Error
		require.ErrorIs(t, err, offlinelock.ErrLocked)
		require.NotEmpty(t, log.failed)
		for _, f := range log.failed {
			assert.ErrorIs(t, f, offlinelock.ErrLocked)
		}
	})
}

var errRollback = errors.New("rollback")

func TestLoadsInsideATransactionUseIt(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 3)
		err := as(db, martin).Transaction(func(tx *gorm.DB) error {
			var as []Account
			require.NoError(t, tx.Find(&as).Error)
			h, err := p.Holders(tx, &Account{ID: 1})
			require.NoError(t, err)
			require.Len(t, h, 1)
			return errRollback
		})
		require.ErrorIs(t, err, errRollback)
		all, err := p.List(db, offlinelock.Filter{})
		require.NoError(t, err)
		assert.Empty(t, all, "the locks rolled back with the transaction")
	})
}

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

// TestFindRacingANewLockOfOneOfItsKeys: David locks account 7 in a
// transaction still open when Martin's Find of every account starts, so
// Martin's statement cannot see David's lock row, and inserts its own for
// 7 after it (on PostgreSQL, a plain INSERT, which then waits). If David
// commits, Martin is refused, naming David, with no lock left behind (on
// PostgreSQL by way of a unique violation, which must send the Find down
// the general path, not reach the caller); if David rolls back, Martin
// gets every row.
func TestFindRacingANewLockOfOneOfItsKeys(t *testing.T) {
	for _, d := range databases() {
		for _, commit := range []bool{true, false} {
			name := d.name + "/rolled back"
			if commit {
				name = d.name + "/committed"
			}
			t.Run(name, func(t *testing.T) {
				table := "ol_" + randomHex(6)
				db, p := setupModels(t, d, offlinelock.Config{Table: table})
				seedAccounts(t, db, 10)
				// A first load registers the table in the lock table's
				// catalog, which David's transaction would otherwise do, and
				// Martin would wait on that instead.
				require.NoError(t, as(db, martin).First(&Account{}, 1).Error)
				_, err := p.ReleaseAll(db, martin.Session)
				require.NoError(t, err)
				tx := as(db, david).Begin()
				require.NoError(t, tx.Error)
				require.NoError(t, tx.First(&Account{}, 7).Error)

				type result struct {
					got []Account
					err error
				}
				done := make(chan result, 1)
				go func() {
					var got []Account
					err := as(db, martin).Find(&got).Error
					done <- result{got, err}
				}()
				if d.name == "postgres" {
					waitForLockWait(t, db, table) // Martin's insert of 7 waits for David
				}
				if commit {
					require.NoError(t, tx.Commit().Error)
				} else {
					require.NoError(t, tx.Rollback().Error)
				}
				r := <-done
				mine, err := p.List(db, offlinelock.Filter{Session: martin.Session})
				require.NoError(t, err)
				if !commit {
					require.NoError(t, r.err)
					assert.Len(t, r.got, 10)
					assert.Len(t, mine, 10)
					return
				}
				var le *offlinelock.LockedError
				require.ErrorAs(t, r.err, &le)
				assert.Equal(t, "7", le.ID)
				assert.Equal(t, "david", le.Holders[0].Owner.User)
				assert.Empty(t, r.got)
				assert.Empty(t, mine, "a refusal leaves none of the new locks behind")
			})
		}
	}
}

// Label has a text key whose column has a collation of its own (not the
// database's default, nor the lock table's "C").
type Label struct {
	Code string `gorm:"primaryKey;type:varchar(64)" lock:"exclusive_read"`
	Name string
}

// TestFindOfKeysWithAColumnCollation: a Find of rows whose text key has a
// collation of its own, once some of them are locked, compares their keys
// with the lock table's (COLLATE "C"); on PostgreSQL two different
// collations there must not make the comparison fail (42P22) or miss the
// lock table's index.
func TestFindOfKeysWithAColumnCollation(t *testing.T) {
	ddl := map[string]string{
		"sqlite":   `CREATE TABLE labels (code varchar(64) COLLATE BINARY PRIMARY KEY, name text)`,
		"postgres": `CREATE TABLE labels (code varchar(64) COLLATE "POSIX" PRIMARY KEY, name text)`,
		"mysql":    `CREATE TABLE labels (code varchar(64) COLLATE utf8mb4_nopad_bin PRIMARY KEY, name text)`,
	}
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setup(t, d, offlinelock.Config{})
			require.NoError(t, db.Migrator().DropTable(&Label{}))
			require.NoError(t, db.Exec(ddl[d.name]).Error)
			t.Cleanup(func() { db.Migrator().DropTable(&Label{}) })
			for _, c := range []string{"a", "b", "c"} {
				require.NoError(t, admin(db).Create(&Label{Code: c, Name: c}).Error)
			}
			require.NoError(t, as(db, martin).Where("code = ?", "a").First(&Label{}).Error)

			var got []Label
			require.NoError(t, as(db, martin).Order("code").Find(&got).Error)
			assert.Len(t, got, 3)
			err := as(db, david).Find(&[]Label{}).Error
			var le *offlinelock.LockedError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, "martin", le.Holders[0].Owner.User)
			mine, err := p.List(db, offlinelock.Filter{Session: martin.Session})
			require.NoError(t, err)
			assert.Len(t, mine, 3)
		})
	}
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

func TestManyRowsAreLockedInABoundedNumberOfStatements(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 1000)
		count := func(n int, owner offlinelock.Owner) int64 {
			c := &counter{Interface: logger.Discard}
			var got []Account
			require.NoError(t, as(db, owner).Session(&gorm.Session{Logger: c}).Where("id <= ?", n).Find(&got).Error)
			require.Len(t, got, n)
			return c.N.Load()
		}
		few := count(10, martin)
		_, err := p.ReleaseAll(db, martin.Session)
		require.NoError(t, err)
		many := count(1000, david)
		t.Logf("statements: %d for 10 rows, %d for 1000 rows", few, many)
		slack := int64(8)
		if db.Dialector.Name() == "mysql" {
			slack = 16 // no RETURNING or sequences: a batch of 400 new keys costs up to six statements, not three (read which key rows exist, create the missing ones, lock them, take a generation and free its counter row, write)
		}
		assert.LessOrEqual(t, many, few+slack, "1000 rows cost a few more batches, not 990 more statements")
		all, err := p.List(db, offlinelock.Filter{Session: david.Session})
		require.NoError(t, err)
		assert.Len(t, all, 1000)
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

// TestFailClosedCountIsStillFree: a plain count reveals no row and takes no
// lock, even while another session holds rows.
func TestFailClosedCountIsStillFree(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcSeedLoads(t, db)
		require.NoError(t, as(db, martin).First(&Account{}, 129).Error)
		var n int64
		require.NoError(t, as(db, david).Model(&Account{}).Count(&n).Error)
		assert.EqualValues(t, 4, n)
		require.NoError(t, as(db, david).Model(&Account{}).Where("credit > ?", 0).Count(&n).Error)
		assert.EqualValues(t, 4, n)
		assert.Empty(t, fcLocksOf(t, db, p, david))
	})
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

// Class 3: Preload(clause.Associations) is all or nothing.
func TestFailClosedPreloadAssociations(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		desk := uint(9)
		require.NoError(t, admin(db).Create(&Desk{ID: desk, Floor: 3}).Error)
		require.NoError(t, admin(db).Create(&Team{ID: 1, Name: "core", Members: []Member{{ID: 1, DeskID: &desk}, {ID: 2}}}).Error)

		t.Run("team preload refused by a locked member", func(t *testing.T) {
			fcReset(t, db, p)
			require.NoError(t, as(db, martin).First(&Member{}, 2).Error)
			got := Team{Name: "sentinel"}
			err := as(db, david).Preload(clause.Associations).First(&got, 1).Error
			require.ErrorIs(t, err, offlinelock.ErrLocked)
			assert.Equal(t, Team{Name: "sentinel"}, got)
			assert.Empty(t, fcLocksOf(t, db, p, david))
		})
		t.Run("member preload refused by a locked desk", func(t *testing.T) {
			fcReset(t, db, p)
			require.NoError(t, as(db, martin).First(&Desk{}, desk).Error)
			got := []Member{{Name: "sentinel"}}
			err := as(db, david).Preload(clause.Associations).Find(&got).Error
			require.ErrorIs(t, err, offlinelock.ErrLocked)
			assert.Equal(t, []Member{{Name: "sentinel"}}, got)
			assert.Empty(t, fcLocksOf(t, db, p, david), "the members' locks of the refused preload were left")
		})
		t.Run("nested preload refused by a locked desk", func(t *testing.T) {
			fcReset(t, db, p)
			require.NoError(t, as(db, martin).First(&Desk{}, desk).Error)
			err := as(db, david).Preload("Members."+clause.Associations).First(&Team{}, 1).Error
			require.ErrorIs(t, err, offlinelock.ErrLocked)
			assert.Empty(t, fcLocksOf(t, db, p, david))
		})
		t.Run("positive: preload when free locks all", func(t *testing.T) {
			fcReset(t, db, p)
			var got []Member
			require.NoError(t, as(db, david).Preload(clause.Associations).Find(&got).Error)
			require.Len(t, got, 2)
			assert.True(t, fcHolds(t, db, p, &Member{ID: 1}, david, offlinelock.Write))
			assert.True(t, fcHolds(t, db, p, &Desk{ID: desk}, david, offlinelock.Write))
		})
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

// Seat is not lockable, but its Desk is; Room is locked on load and
// reaches a desk through its seat.
type Seat struct {
	ID     uint `gorm:"primaryKey"`
	DeskID *uint
	Desk   *Desk
}

type Room struct {
	ID     uint `gorm:"primaryKey" lock:"exclusive_read"`
	SeatID *uint
	Seat   *Seat
}

func TestJoinedRowsAreLockedAtAnyDepthFromAnyModel(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, db.AutoMigrate(&Seat{}, &Room{}))
		t.Cleanup(func() { db.Migrator().DropTable(&Room{}, &Seat{}) })
		desk, seat := uint(1), uint(1)
		require.NoError(t, admin(db).Create(&Desk{ID: desk, Floor: 2}).Error)
		require.NoError(t, admin(db).Create(&Seat{ID: seat, DeskID: &desk}).Error)
		require.NoError(t, admin(db).Create(&Room{ID: 1, SeatID: &seat}).Error)
		require.NoError(t, as(db, david).First(&Desk{}, desk).Error) // David holds desk 1

		var seats []Seat
		require.ErrorIs(t, as(db, martin).Joins("Desk").Find(&seats).Error, offlinelock.ErrLocked, "a model that is not lockable joining one that is")
		assert.Empty(t, seats)
		var rooms []Room
		require.ErrorIs(t, as(db, martin).Joins("Seat").Joins("Seat.Desk").Find(&rooms).Error, offlinelock.ErrLocked, "a nested join")
		assert.Empty(t, rooms)
		mine, err := p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		assert.Empty(t, mine)

		require.NoError(t, p.Release(as(db, david), &Desk{ID: desk}))
		require.NoError(t, as(db, martin).Joins("Seat").Joins("Seat.Desk").Find(&rooms).Error)
		require.Len(t, rooms, 1)
		require.NotNil(t, rooms[0].Seat)
		require.NotNil(t, rooms[0].Seat.Desk)
		h, err := p.Holders(db, &Desk{ID: desk})
		require.NoError(t, err)
		require.Len(t, h, 1)
		assert.Equal(t, martin, h[0].Owner, "the desk two joins away is Martin's now")
		require.ErrorIs(t, as(db, david).Joins("Desk").Find(&seats).Error, offlinelock.ErrLocked)
	})
}

func TestAStatementRunTwiceStartsClean(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 5)
		for i := uint(1); i <= 5; i++ {
			require.NoError(t, admin(db).Create(&Policy{ID: i}).Error)
		}
		var n int64
		require.NotPanics(t, func() {
			q := as(db, martin).Model(&Account{}).Where("id < ?", 4)
			require.NoError(t, q.Find(&[]Account{}).Error)
			require.NoError(t, q.Count(&n).Error)
			r := as(db, martin).Model(&Policy{}).Where("id < ?", 4)
			require.NoError(t, r.Find(&[]Policy{}).Error)
			require.NoError(t, r.Count(&n).Error)
		})
		var a Account
		q2 := as(db, martin).Where("id = ?", 2)
		require.NoError(t, q2.First(&a).Error)
		require.NoError(t, q2.First(&a).Error, "a fast path's rewrite does not stay on the statement")
		all, err := p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		assert.Len(t, all, 6, "3 accounts and 3 policies, none given back by a second run")
	})
}

// betweenKey carries a function a test callback runs between the plugin's
// lock-ahead and gorm:query: the moment a row can begin to match.
type betweenKey struct{}

// TestAPluckSeesNoRowThatBeganToMatchUnlocked: a row that begins to match
// a Pluck's WHERE after its keys were found and locked, and that another
// session holds, makes the Pluck fail instead of showing it.
func TestAPluckSeesNoRowThatBeganToMatchUnlocked(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, db.Callback().Query().After("offlinelock:before_query").Before("gorm:query").Register("test:between", func(db *gorm.DB) {
			if f, ok := db.Statement.Context.Value(betweenKey{}).(func()); ok {
				f()
			}
		}))
		t.Cleanup(func() { db.Callback().Query().Remove("test:between") })
		require.NoError(t, admin(db).Create(&Account{ID: 1, Name: "vip", Credit: 100}).Error)
		require.NoError(t, admin(db).Create(&Account{ID: 2, Name: "plain", Credit: 100}).Error)
		_, err := p.Acquire(as(db, david), &Account{ID: 2}, offlinelock.Write) // David holds 2
		require.NoError(t, err)

		ctx := context.WithValue(offlinelock.WithOwner(context.Background(), martin), betweenKey{}, func() {
			require.NoError(t, as(db, david).Model(&Account{ID: 2}).Update("name", "vip").Error)
		})
		var names []string
		err = db.WithContext(ctx).Model(&Account{}).Where("name = ?", "vip").Pluck("name", &names).Error
		require.ErrorIs(t, err, offlinelock.ErrLocked, "the row that became a vip is David's: %v", names)
		assert.Empty(t, names)
	})
}

func TestARefusalInTheCallersTransactionLeavesNothing(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 450)
		require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "draft"}).Error)
		require.NoError(t, as(db, david).First(&Account{}, 450).Error)
		ids := make([]uint, 450)
		for i := range ids {
			ids[i] = uint(i + 1)
		}
		// The caller ignores the refusals and commits.
		require.NoError(t, as(db, martin).Transaction(func(tx *gorm.DB) error {
			var got []Account
			assert.ErrorIs(t, tx.Find(&got, ids).Error, offlinelock.ErrLocked)
			assert.ErrorIs(t, tx.Model(&Doc{ID: 1}).Update("title", "unlocked write").Error, offlinelock.ErrNotLocked)
			return nil
		}))
		mine, err := p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		assert.Empty(t, mine, "the refused load left none of its new locks")
		var d Doc
		require.NoError(t, db.First(&d, 1).Error)
		assert.Equal(t, "draft", d.Title, "the refused write did not land")
	})
}

// TestRefusedRawLoadsUpsertsAndJoinsLeaveNothing: a raw load into a DTO
// cannot be seen and is refused; an upsert that could overwrite a row by
// another key is refused; a load refused on a joined row gives back every
// lock of the statement.
func TestRefusedRawLoadsUpsertsAndJoinsLeaveNothing(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, db.AutoMigrate(&Badge{}, &Seat{}, &Room{}))
		t.Cleanup(func() { db.Migrator().DropTable(&Badge{}, &Room{}, &Seat{}) })
		seedAccounts(t, db, 3)
		_, err := p.Acquire(as(db, david), &Account{ID: 3}, offlinelock.Write)
		require.NoError(t, err)

		// A raw query into a DTO cannot be seen, so it is refused (fail closed), and takes no lock.
		var dtos []struct{ Name string }
		require.ErrorIs(t, as(db, martin).Model(&Account{}).Raw(`SELECT name FROM accounts WHERE id = 1`).Find(&dtos).Error, offlinelock.ErrUnenforceable)
		assert.Empty(t, dtos)
		mine, err := p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		assert.Empty(t, mine)

		// Upserts that could overwrite a row by another key, and INSERT OR REPLACE, are refused.
		require.NoError(t, admin(db).Create(&Badge{ID: 2, Code: "b2", Name: "david's"}).Error)
		_, err = p.Acquire(as(db, david), &Badge{ID: 2}, offlinelock.Write)
		require.NoError(t, err)
		err = as(db, martin).Clauses(clause.OnConflict{DoUpdates: clause.AssignmentColumns([]string{"name"})}).Create(&Badge{Code: "b2", Name: "x"}).Error
		require.ErrorIs(t, err, offlinelock.ErrInvalid)
		err = as(db, martin).Clauses(clause.Insert{Modifier: "OR REPLACE"}).Create(&Badge{ID: 2, Code: "b2", Name: "x"}).Error
		require.ErrorIs(t, err, offlinelock.ErrInvalid)
		var b Badge
		require.NoError(t, db.First(&b, 2).Error)
		assert.Equal(t, "david's", b.Name)

		// Rows through a lockable join: a refusal leaves none of the statement's locks.
		desk, seat := uint(5), uint(5)
		require.NoError(t, admin(db).Create(&Desk{ID: desk}).Error)
		require.NoError(t, admin(db).Create(&Desk{ID: 6}).Error)
		require.NoError(t, admin(db).Create(&Seat{ID: seat, DeskID: &desk}).Error)
		require.NoError(t, admin(db).Create(&Room{ID: 1, SeatID: &seat}).Error)
		require.NoError(t, as(db, david).First(&Desk{}, desk).Error)
		rows, err := as(db, martin).Model(&Room{}).Joins("Seat").Joins("Seat.Desk").Rows()
		if err == nil {
			rows.Close()
		}
		require.ErrorIs(t, err, offlinelock.ErrLocked)
		mine, err = p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		assert.Empty(t, mine, "the room's lock was given back when the desk was refused")
	})
}

// FcFindHook is a lockable model whose AfterFind fails for the row named
// "boom".
type FcFindHook struct {
	ID   uint `gorm:"primaryKey" lock:"exclusive_read"`
	Name string
}

func (h *FcFindHook) AfterFind(*gorm.DB) error {
	if h.Name == "boom" {
		return errFcAfterFind
	}
	return nil
}

var errFcAfterFind = errors.New("fc: after find failed")

// Class 3: refused loads leave no lock row behind, also when an AfterFind
// hook fails or the context is cancelled.
func TestFailClosedFailedLoadsLeaveNoLocks(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcDropCleanup(t, db, &FcFindHook{})
		require.NoError(t, admin(db).AutoMigrate(&FcFindHook{}))
		require.NoError(t, admin(db).Create(&[]FcFindHook{{ID: 1, Name: "ok"}, {ID: 2, Name: "boom"}}).Error)
		seedAccounts(t, db, 3)

		t.Run("positive: a load that succeeds keeps its lock", func(t *testing.T) {
			fcReset(t, db, p)
			require.NoError(t, as(db, david).First(&FcFindHook{}, 1).Error)
			assert.True(t, fcHolds(t, db, p, &FcFindHook{ID: 1}, david, offlinelock.Write))
		})
		hookLoads := []struct {
			name string
			load func(tx *gorm.DB) error
		}{
			{"First with failing AfterFind", func(tx *gorm.DB) error { return tx.First(&FcFindHook{}, 2).Error }},
			{"Find all with failing AfterFind", func(tx *gorm.DB) error { return tx.Find(&[]FcFindHook{}).Error }},
			{"Where.Find with failing AfterFind", func(tx *gorm.DB) error {
				return tx.Where("name = ?", "boom").Find(&[]FcFindHook{}).Error
			}},
			{"Transaction ignoring the failed First, committed", func(tx *gorm.DB) error {
				var inner error
				err := tx.Transaction(func(tx *gorm.DB) error {
					inner = tx.First(&FcFindHook{}, 2).Error
					return nil
				})
				if err != nil {
					return err
				}
				return inner
			}},
			{"Transaction returning the failed Find", func(tx *gorm.DB) error {
				return tx.Transaction(func(tx *gorm.DB) error { return tx.Find(&[]FcFindHook{}).Error })
			}},
		}
		for _, l := range hookLoads {
			t.Run(l.name, func(t *testing.T) {
				fcReset(t, db, p)
				err := l.load(as(db, david))
				require.ErrorIs(t, err, errFcAfterFind)
				assert.Empty(t, fcLocksOf(t, db, p, david), "a failed load left its locks")
			})
		}

		t.Run("cancelled context before the load", func(t *testing.T) {
			fcReset(t, db, p)
			ctx, cancel := context.WithCancel(offlinelock.WithOwner(context.Background(), david))
			cancel()
			err := db.WithContext(ctx).First(&Account{}, 2).Error
			require.Error(t, err)
			assert.Empty(t, fcLocksOf(t, db, p, david))
			err = db.WithContext(ctx).Find(&[]Account{}).Error
			require.Error(t, err)
			assert.Empty(t, fcLocksOf(t, db, p, david))
		})

		t.Run("context cancelled between the lock and the query", func(t *testing.T) {
			fcReset(t, db, p)
			type cancelKey struct{}
			require.NoError(t, db.Callback().Query().After("offlinelock:before_query").Before("gorm:query").
				Register("fc:cancel_query", func(tx *gorm.DB) {
					if c, ok := tx.Statement.Context.Value(cancelKey{}).(context.CancelFunc); ok {
						c()
					}
				}))
			t.Cleanup(func() { db.Callback().Query().Remove("fc:cancel_query") })
			for _, load := range []func(*gorm.DB) error{
				func(tx *gorm.DB) error { return tx.First(&Account{}, 2).Error },
				func(tx *gorm.DB) error { return tx.Where("id > ?", 1).Find(&[]Account{}).Error },
			} {
				ctx, cancel := context.WithCancel(offlinelock.WithOwner(context.Background(), david))
				ctx = context.WithValue(ctx, cancelKey{}, cancel)
				err := load(db.WithContext(ctx))
				cancel()
				require.Error(t, err)
				assert.Empty(t, fcLocksOf(t, db, p, david), "a cancelled load left its locks")
			}
		})
	})
}

// The Martin and David scenarios of the walk-through, played through the
// callbacks alone (the lost update is in write_test.go).

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

type FtSoftR struct {
	ID        uint `gorm:"primaryKey" lock:"exclusive_read"`
	Name      string
	DeletedAt gorm.DeletedAt
}

type FtSoftRView struct {
	ID   uint
	Name string
}

func (FtSoftRView) TableName() string { return "ft_soft_rs" }

// TestFailClosedUnscopedLoadsOfSoftDeletedRows: row 129 is soft-deleted
// and Martin holds its lock; Unscoped loads reach it.
func TestFailClosedUnscopedLoadsOfSoftDeletedRows(t *testing.T) {
	loads := []struct {
		name string
		load func(tx *gorm.DB) ([]string, error)
	}{
		{"Unscoped.First(model)", func(tx *gorm.DB) ([]string, error) {
			var v FtSoftR
			err := tx.Unscoped().First(&v, 129).Error
			return []string{v.Name}, err
		}},
		{"Unscoped.Where.Find(model)", func(tx *gorm.DB) ([]string, error) {
			var v []FtSoftR
			err := tx.Unscoped().Where("name = ?", "secret").Find(&v).Error
			var out []string
			for _, r := range v {
				out = append(out, r.Name)
			}
			return out, err
		}},
		{"Unscoped.Model.Pluck", func(tx *gorm.DB) ([]string, error) {
			var v []string
			err := tx.Unscoped().Model(&FtSoftR{}).Where("id > ?", 100).Pluck("name", &v).Error
			return v, err
		}},
		{"Unscoped.Model.Find([]map)", func(tx *gorm.DB) ([]string, error) {
			var v []map[string]any
			err := tx.Unscoped().Model(&FtSoftR{}).Where("id > ?", 100).Find(&v).Error
			var out []string
			for _, r := range v {
				out = append(out, fmt.Sprint(r["name"]))
			}
			return out, err
		}},
		{"Unscoped.Model.Rows", func(tx *gorm.DB) ([]string, error) {
			return fmRowNames(tx.Unscoped().Model(&FtSoftR{}).Select("name").Where("id > ?", 100))
		}},
		{"Unscoped.Find(DTO)", func(tx *gorm.DB) ([]string, error) {
			var v []FtSoftRView
			err := tx.Unscoped().Where("id > ?", 100).Find(&v).Error
			var out []string
			for _, r := range v {
				out = append(out, r.Name)
			}
			return out, err
		}},
	}
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p, _ := ftSetup(t, d, []any{&FtSoftR{}})
			require.NoError(t, admin(db).Create(&[]FtSoftR{{ID: 1, Name: "one"}, {ID: 129, Name: "secret"}}).Error)
			require.NoError(t, admin(db).Delete(&FtSoftR{ID: 129}).Error)
			for _, l := range loads {
				t.Run(l.name, func(t *testing.T) {
					fcReset(t, db, p)
					_, err := p.Acquire(as(db, martin), &FtSoftR{ID: 129}, offlinelock.Write)
					require.NoError(t, err)
					var got []string
					err = fcSafe(t, func() error { var e error; got, e = l.load(as(db, david)); return e })
					assert.NotContains(t, got, "secret", "David read soft-deleted row 129 held by Martin")
					fmRefused(t, err, "David's Unscoped load")
					assert.Empty(t, fcLocksOf(t, db, p, david))
					err = fcSafe(t, func() error { var e error; got, e = l.load(as(db, martin)); return e })
					require.NoError(t, err, "the holder")
					assert.Contains(t, got, "secret")
				})
			}
		})
	}
}

// FtPol takes shared Read locks on load.
