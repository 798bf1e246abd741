package lockstore

import (
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// What a store can do beyond Store is resolved once (Traits), so the plugin
// reads a field, and the assertions at the end keep a capability from
// silently going.

// Traits is what one store's database can do; a nil interface is a lack.
type Traits struct {
	// RowLocks: reads of the application's rows must lock them (not SQLite).
	RowLocks bool
	// ShareLock is a share-mode locking read (" FOR SHARE"); "" without RowLocks.
	ShareLock string
	// UpdateOf: FOR UPDATE OF t locks t's rows alone (PostgreSQL).
	UpdateOf bool
	// SnapshotReads: plain reads in a transaction see its snapshot (InnoDB),
	// so Held is used only outside transactions.
	SnapshotReads bool
	// UpsertsOnAnyUnique: an upsert runs on whichever unique key collides (MySQL).
	UpsertsOnAnyUnique bool
	// PreparedWrites: fenced writes run on prepared statements (SQLite).
	PreparedWrites bool
	// OneWriter: one connection writes at a time, DDL is transactional (SQLite).
	OneWriter bool
	// OrderedWrites: GORM builds ORDER BY and LIMIT into UPDATE and DELETE (MySQL).
	OrderedWrites bool
	// KeyLoad is the statements a fresh Write load of one key costs outside a
	// transaction, the read included: 1 where the grant rides in the read
	// (Loader), else the store's grant of one key (KeyGranter) and the read.
	KeyLoad int
	// QueryLoad is the same for the rows a WHERE finds.
	QueryLoad int

	Held       Held       // the holder's re-read checks its lock in its own statement
	Loader     Loader     // lock and read in the read's own statement (PostgreSQL)
	KeyGranter KeyGranter // a load's one-key grant in a short shape of its own (SQLite, MariaDB)
	Folder     Folder     // the fence in the write's own statement
	FenceCall  FenceCall  // the fence in the write's own statement, refusing with an error (MySQL)
	Guard      Guard      // triggers that refuse writes of held records
	Certifier  Certifier  // the fence takes part in a cluster's certification (Galera)
	KeyChecker KeyChecker // key columns checked against the database's collations
	OwnTx      OwnTx      // the plugin's own transactions begun the store's way

	Signer Signer // a write's identity, and an upsert's fence, in its statement (signing.go)
}

// Traits is Store's: PostgreSQL's writes name their writer in the transaction.
func (s *postgresStore) Traits() Traits {
	t := traitsOf(s)
	t.KeyLoad, t.QueryLoad = 1, 2 // the grant in the read; FindAndLock
	return t
}

// Traits is Store's: InnoDB's share lock and snapshot reads, any-key upserts,
// ordered writes, the writer's identity in its statement.
func (s *mysqlStore) Traits() Traits {
	t := traitsOf(s)
	t.ShareLock, t.UpdateOf, t.SnapshotReads, t.UpsertsOnAnyUnique = mysqlShare, false, true, true
	t.OrderedWrites = true
	t.KeyLoad, t.QueryLoad = 3, 4 // the generation and the upsert (GrantKey)
	return t
}

// Traits is Store's: SQLite's one writer, and its writes prepared.
func (s *sqliteStore) Traits() Traits {
	t := traitsOf(s)
	t.PreparedWrites, t.OneWriter = true, true
	t.KeyLoad, t.QueryLoad = 2, 3 // one upsert RETURNING (GrantKey)
	return t
}

// traitsOf is the traits every store shares: row locks and optional interfaces.
func traitsOf(s Store) Traits {
	t := Traits{RowLocks: s.RowLocks()}
	if t.RowLocks {
		t.ShareLock, t.UpdateOf = " FOR SHARE", true
	}
	t.Held, _ = s.(Held)
	t.Loader, _ = s.(Loader)
	t.KeyGranter, _ = s.(KeyGranter)
	t.Folder, _ = s.(Folder)
	t.FenceCall, _ = s.(FenceCall)
	t.Guard, _ = s.(Guard)
	t.Certifier, _ = s.(Certifier)
	t.KeyChecker, _ = s.(KeyChecker)
	t.OwnTx, _ = s.(OwnTx)
	t.Signer, _ = s.(Signer)
	return t
}

// Held is implemented by stores that check, in the re-read's own statement,
// that the session still holds the record's lock.
type Held interface {
	// HeldCondition is true only while session holds a lock on k with more than margin left.
	HeldCondition(k Key, session string, access Access, margin time.Duration) clause.Expression
}

// Loader is implemented by stores that lock and read in one statement
// (PostgreSQL); the others take the general path.
type Loader interface {
	// GrantPrefix is a WITH clause before a load of k (parameters numbered
	// after after) taking o's Write lock; the load adds GrantCondition and reads
	// FOR SHARE, so the row is never older than the lock.
	GrantPrefix(k Key, o Owner, token string, ttl time.Duration, after int) (string, []any)
	GrantCondition() clause.Expression

	// FindAndLock locks all or none of the Write locks of the keys keysSQL finds
	// (column), in one statement; refused: some key is held.
	FindAndLock(c Conn, keysSQL string, vars []any, column, resource string, o Owner, token string, ttl time.Duration) (grants []GrantRow, refused bool, err error)
}

// KeyGranter is implemented by stores whose load of one key takes its
// lock, outside a transaction, in statements of its own before the read: a
// load hands its token to nobody, so the grant tells only whether the lock
// is new.
type KeyGranter interface {
	// GrantKey takes k's lock for o, committed when it returns: a Write
	// lock in the store's short shape; what that does not take, and a Read
	// lock, the serialised path decides exactly, naming the holders.
	GrantKey(c Conn, k Key, o Owner, access Access, ttl time.Duration) (fresh bool, err error)
}

// Folder is implemented by stores that fence in the write's own statement.
type Folder interface {
	// FenceCondition holds only while session holds a valid Write lock on k, and
	// keeps k's key row from changing until the transaction ends.
	FenceCondition(k Key, session string) clause.Expression
}

// FenceCall is implemented by stores whose in-statement fence is a guard
// routine that refuses with an error (MySQL, fence_mysql.go): there a write
// that changes nothing reports 0 rows like a lost lock.
type FenceCall interface {
	// FenceCall holds while session holds a valid Write lock on k (with orFree,
	// or while k is free) and share-locks k's key row; else the write fails
	// with an error FenceRefused recognises. ok is false while not installed.
	FenceCall(k Key, session string, orFree bool) (cond clause.Expression, ok bool)
	// FenceRefused reports whether err is the fence routine's refusal; a missing
	// routine is not, and turns FenceCall off until the guard is reinstalled.
	FenceRefused(err error) bool
}

// Guard is implemented by the stores whose database can guard tables.
type Guard interface {
	GuardTraits
	// Guard is implemented by the stores whose database can guard tables (docs/guard.md).
	InstallGuardRoutine(c Conn) error
	// InstallGuardRoutine creates or replaces the routine the triggers call.
	GuardKey(c Conn) (string, error)
	// GuardKey reads the guard's key ("" before install). Keep it secret.
	Equal(k KeyKind, expr, id, colType string) (string, bool)
	// Equal is a condition, answered by expr's index, that expr holds key id.
	SetRefusal(c Conn, recordOnly bool) error
	// SetRefusal makes refusals name the record only, or the holder and times too.
	Inheritors(c Conn, table string) (children []string, partitioned bool, err error)
	// Inheritors lists table's partitions and inheritance children, at every
	// depth (PostgreSQL), and whether table is partitioned.
	GuardTable(c Conn, plan GuardPlan) error
	// GuardTable creates or replaces plan's triggers unless at plan's version;
	// a missing table is left alone.
	GuardedTables(c Conn) (map[string]string, error)
	// GuardedTables lists the guarded tables by the version each carries.
	TableState(c Conn, plan GuardPlan) (string, error)
	// RemoveGuard drops every trigger and routine of this lock table's guard.
	RemoveGuard(c Conn) error
	// TableState is GuardOK or what differs from what this version installs.
	MissingGuardPrivileges(c Conn, tables []string, remove bool) ([]string, error)
	// RemoveGuard drops every trigger and routine of this lock table's guard.
	ColumnTypes(c Conn, table string) (map[string]string, error)
	// MissingGuardPrivileges names each privilege this role lacks to install
	// (or remove) the guard, with its grant.
	QualifiedName(c Conn, table string) (string, error)
	// ColumnTypes is each column's lower-case type; nil for a missing table.
	CascadesInto(c Conn, table string) ([]GuardCascade, error)
	// QualifiedName is table quoted and qualified, resolved now as a base table.
	Spell(k KeyKind, expr, colType string) string
	// CascadesInto lists foreign keys whose ON DELETE changes table's rows
	// without firing its triggers (MySQL).
	Quote(ident string) string
	Backslash() string
	// Spell is the SQL spelling of one key column, as the root's key.go spells it.
	ShareRow() string
	// Quote quotes an identifier; Backslash reads the same in every SQL mode.
	GuardRefusal(err error, resources []string) (GuardRefusal, bool)
}

// ShareRow ends the guard's reads of business rows: a locking read.
type Certifier interface {
	// GuardRefusal recognises a guard's refusal in err.
	Certifies() bool
	Certify(c Conn, keys []Key, session string) error
	// Certifier makes the fence take part in Galera's certification.
	Confirm(c Conn, keys []Key, o Owner, access Access) error
}

// Confirm reads back, after COMMIT, the locks on keys granted o: a Galera
// node can roll back without reporting it.
type KeyChecker interface {
	CheckKeyColumns(c Conn, cols KeyColumns) error
}

// KeyChecker checks a model's key columns against the database's collations,
// refusing with ErrInvalid keys the database would merge.
type OwnTx interface {
	BeginOwn(db *gorm.DB) (tx *gorm.DB, done func())
}

// The capabilities each store has: a store that loses one fails here.
var (
	_ Store      = (*postgresStore)(nil)
	_ Held       = (*postgresStore)(nil)
	_ Loader     = (*postgresStore)(nil)
	_ Folder     = (*postgresStore)(nil)
	_ Guard      = (*postgresStore)(nil)
	_ KeyChecker = (*postgresStore)(nil)

	_ Store      = (*mysqlStore)(nil)
	_ Held       = (*mysqlStore)(nil)
	_ Guard      = (*mysqlStore)(nil)
	_ FenceCall  = (*mysqlStore)(nil)
	_ Certifier  = (*mysqlStore)(nil)
	_ KeyChecker = (*mysqlStore)(nil)
	_ OwnTx      = (*mysqlStore)(nil)
	_ KeyGranter = (*mysqlStore)(nil)

	_ Store      = (*sqliteStore)(nil)
	_ Held       = (*sqliteStore)(nil)
	_ Folder     = (*sqliteStore)(nil)
	_ KeyGranter = (*sqliteStore)(nil)
)

// The states TableState reports.
const (
	GuardOK       = "ok"       // in place as this version installs it
	GuardDropped  = "dropped"  // a trigger or a routine is missing
	GuardDisabled = "disabled" // a trigger is disabled (ALTER TABLE … DISABLE TRIGGER)
	GuardReplaced = "replaced" // a routine or trigger differs from what this version installs
	GuardHidden   = "hidden"   // this role may not read the definitions (MariaDB without TRIGGER)
	GuardNewer    = "newer"    // a newer protocol's guard is installed (ErrGuardProtocol): this node must be upgraded
)
