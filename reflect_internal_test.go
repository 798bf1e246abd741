package offlinelock

import (
	"testing"

	"gorm.io/gorm"
)

// TestReflectionFailsClosed pins the check that reads GORM's unexported
// callbacks field (internal/gormstmt pins the one of scopes): on a shape
// without the field it answers the safe way (the callback chain not the
// plugin's own: the fence keeps its own statement), and on today's GORM it
// still finds the field, so that a GORM upgrade that renames it fails here
// instead of silently passing.
func TestReflectionFailsClosed(t *testing.T) {
	type processorWithoutCallbacks struct{ _ []func(*gorm.DB) } // a processor's shape, lacking the callbacks field
	if (&chainCache{}).own(&processorWithoutCallbacks{}) {
		t.Error("a processor without a callbacks field has no count, and is not the plugin's own chain")
	}

	db, err := gorm.Open(nil, &gorm.Config{DisableAutomaticPing: true})
	if err != nil {
		t.Fatal(err)
	}
	if !(&chainCache{}).own(db.Callback().Query()) {
		t.Error("GORM's callback processor no longer has an unexported callbacks slice: the fence never folds")
	}
}
