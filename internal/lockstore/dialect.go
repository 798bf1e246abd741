package lockstore

// The few facts about a database that the plugin's statement code acts on
// and that are not capabilities of its lock table (capabilities.go): how a
// writer's identity reaches the guard, what GORM builds into a write, who
// may write at once. Each store states them once (Traits), so that no
// code outside this package asks a dialector for its name.

// IdentityWay is how a database carries a writer's identity to the guard.
type IdentityWay int

const (
	// IdentityNone: the database has no guard to tell (SQLite).
	IdentityNone IdentityWay = iota
	// IdentityInTx: a setting local to the write's transaction, set in a
	// clause of the write or by a statement before it (PostgreSQL).
	IdentityInTx
	// IdentityInStatement: the write statement itself carries it, as a
	// prefix or hint the server puts back when it ends (MySQL/MariaDB).
	IdentityInStatement
)
