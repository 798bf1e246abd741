package plugin_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// expireNow makes every row of the record's locks expired on the database
// clock: it moves expires_at back to acquired_at, which is in the past.
func expireNow(t *testing.T, db *gorm.DB, table, resource, id string) {
	t.Helper()
	q := `UPDATE "` + table + `" SET expires_at = acquired_at WHERE resource = ? AND lock_id = ?`
	if db.Dialector.Name() == "mysql" {
		q = "UPDATE `" + table + "` SET expires_at = acquired_at WHERE resource = ? AND lock_id = ?"
	}
	require.NoError(t, db.Exec(q, resource, id).Error)
}

func TestStatsCountsLiveLocksOldestAndExpiredRows(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			table := "ol_" + randomHex(6)
			db, p := setup(t, d, offlinelock.Config{Table: table})

			s, err := p.Stats(db)
			require.NoError(t, err)
			assert.Equal(t, offlinelock.Stats{ByResource: []offlinelock.Count{}, ByUser: []offlinelock.Count{}}, s, "empty table")

			first, err := p.Acquire(as(db, martin), &Customer{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			for _, a := range []struct {
				o      offlinelock.Owner
				target any
				access offlinelock.Access
			}{
				{martin, &Customer{ID: 2}, offlinelock.Write},
				{martin, &Doc{ID: 1}, offlinelock.Write},
				{david, &Doc{ID: 2}, offlinelock.Write},
				{martin, &Policy{ID: 1}, offlinelock.Read},
				{david, &Policy{ID: 1}, offlinelock.Read},
			} {
				_, err := p.Acquire(as(db, a.o), a.target, a.access)
				require.NoError(t, err)
			}
			first.Token = ""

			s, err = p.Stats(db)
			require.NoError(t, err)
			assert.Equal(t, offlinelock.Stats{
				Live:       6,
				ByResource: []offlinelock.Count{{Name: "customers", Locks: 2}, {Name: "docs", Locks: 2}, {Name: "policies", Locks: 2}},
				ByUser:     []offlinelock.Count{{Name: "martin", Locks: 4}, {Name: "david", Locks: 2}},
				Oldest:     first,
			}, s)

			// One Write lock (one row) and one record's two Read locks (two
			// reader rows and their key row) expire: four rows.
			expireNow(t, db, table, "customers", "2")
			expireNow(t, db, table, "policies", "1")
			s, err = p.Stats(db)
			require.NoError(t, err)
			assert.Equal(t, offlinelock.Stats{
				Live:         3,
				ByResource:   []offlinelock.Count{{Name: "docs", Locks: 2}, {Name: "customers", Locks: 1}},
				ByUser:       []offlinelock.Count{{Name: "martin", Locks: 2}, {Name: "david", Locks: 1}},
				Oldest:       first,
				ExpiredRows:  4,
				ExpiredLocks: 3, // as List(Filter{Expired: true}) shows them
			}, s)
			expired, err := p.List(db, offlinelock.Filter{Expired: true})
			require.NoError(t, err)
			assert.Len(t, expired, int(s.ExpiredLocks))

			n, err := p.Sweep(db)
			require.NoError(t, err)
			assert.EqualValues(t, 4, n, "the sweep deletes the rows Stats counted")
			after, err := p.Stats(db)
			require.NoError(t, err)
			s.ExpiredRows, s.ExpiredLocks = 0, 0
			assert.Equal(t, s, after)
		})
	}
}

func TestStatsGroupsAreCapped(t *testing.T) {
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		var want []offlinelock.Count
		for i := range offlinelock.StatsGroups + 1 {
			o := offlinelock.Owner{Session: fmt.Sprintf("S%03d", i), User: fmt.Sprintf("u%03d", i)}
			_, err := p.Acquire(as(db, o), &Policy{ID: 1}, offlinelock.Read)
			require.NoError(t, err)
			if i < offlinelock.StatsGroups {
				want = append(want, offlinelock.Count{Name: o.User, Locks: 1})
			}
		}
		_, err := p.Acquire(as(db, offlinelock.Owner{Session: "S000", User: "u000"}), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		want[0].Locks = 2 // most first: u000, then the others by name

		s, err := p.Stats(db)
		require.NoError(t, err)
		assert.EqualValues(t, offlinelock.StatsGroups+2, s.Live, "Live counts every lock")
		assert.Equal(t, want, s.ByUser, "the first StatsGroups users; u100 is left out")
		assert.Equal(t, []offlinelock.Count{{Name: "policies", Locks: offlinelock.StatsGroups + 1}, {Name: "docs", Locks: 1}}, s.ByResource)
	})
}
