package plugin_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// floodNote is a row of the notes table, written straight into it: the
// notes of many users asking to edit, without their rate limits.
type floodNote struct {
	Resource, LockID, Kind, ByUser, Reason string
	Generation                             int64
	At                                     time.Time
}

// flood writes n requests to edit doc id, by users prefix0, prefix1 ….
func flood(t *testing.T, db *gorm.DB, p *offlinelock.Plugin, id, prefix string, n int) {
	t.Helper()
	notes := make([]floodNote, n)
	for i := range notes {
		notes[i] = floodNote{Resource: "docs", LockID: id, Kind: string(offlinelock.EventRequested), ByUser: prefix + strconv.Itoa(i), Generation: 1, At: time.Now().UTC()}
	}
	require.NoError(t, db.Table(lockTableOf(p)+"_notes").CreateInBatches(notes, 200).Error)
}

// TestAFloodOfNotesLosesNone: a watcher reads the notes of the records it
// watches only, every one of them: 1,500 notes of an unwatched record
// within the minute a poll looks back on (more than one read of the notes
// table returns) hide none of a watched record's notes written after
// them; 1,500 notes of one watched record, read page after page, delay
// no other watched record's take-over beyond the 2 s promise, nor the
// flooded record's own take-over after them. Before, each poll read the
// oldest 1,000 notes of the minute across all records, watched or not,
// and lost the rest.
func TestAFloodOfNotesLosesNone(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{Authorize: onlyBossTakesOver, WatchEvery: 50 * time.Millisecond}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for _, id := range []uint{1, 2} {
			_, err := p.Acquire(as(db, martin), &Doc{ID: id}, offlinelock.Write)
			require.NoError(t, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		one, err := p.Watch(ctx, db, &Doc{ID: 1})
		require.NoError(t, err)
		two, err := p.Watch(ctx, db, &Doc{ID: 2})
		require.NoError(t, err)
		require.Equal(t, offlinelock.EventLocked, next(t, one).Kind)
		require.Equal(t, offlinelock.EventLocked, next(t, two).Kind)

		// Notes of an unwatched record, then five of a watched one: all
		// five are told, in order.
		flood(t, db, p, "3", "u", 1500)
		flood(t, db, p, "2", "asker", 5)
		var askers []string
		for range 5 {
			askers = append(askers, nextOf(t, two, offlinelock.EventRequested).By)
		}
		assert.Equal(t, []string{"asker0", "asker1", "asker2", "asker3", "asker4"}, askers)

		// A flood of one watched record's notes, read page after page,
		// and take-overs of both records after it.
		flood(t, db, p, "2", "v", 1500)
		require.Equal(t, offlinelock.EventRequested, next(t, two).Kind, "the flood is being told")
		taken, err := p.TakeOver(as(db, boss), &Doc{ID: 1}, "urgent")
		require.NoError(t, err)
		at := time.Now()
		e := nextOf(t, one, offlinelock.EventTakenOver)
		assert.Less(t, time.Since(at), 2*time.Second, "told within the 2 s promise")
		assert.Equal(t, []any{taken.Generation, "urgent", "boss"}, []any{e.Lock.Generation, e.Reason, e.By})

		taken, err = p.TakeOver(as(db, boss), &Doc{ID: 2}, "after the flood")
		require.NoError(t, err)
		at = time.Now()
		for e = next(t, two); e.Kind == offlinelock.EventRequested; e = next(t, two) {
		}
		assert.Less(t, time.Since(at), 2*time.Second, "told within the 2 s promise")
		assert.Equal(t, []any{offlinelock.EventTakenOver, taken.Generation, "after the flood"}, []any{e.Kind, e.Lock.Generation, e.Reason})
	})
}
