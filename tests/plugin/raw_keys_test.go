package plugin_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// TestRawReadsLockTheRowsTheyShow: a raw SELECT into a model locked on
// load locks each row by the key it carries, so a key that is not the
// row's own would lock one record and show another: Martin holds account
// 129; David's raw reads that show its row under the key of account 229
// (computed, renamed, aggregated, from a subquery, a set operation or a
// joined table) are refused, and nothing is locked for him. A raw read of
// the table's rows as stored still locks them.
func TestRawReadsLockTheRowsTheyShow(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&[]Account{{ID: 129, Name: "held", Credit: 9999}, {ID: 130, Name: "free", Credit: 1}}).Error)
		require.NoError(t, as(db, martin).First(&Account{}, 129).Error)
		for _, q := range []string{
			"SELECT id + 100 AS id, name, credit FROM accounts WHERE id = 129",
			"SELECT credit AS id, name FROM accounts WHERE id = 129",
			"SELECT id, name, credit, id + 100 AS id FROM accounts WHERE id = 129",
			"SELECT MAX(id) + 100 AS id, MAX(name) AS name FROM accounts",
			"SELECT * FROM (SELECT id + 100 AS id, name, credit FROM accounts) t WHERE id = 229",
			"SELECT 229 AS id, name, credit FROM accounts WHERE id = 129",
			"SELECT id, name, credit FROM accounts WHERE id = 130 UNION SELECT id + 100, name, credit FROM accounts WHERE id = 129",
			"SELECT b.id, a.name, a.credit FROM accounts a JOIN accounts b ON b.id = 130 WHERE a.id = 129",
		} {
			var got []Account
			err := as(db, david).Raw(q).Find(&got).Error
			require.ErrorIs(t, err, offlinelock.ErrUnenforceable, q)
			for _, a := range got {
				assert.NotEqual(t, "held", a.Name, "%s showed martin's row", q)
			}
		}
		held, err := p.List(db, offlinelock.Filter{User: david.User})
		require.NoError(t, err)
		assert.Empty(t, held, "nothing locked for david")

		var free []Account
		require.NoError(t, as(db, david).Raw("SELECT id, name, credit FROM accounts WHERE id = 130").Find(&free).Error)
		require.Len(t, free, 1)
		assert.Equal(t, "free", free[0].Name)
		holders, err := p.Holders(db, &Account{ID: 130})
		require.NoError(t, err)
		require.Len(t, holders, 1, "the row it showed is locked")
		assert.Equal(t, david, holders[0].Owner)
		require.ErrorIs(t, as(db, david).Raw("SELECT * FROM accounts WHERE id = 129").Find(&[]Account{}).Error, offlinelock.ErrLocked)
	})
}
