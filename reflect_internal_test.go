package offlinelock

import (
	"testing"

	"gorm.io/gorm"
)

// TestReflectionFailsClosed pins the two checks that read GORM's
// unexported fields: on a shape without the field they answer the safe
// way (Scopes pending: the subquery is opaque; the callback chain not the
// plugin's own: the fence keeps its own statement), and on today's GORM
// they still find the fields, so that a GORM upgrade that renames them
// fails here instead of silently refusing or passing.
func TestReflectionFailsClosed(t *testing.T) {
	type statementWithoutScopes struct{ Table string }
	type processorWithoutCallbacks struct{ _ []func(*gorm.DB) } // a processor's shape, lacking the callbacks field
	if !pendingScopes(&statementWithoutScopes{}) {
		t.Error("a statement without a scopes field must count as having Scopes")
	}
	if !pendingScopes(nil) {
		t.Error("a nil statement must count as having Scopes")
	}
	if (&chainCache{}).own(&processorWithoutCallbacks{}) {
		t.Error("a processor without a callbacks field has no count, and is not the plugin's own chain")
	}

	db, err := gorm.Open(nil, &gorm.Config{DisableAutomaticPing: true})
	if err != nil {
		t.Fatal(err)
	}
	if pendingScopes(&gorm.Statement{}) {
		t.Error("GORM's Statement no longer has an unexported scopes slice: pendingScopes refuses every subquery")
	}
	if s := db.Scopes(func(d *gorm.DB) *gorm.DB { return d }).Statement; !pendingScopes(s) {
		t.Error("a statement with a Scope must count as having Scopes")
	}
	if !(&chainCache{}).own(db.Callback().Query()) {
		t.Error("GORM's callback processor no longer has an unexported callbacks slice: the fence never folds")
	}
}
