package lockstore

import (
	"time"
)

// Key names one lockable record in the lock table: its resource (the
// table of the record, or of its aggregate's root) and its primary Key as
// text, spelt one way (the root package's Key.go).
type Key struct{ Resource, ID string }

// Owner is who holds a lock: the session that decides, and the user name
// shown to others. The root package's Owner converts to it directly.
type Owner struct {
	Session string
	User    string
}

// Access is what one lock grants.
type Access string

const (
	// Read is shared: many sessions may hold it together, but not while
	// another session holds Write.
	Read Access = "read"
	// Write is exclusive; the only reader may upgrade its Read to Write.
	Write Access = "write"
)

// Lock is one lock as the lock table has it. Token is filled only for a
// fresh grant; Reason only where the statement read it.
type Lock struct {
	Resource, ID          string
	Access                Access
	Owner                 Owner
	Token                 string
	Generation            int64
	AcquiredAt, ExpiresAt time.Time
	Reason                string
}

// Filter selects locks for List: empty fields match everything.
type Filter struct {
	Resource, ID  string
	User, Session string
	Expired       bool
	Limit         int
}

// Stats is what Stats counts (the root's Stats documents each figure).
type Stats struct {
	Live                      int64
	ByResource, ByUser        []Count
	Oldest                    *Lock
	ExpiredRows, ExpiredLocks int64
}

// Count is how many live locks one resource or one user holds.
type Count struct {
	Name  string
	Locks int64
}

// CatalogRow is one row of the catalog of lockable tables: the table's
// name and its spec, bytes the store keeps and never reads.
type CatalogRow struct {
	Name string
	Spec []byte
}

// KeyKind is how a key column's values are spelt in the lock table (the
// root's key.go decides it from the model; the guard spells it in SQL).
type KeyKind uint8

const (
	KindText  KeyKind = iota // as given: text columns compare exactly
	KindInt                  // decimal, no sign for positives, no leading zeros
	KindUUID                 // lower-case, hyphenated 8-4-4-4-12
	KindBytes                // hex
	KindFold                 // lower-cased: a case-insensitive collation (NOCASE, citext, *_ci)
	KindChar                 // trailing spaces dropped: char(n) pads, and compares without them; SQLite RTRIM
)

// textual says whether keys of kind k are text the database may compare
// by a collation.
func (k KeyKind) textual() bool { return k == KindText || k == KindFold || k == KindChar }

// KeyColumns is what a check of a model's key columns sees of it: the
// table, the model's name for errors, and the columns that name its
// records (a member's link to its root) with their kinds.
type KeyColumns struct {
	Table, Model string
	Columns      []string
	Kinds        []KeyKind
}

// HeldUnknown is the hold time Release reports where the store did not
// learn it without another statement (MySQL's Write locks).
const HeldUnknown time.Duration = -1

// BatchSize bounds the keys or rows one statement carries: a load of many
// rows locks them in a number of statements that grows with
// rows/BatchSize, not with rows.
const BatchSize = batchSize

// SortKeys sorts keys in place in the one order every statement takes key
// rows in, (resource, lock_id) byte order, and returns them.
func SortKeys(keys []Key) []Key { return sortKeys(keys) }
