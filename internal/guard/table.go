package guard

import (
	"strings"

	"github.com/offlinelock/offlinelock/internal/lockstore"
)

// Table is what the guard needs of one lockable table of the catalog.
type Table struct {
	Name  string
	Key   []Column // the record's key columns, for a table that is its own root
	Root  *Root    // a member's link to its root, or nil
	Links []Link   // the many2many join tables that hold this table's key
}

// Column is one key column and the kind of key it holds.
type Column struct {
	Name string
	Kind lockstore.KeyKind
}

// Root is a member's link to its root: Column holds the key of Table's row.
type Root struct {
	Table, Column string
}

// Link is a many2many join table (Join) whose Column holds this table's
// key column Key ("" for a one-column key).
type Link struct {
	Join, Column, Key string
}

// resourceOf is the lock resource of t's records: its root's, up the
// chain of the catalog, or its own table's.
func resourceOf(tables map[string]Table, t Table) string {
	for i := 0; t.Root != nil && i < 16; i++ {
		up, ok := tables[strings.ToLower(t.Root.Table)]
		if !ok {
			return t.Root.Table
		}
		t = up
	}
	return t.Name
}
