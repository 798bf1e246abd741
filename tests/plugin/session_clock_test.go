package plugin_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// TestLeakedSessionClockMovesNoLock: a session setting an application
// left on a pooled connection (MariaDB's SET timestamp, which moves
// NOW() and UTC_TIMESTAMP(); a far time zone) must not move the clock the
// plugin's own statements judge and write expiries by. With one
// connection in the pool, the application's setting reaches every
// statement the plugin sends: a clock two hours ahead would let another
// session take a live lock and the sweep delete it; two hours behind, a
// new lock would be written already expired. SQLite and PostgreSQL have
// no such setting for the clock (clock_timestamp() is the wall clock);
// there the leaks are a time zone, and the same steps must hold.
func TestLeakedSessionClockMovesNoLock(t *testing.T) {
	leaks := map[string][]string{
		"sqlite":   {"PRAGMA case_sensitive_like = 0"}, // no clock setting exists: the control
		"postgres": {"SET TIME ZONE 'Pacific/Kiritimati'", "SET TIME ZONE 'Etc/GMT+12'"},
		"mysql": {"SET timestamp = UNIX_TIMESTAMP() + 7200", "SET timestamp = UNIX_TIMESTAMP() - 7200",
			"SET time_zone = '+13:00'", "SET time_zone = '-12:00'"},
	}
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setup(t, d, offlinelock.Config{})
			sqlDB, err := db.DB()
			require.NoError(t, err)
			sqlDB.SetMaxOpenConns(1) // the leak reaches every statement of the plugin's
			for i, leak := range leaks[d.name] {
				t.Run(leak, func(t *testing.T) {
					live, fresh := &Doc{ID: uint(100 + 2*i)}, &Doc{ID: uint(101 + 2*i)}
					_, err := p.Acquire(as(db, martin), live, offlinelock.Write)
					require.NoError(t, err)
					require.NoError(t, db.Exec(leak).Error)
					t.Cleanup(func() {
						resetClock(t, db, d.name)
						_, err := p.ReleaseAll(as(db, martin), martin.Session)
						require.NoError(t, err)
					})

					_, err = p.Acquire(as(db, david), live, offlinelock.Write)
					require.ErrorIs(t, err, offlinelock.ErrLocked, "david took martin's live lock")
					_, err = p.Sweep(admin(db))
					require.NoError(t, err)
					held, err := p.List(admin(db), offlinelock.Filter{Resource: "docs", ID: strconv.Itoa(int(live.ID))})
					require.NoError(t, err)
					require.Len(t, held, 1, "the sweep deleted martin's live lock")

					before := time.Now()
					l, err := p.Acquire(as(db, martin), fresh, offlinelock.Write)
					require.NoError(t, err)
					require.WithinDuration(t, before.Add(offlinelock.DefaultTTL), l.ExpiresAt, time.Minute, "an expiry not by the wall clock")
					resetClock(t, db, d.name)
					_, err = p.Acquire(as(db, david), fresh, offlinelock.Write)
					require.ErrorIs(t, err, offlinelock.ErrLocked, "martin's new lock was written expired")
				})
			}
		})
	}
}

// resetClock undoes the leaks on the pool's one connection.
func resetClock(t *testing.T, db *gorm.DB, dialect string) {
	q := map[string]string{"postgres": "RESET TIME ZONE", "mysql": "SET timestamp = DEFAULT, time_zone = DEFAULT"}[dialect]
	if q != "" {
		require.NoError(t, db.Exec(q).Error)
	}
}
