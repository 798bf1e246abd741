package guard

import (
	"testing"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
)

// A composite key is spelled as the root's encodeKey writes it: each part
// escaped, joined with ','; a one-column key as it is.
func TestEncodeKeyEscapesEachPartOfACompositeKey(t *testing.T) {
	if got := encodeKey([]string{"a"}, `'\\'`); got != "a" {
		t.Fatalf("one part: %s", got)
	}
	want := `CONCAT(REPLACE(REPLACE(a, '\\', CONCAT('\\', '\\')), ',', CONCAT('\\', ',')), ',', ` +
		`REPLACE(REPLACE(b, '\\', CONCAT('\\', '\\')), ',', CONCAT('\\', ',')))`
	if got := encodeKey([]string{"a", "b"}, `'\\'`); got != want {
		t.Fatalf("two parts:\n got %s\nwant %s", got, want)
	}
}

// A parent's action goes on through a child's key when it deletes the
// parent's rows and the child follows deletes, or changes the column the
// child references and the child follows key changes.
func TestReachesFollowsTheSecondLevelOnly(t *testing.T) {
	cc := lockstore.GuardCascade{ParentColumn: "id", OnDelete: "CASCADE"}
	for _, c := range []struct {
		up   lockstore.GuardCascade
		cc   lockstore.GuardCascade
		want bool
	}{
		{lockstore.GuardCascade{OnDelete: "CASCADE"}, cc, true},
		{lockstore.GuardCascade{OnDelete: "SET NULL", Column: "id"}, cc, false},
		{lockstore.GuardCascade{OnDelete: "SET NULL", Column: "id"}, lockstore.GuardCascade{ParentColumn: "id", OnUpdate: "CASCADE"}, true},
		{lockstore.GuardCascade{OnUpdate: "CASCADE", Column: "other"}, lockstore.GuardCascade{ParentColumn: "id", OnUpdate: "CASCADE"}, false},
	} {
		if got := reaches(c.up, c.cc); got != c.want {
			t.Errorf("reaches(%+v, %+v) = %v, want %v", c.up, c.cc, got, c.want)
		}
	}
}

// A member's resource is its root's, up the chain of the catalog.
func TestResourceOfClimbsToTheRoot(t *testing.T) {
	tables := map[string]model.Spec{
		"orders": {Table: "orders"},
		"lines":  {Table: "lines", Root: &model.SpecRoot{Table: "Orders", Column: "order_id"}},
		"notes":  {Table: "notes", Root: &model.SpecRoot{Table: "lines", Column: "line_id"}},
	}
	if got := resourceOf(tables, tables["notes"]); got != "orders" {
		t.Fatalf("got %s", got)
	}
	if got := resourceOf(tables, model.Spec{Table: "x", Root: &model.SpecRoot{Table: "gone"}}); got != "gone" {
		t.Fatalf("unknown root: %s", got)
	}
}
