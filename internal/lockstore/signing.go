package lockstore

import "gorm.io/gorm/clause"

// The SQL a write's own clauses carry for the guard: the writer's
// identity and, on MySQL/MariaDB, the fence folded into an upsert. The
// root's clause builders decide when a write carries them; the stores
// write it (PostgreSQL's in postgres.go, MySQL's in identity.go, beside
// the identity's values).

// TxSigner is a store whose writes name their writer in a setting local
// to the transaction, set by an expression inside the write (PostgreSQL,
// IdentityInTx).
type TxSigner interface {
	// SignInsert follows an INSERT's last clause with session's identity
	// (fenced: the plugin fences the write itself) as a returned column
	// (returning: that clause is already a RETURNING), evaluated as rows
	// are written, before the guard's statement trigger.
	SignInsert(cb clause.Builder, returning bool, session string, fenced bool)
	// SignWhere writes the WHERE where of an UPDATE or DELETE with
	// session's identity as a one-time filter, evaluated once before the
	// scan.
	SignWhere(cb clause.Builder, where clause.Where, session string, fenced bool)
	// IdentityStatement gives a transaction session's identity (not
	// fenced), signed in the database with the guard's key, as a
	// statement of its own with its arguments: for a raw write in a
	// transaction.
	IdentityStatement(session string) (string, []any)
}

// StatementSigner is a store whose writes carry their writer's mark in
// the statement itself (MySQL/MariaDB, IdentityInStatement).
type StatementSigner interface {
	// SignWrite writes the clause c (named name: INSERT, UPDATE or
	// DELETE) of session's write, keyed with the guard's key: MariaDB's
	// SET STATEMENT prefix before it, or MySQL's SET_VAR hint after its
	// first word. build writes c as it would be without the mark.
	SignWrite(cb clause.Builder, c clause.Clause, name, key, session string, fenced bool, build clause.ClauseBuilder)
	// FoldValue is an upsert's key value v passed through fence: NULL,
	// which the key refuses, unless fence holds.
	FoldValue(fence clause.Expression, v any) clause.Expression
	// FoldUpsert ends an ON DUPLICATE KEY UPDATE list with the key col
	// assigned itself while fence holds, and NULL otherwise.
	FoldUpsert(cb clause.Builder, col clause.Column, fence clause.Expression)
	// SignRaw is sql, a raw write of session's, carrying its mark; false
	// where a raw write cannot carry one (MySQL, whose hint goes after the
	// first word; several statements, of which the mark would cover one).
	SignRaw(sql, key, session string) (string, bool)
}

// The stores that sign their writes.
var (
	_ TxSigner        = (*postgresStore)(nil)
	_ StatementSigner = (*mysqlStore)(nil)
)
