package plugin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// LimitTeam's cards are locked on load (exclusive_read).
type LimitTeam struct {
	ID    uint `gorm:"primaryKey"`
	Cards []LimitCard
}

type LimitCard struct {
	ID          uint `gorm:"primaryKey" lock:"exclusive_read"`
	LimitTeamID uint
	Body        string
}

// TestPreloadWithLimitPerRecord: GORM's generics Preload with
// LimitPerRecord reads its table through a subquery (Table("(?) t", …)).
// It is enforced exactly: the rows it returns are locked, a row it does
// not return is not, another session's lock on a returned row refuses it;
// a subquery that reads another table locked on load is still refused.
func TestPreloadWithLimitPerRecord(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{Models: []any{&Account{}}}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, db.Migrator().DropTable(&LimitTeam{}, &LimitCard{}))
		require.NoError(t, db.AutoMigrate(&LimitTeam{}, &LimitCard{}))
		t.Cleanup(func() { db.Migrator().DropTable(&LimitTeam{}, &LimitCard{}) })
		require.NoError(t, admin(db).Create(&LimitTeam{ID: 1, Cards: []LimitCard{{ID: 1}, {ID: 2}, {ID: 3}}}).Error)
		p.Release(as(db, martin), &LimitCard{ID: 1}) // admin's setup ran as martin
		p.ReleaseAll(as(db, martin), martin.Session)
		_, err := p.Acquire(as(db, david), &LimitCard{ID: 1}, offlinelock.Write) // not among the two newest
		require.NoError(t, err)

		twoNewest := func(pb gorm.PreloadBuilder) error { pb.LimitPerRecord(2); return nil }
		teams, err := gorm.G[LimitTeam](db).Preload("Cards", twoNewest).Find(offlinelock.WithOwner(context.Background(), martin))
		require.NoError(t, err)
		require.Len(t, teams, 1)
		var ids []uint
		for _, c := range teams[0].Cards {
			ids = append(ids, c.ID)
		}
		assert.Equal(t, []uint{3, 2}, ids)
		for id, who := range map[uint]string{1: "david", 2: "martin", 3: "martin"} {
			h, err := p.Holders(db, &LimitCard{ID: id})
			require.NoError(t, err)
			require.Len(t, h, 1, "card %d", id)
			assert.Equal(t, who, h[0].Owner.User, "card %d", id)
		}

		_, err = gorm.G[LimitTeam](db).Preload("Cards", twoNewest).Find(offlinelock.WithOwner(context.Background(), david))
		require.ErrorIs(t, err, offlinelock.ErrLocked, "cards 2 and 3 are martin's")

		// Any other subquery as the table stays refused: a computed key
		// column would lock other rows than the ones it shows.
		for name, inner := range map[string]*gorm.DB{
			"another table locked on load": db.Table("accounts").Select("id, 0 AS limit_team_id, name AS body"),
			"a computed key":               db.Model(&LimitCard{}).Select("id + 100 AS id, limit_team_id, body").Where("id = 2"),
			"an aggregate":                 db.Model(&LimitCard{}).Select("MIN(id) AS id, 0 AS limit_team_id, MAX(body) AS body"),
			"a constant key":               db.Model(&LimitCard{}).Select("1 AS id, limit_team_id, body").Where("id = 3"),
			"raw SQL":                      db.Raw("SELECT * FROM limit_cards WHERE id = 2 UNION ALL SELECT * FROM limit_cards"),
		} {
			var cards []LimitCard
			err = as(db, david).Table("(?) t", inner).Find(&cards).Error
			require.ErrorIs(t, err, offlinelock.ErrUnenforceable, name)
			assert.Empty(t, cards, name)
		}
	})
}
