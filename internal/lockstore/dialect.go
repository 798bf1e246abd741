package lockstore

// Facts about a database the plugin's statement code acts on beyond its
// lock table, stated once per store (Traits) so nothing outside asks a
// dialector its name.

// IdentityWay is how a database carries a writer's identity to the guard.
type IdentityWay int

const (
	// IdentityNone: the database has no guard to tell (SQLite).
	IdentityNone IdentityWay = iota
	// IdentityInTx: a transaction-local setting (PostgreSQL).
	IdentityInTx
	// IdentityInStatement: the write statement carries it (MySQL/MariaDB).
	IdentityInStatement
)
