package lockstore

import (
	"time"
)

// Key names one lockable record: its resource and its primary key as text.
type Key struct{ Resource, ID string }

// Owner is who holds a lock: the deciding session and the user shown.
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

// Lock is one lock row; Token only for a fresh grant, Reason only where read.
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

// CatalogRow is one catalog row: a table's name and its opaque spec.
type CatalogRow struct {
	Name string
	Spec []byte
}

// KeyKind is how a key column's values are spelt in the lock table.
type KeyKind uint8

const (
	KindText  KeyKind = iota // as given: text columns compare exactly
	KindInt                  // decimal, no sign for positives, no leading zeros
	KindUUID                 // lower-case, hyphenated 8-4-4-4-12
	KindBytes                // hex
	KindFold                 // lower-cased: a case-insensitive collation (NOCASE, citext, *_ci)
	KindChar                 // trailing spaces dropped: char(n) pads, and compares without them; SQLite RTRIM
)

// textual says whether kind k compares by a collation.
func (k KeyKind) textual() bool { return k == KindText || k == KindFold || k == KindChar }

// KeyColumns is the table, model name and key columns (with kinds) of a
// model whose key columns are checked.
type KeyColumns struct {
	Table, Model string
	Columns      []string
	Kinds        []KeyKind
}

// HeldUnknown is the hold time Release reports where it did not learn it.
const HeldUnknown time.Duration = -1

// BatchSize bounds the keys or rows one statement carries.
const BatchSize = batchSize

// SortKeys sorts keys in place in (resource, lock_id) byte order.
func SortKeys(keys []Key) []Key { return sortKeys(keys) }
