package offlinelock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock"
)

// Badge has a unique key besides its primary key.
type Badge struct {
	ID   uint   `gorm:"primaryKey" lock:"exclusive_write"`
	Code string `gorm:"uniqueIndex"`
	Name string
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

func TestSecondReviewFindings(t *testing.T) {
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

func TestAMemberWriteByKeyCannotReachOtherRoots(t *testing.T) {
	eachDBWithAggregates(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedOrder(t, db, 7, 1)
		seedOrder(t, db, 8, 1)
		_, err := p.Acquire(as(db, martin), &Order{ID: 7}, offlinelock.Write)
		require.NoError(t, err)
		_, err = p.Acquire(as(db, david), &Order{ID: 8}, offlinelock.Write)
		require.NoError(t, err)
		err = as(db, martin).Model(&LineItem{ID: 70000}).Or("order_id = ?", 8).Update("qty", 0).Error
		require.Error(t, err)
		var l LineItem
		require.NoError(t, admin(db).First(&l, 80000).Error)
		assert.Equal(t, 1, l.Qty, "order 8's line is untouched")
	})
}
