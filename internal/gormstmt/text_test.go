package gormstmt

import (
	"testing"

	"gorm.io/gorm"
)

// TestPendingScopesFailsClosed pins the reading of GORM's unexported
// scopes field: on a shape without the field it answers the safe way
// (Scopes pending: the subquery is opaque), and on today's GORM it still
// finds the field, so that a GORM upgrade that renames it fails here
// instead of silently refusing every subquery.
func TestPendingScopesFailsClosed(t *testing.T) {
	type statementWithoutScopes struct{ Table string }
	if !pendingScopes(&statementWithoutScopes{}) {
		t.Error("a statement without a scopes field must count as having Scopes")
	}
	if !pendingScopes(nil) {
		t.Error("a nil statement must count as having Scopes")
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
}
