package lockstore

import (
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Every store is a Store; what else one can do is declared here, in one
// place, and resolved once when the store is made (Traits), so the plugin
// asks a field instead of asserting an interface on every statement, and
// a store that stops implementing a capability fails to compile (the
// assertions at the end) instead of silently losing it.

// Traits is what one store's database can do, resolved once by its Traits method.
// A nil interface is a capability the database lacks.
type Traits struct {
	// RowLocks: the plugin's reads of the application's rows must lock
	// them (FOR UPDATE, FOR SHARE) to keep them until the transaction
	// ends. A database that serialises writers (SQLite) needs none.
	RowLocks bool
	// ShareLock is a locking read in share mode, with a leading space
	// (" FOR SHARE"); "" where RowLocks is false.
	ShareLock string
	// UpdateOf: FOR UPDATE OF t locks the rows of t alone (PostgreSQL);
	// without it (MariaDB) a joined read locks every table's rows.
	UpdateOf bool
	// SnapshotReads: plain reads inside a transaction see its snapshot,
	// not the latest committed rows (InnoDB under REPEATABLE READ), so
	// Held is used only outside transactions.
	SnapshotReads bool
	// UpsertsOnAnyUnique: an upsert runs on whichever unique key the new
	// row collides with, whatever conflict target the statement names
	// (MySQL's INSERT … ON DUPLICATE KEY UPDATE).
	UpsertsOnAnyUnique bool
	// PreparedWrites: a write whose fence rides in its WHERE runs on
	// statements the store keeps prepared (PreparedWriteTx; SQLite, where
	// compiling the fence's subquery costs more than running it).
	PreparedWrites bool
	// OneWriter: the database lets one connection write at a time, and its
	// DDL is transactional (SQLite): another connection of the pool would
	// wait for the caller's open write transaction.
	OneWriter bool
	// OrderedWrites: GORM builds a statement's ORDER BY and LIMIT into its
	// UPDATE and DELETE (its MySQL dialect's clauses), so such a write
	// changes only the rows they admit.
	OrderedWrites bool
	// KeyLoad is how many statements a load of one record by its key
	// costs, the read included, when it takes a fresh Write lock outside
	// a transaction: 1 where the grant rides in the read (Loader), else
	// the store's grant of one key and the read.
	KeyLoad int
	// QueryLoad is the same for a load of the rows a WHERE finds: 2 where
	// one statement finds and locks them (Loader.FindAndLock), else the
	// key-only SELECT, the grant and the read.
	QueryLoad int

	Held       Held       // the holder's re-read checks its lock in its own statement
	Loader     Loader     // lock and read in the read's own statement (PostgreSQL)
	Folder     Folder     // the fence in the write's own statement
	FenceCall  FenceCall  // the fence in the write's own statement, refusing with an error (MySQL)
	Guard      Guard      // triggers that refuse writes of held records
	Certifier  Certifier  // the fence takes part in a cluster's certification (Galera)
	KeyChecker KeyChecker // key columns checked against the database's collations
	OwnTx      OwnTx      // the plugin's own transactions begun the store's way

	Signer Signer // a write's identity, and an upsert's fence, in its statement (signing.go)
}

// Traits is Store's: PostgreSQL's writes name their writer in the
// transaction.
func (s *postgresStore) Traits() Traits {
	t := traitsOf(s)
	t.KeyLoad, t.QueryLoad = 1, 2 // the grant in the read; FindAndLock
	return t
}

// Traits is Store's: InnoDB's share lock and snapshot reads, an upsert
// that meets any unique key, writes in key order, a writer's identity in
// its statement.
func (s *mysqlStore) Traits() Traits {
	t := traitsOf(s)
	t.ShareLock, t.UpdateOf, t.SnapshotReads, t.UpsertsOnAnyUnique = mysqlShare, false, true, true
	t.OrderedWrites = true
	t.KeyLoad, t.QueryLoad = 3, 4 // the upsert and the generations (grantOne)
	return t
}

// Traits is Store's: SQLite's one writer, and its writes prepared.
func (s *sqliteStore) Traits() Traits {
	t := traitsOf(s)
	t.PreparedWrites, t.OneWriter = true, true
	t.KeyLoad, t.QueryLoad = 2, 3 // one upsert RETURNING (grantOneSQL)
	return t
}

// traitsOf is the traits every store shares: its row locks and the
// optional interfaces s implements.
func traitsOf(s Store) Traits {
	t := Traits{RowLocks: s.RowLocks()}
	if t.RowLocks {
		t.ShareLock, t.UpdateOf = " FOR SHARE", true
	}
	t.Held, _ = s.(Held)
	t.Loader, _ = s.(Loader)
	t.Folder, _ = s.(Folder)
	t.FenceCall, _ = s.(FenceCall)
	t.Guard, _ = s.(Guard)
	t.Certifier, _ = s.(Certifier)
	t.KeyChecker, _ = s.(KeyChecker)
	t.OwnTx, _ = s.(OwnTx)
	t.Signer, _ = s.(Signer)
	return t
}

// Held is implemented by stores that check, in the read's own statement,
// that the session still holds the lock of the record it re-reads: the
// re-read is one read-only statement.
type Held interface {
	// HeldCondition is a condition to add to a load of k that is true only
	// while session holds a fresh enough lock on k (more than margin left).
	HeldCondition(k Key, session string, access Access, margin time.Duration) clause.Expression
}

// Loader is implemented by stores that lock and read in the read's own
// statement (PostgreSQL): the commonest loads, by key and by WHERE, cost one
// round trip. The other stores take the general path.
type Loader interface {
	// GrantPrefix is a WITH clause to put before a load of k, its
	// parameters numbered after the load's own after: it takes the Write
	// lock for o in the read's statement, with token's hash. The load adds
	// GrantCondition to its WHERE and reads FOR SHARE, so that the row is
	// never older than the lock.
	GrantPrefix(k Key, o Owner, token string, ttl time.Duration, after int) (string, []any)
	GrantCondition() clause.Expression

	// FindAndLock locks, all or nothing, the Write locks of the keys that
	// keysSQL (a SELECT of one key column named column) finds, with the
	// resource resource, in one statement. refused reports that some key
	// is held: nothing was granted, and the general path names the holders.
	FindAndLock(c Conn, keysSQL string, vars []any, column, resource string, o Owner, token string, ttl time.Duration) (grants []GrantRow, refused bool, err error)
}

// Folder is implemented by stores that can check the fence in the write's
// own statement (the root's fence.go).
type Folder interface {
	// FenceCondition is a condition to add to a write of k that is true
	// only while session holds a valid Write lock on k, and that keeps k's
	// key row from changing until the transaction ends (a row lock, or
	// SQLite's one writer at a time).
	FenceCondition(k Key, session string) clause.Expression
}

// FenceCall is implemented by stores whose fence in the write's own
// statement is a routine of the guard's that refuses with an error rather
// than matching no row (MySQL/MariaDB, fence_mysql.go): there a write that
// leaves its row as it was reports 0 rows, so only an error tells a lost
// lock from an unchanged row without another statement.
type FenceCall interface {
	// FenceCall is a condition for a write of k by session that holds
	// while session holds a valid Write lock on k (or, with orFree, for a
	// row the write may create, while no other session holds a live lock
	// on k) and keeps k's key row share-locked until the transaction ends;
	// otherwise the write fails with an error FenceRefused recognises. ok
	// is false while the routine is not installed (the guard off, or not
	// yet installed).
	FenceCall(k Key, session string, orFree bool) (cond clause.Expression, ok bool)
	// FenceRefused reports whether err is the fence routine's refusal. An
	// error saying the routine is gone is not (the write fails as it is),
	// and FenceCall answers false from then until the guard is installed
	// again.
	FenceRefused(err error) bool
}

// Guard is implemented by the stores whose database can guard tables.
type Guard interface {
	GuardTraits
	// InstallGuardRoutine creates or replaces the routine every guarded
	// table's triggers call.
	InstallGuardRoutine(c Conn) error
	// GuardKey reads the guard's key (guard_key.go), which
	// InstallGuardRoutine makes; "" before it did. Keep it secret: who
	// has it can write past the guard as any session.
	GuardKey(c Conn) (string, error)
	// Equal is a condition, answered by expr's index, that the column
	// expression expr of type colType holds the key of kind k whose text
	// is the SQL expression id; false where the store knows none.
	Equal(k KeyKind, expr, id, colType string) (string, bool)
	// SetRefusal makes the guard's refusals name the record only
	// (recordOnly), or its holder and the lock's times too.
	SetRefusal(c Conn, recordOnly bool) error
	// Inheritors lists the tables that inherit table's rows, at every
	// depth: its partitions and inheritance children (PostgreSQL; none on
	// MySQL), whose direct writes fire their own triggers only; and
	// whether table is partitioned.
	Inheritors(c Conn, table string) (children []string, partitioned bool, err error)
	// GuardTable creates or replaces plan's triggers, unless the table
	// carries them at plan's version already. A table that does not exist
	// is left alone (guarded before its first lock or write).
	GuardTable(c Conn, plan GuardPlan) error
	// GuardedTables lists the tables carrying this lock table's guard, with
	// the version each carries.
	GuardedTables(c Conn) (map[string]string, error)
	// TableState reports whether plan's triggers, and the routines they
	// call, are in place as this version installs them: GuardOK, or what
	// differs (GuardDropped, GuardDisabled, GuardReplaced, GuardHidden).
	TableState(c Conn, plan GuardPlan) (string, error)
	// RemoveGuard drops every trigger and routine of this lock table's guard.
	RemoveGuard(c Conn) error
	// MissingGuardPrivileges names each privilege this role lacks to
	// install the guard on tables (or, with remove, to remove it from
	// them), with the grant that gives it; none when it has them all.
	MissingGuardPrivileges(c Conn, tables []string, remove bool) ([]string, error)
	// ColumnTypes reports the database's type of each column of table,
	// lower case, by column name; nil when the table does not exist.
	ColumnTypes(c Conn, table string) (map[string]string, error)
	// QualifiedName is table quoted and qualified by its schema (its
	// database on MySQL), resolved now, at install, as a base table: the
	// guard's SQL reads it by that name whatever the writer's search_path
	// or temporary tables say.
	QualifiedName(c Conn, table string) (string, error)
	// CascadesInto lists the foreign keys whose ON DELETE action changes
	// rows of table without firing its triggers (MySQL); nil where the
	// database fires them (PostgreSQL).
	CascadesInto(c Conn, table string) ([]GuardCascade, error)
	// Spell is the SQL spelling of one key column, as the root's key.go
	// spells it: expr is the column in a row, colType its database type.
	Spell(k KeyKind, expr, colType string) string
	// Quote quotes an identifier; Backslash is a backslash, as an
	// expression that reads the same in every SQL mode.
	Quote(ident string) string
	Backslash() string
	// ShareRow ends a SELECT of the guard's that reads a business row it
	// judges by (a member's parent, on the way to its root): a locking
	// read, so that the row is read as it is at the write, not as a
	// snapshot or the last commit has it, and cannot change until the
	// write's transaction ends.
	ShareRow() string
	// GuardRefusal recognises a guard's refusal in err, naming the record
	// where the message carried it (resources are the known resources).
	GuardRefusal(err error, resources []string) (GuardRefusal, bool)
}

// Certifier is a store that makes the fence take part in a cluster's
// certification (MariaDB Galera).
type Certifier interface {
	// Certifies says whether the fence takes part in certification now:
	// the store is on a node of a Galera cluster with replication on
	// (detected by Migrate). Certify does nothing otherwise.
	Certifies() bool
	Certify(c Conn, keys []Key, session string) error
	// Confirm reads back, after the COMMIT of the plugin's own
	// transaction, the locks on keys it granted o (galera.go): a node can
	// roll a transaction back without reporting it, and COMMIT then
	// succeeds with nothing to commit.
	Confirm(c Conn, keys []Key, o Owner, access Access) error
}

// KeyChecker is a store whose database may take two spellings of a key as
// one row where the model's key kinds keep them apart (collations): it
// checks a model's key columns as the database has them, and refuses them
// with ErrInvalid, naming the table and column.
type KeyChecker interface {
	CheckKeyColumns(c Conn, cols KeyColumns) error
}

// OwnTx is implemented by a store that begins the plugin's own
// transactions its own way (MySQL: READ COMMITTED, so that its reads of
// the lock table are the latest committed rows without locking reads, and
// InnoDB takes no gap locks). done is called when the transaction ends.
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

	_ Store  = (*sqliteStore)(nil)
	_ Held   = (*sqliteStore)(nil)
	_ Folder = (*sqliteStore)(nil)
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
