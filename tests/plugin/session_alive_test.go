package plugin_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// TestSweepEndsTheLocksOfEndedSessions: with Config.SessionAlive, Sweep
// releases every lock of a session the application's session store no
// longer knows, asks once per session, and leaves the locks of live
// sessions, and of sessions it could not ask about, alone.
func TestSweepEndsTheLocksOfEndedSessions(t *testing.T) {
	eve := offlinelock.Owner{Session: "E1", User: "eve"}
	var mu sync.Mutex
	asked := map[string]int{}
	alive := func(_ context.Context, o offlinelock.Owner) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		asked[o.Session]++
		switch o.Session {
		case martin.Session:
			return false, nil // signed out, or timed out in the session store
		case eve.Session:
			return false, errors.New("session store unreachable")
		}
		return true, nil
	}
	eachDBWithModels(t, offlinelock.Config{SessionAlive: alive}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		clear(asked)
		for _, h := range []struct {
			o  offlinelock.Owner
			id uint
		}{{martin, 1}, {martin, 2}, {david, 3}, {eve, 4}} {
			_, err := p.Acquire(as(db, h.o), &Doc{ID: h.id}, offlinelock.Write)
			require.NoError(t, err)
		}
		n, err := p.Sweep(db)
		require.NoError(t, err)
		assert.Equal(t, int64(2), n, "martin's two locks")
		assert.Equal(t, map[string]int{martin.Session: 1, david.Session: 1, eve.Session: 1}, asked)
		left, err := p.List(db, offlinelock.Filter{})
		require.NoError(t, err)
		var owners []string
		for _, l := range left {
			owners = append(owners, l.Owner.User+"/"+l.ID)
		}
		assert.ElementsMatch(t, []string{"david/3", "eve/4"}, owners)
		_, err = p.Acquire(as(db, david), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err, "martin's record is free")
	})
}
