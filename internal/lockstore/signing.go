package lockstore

import "gorm.io/gorm/clause"

// The SQL a write's own clauses carry for the guard: the writer's identity
// and, on MySQL/MariaDB, the fence folded into an upsert.

// TxSigner is a store whose writes name their writer in a transaction-local
// setting (PostgreSQL).
type TxSigner interface {
	// SignInsert ends an INSERT with session's identity as a returned column,
	// evaluated before the statement trigger.
	SignInsert(cb clause.Builder, returning bool, session string, fenced bool)
	// SignWhere writes where with session's identity as a one-time filter.
	SignWhere(cb clause.Builder, where clause.Where, session string, fenced bool)
	// IdentityStatement is session's signed identity as a statement of its own,
	// for a raw write in a transaction.
	IdentityStatement(session string) (string, []any)
}

// StatementSigner is a store whose writes carry the mark in the statement (MySQL).
type StatementSigner interface {
	// SignWrite writes clause c (INSERT, UPDATE or DELETE) with session's keyed
	// mark; build writes c without it.
	SignWrite(cb clause.Builder, c clause.Clause, name, key, session string, fenced bool, build clause.ClauseBuilder)
	// FoldValue is an upsert's key value v, NULL unless fence holds.
	FoldValue(fence clause.Expression, v any) clause.Expression
	// FoldUpsert assigns the key col itself while fence holds, NULL otherwise.
	FoldUpsert(cb clause.Builder, col clause.Column, fence clause.Expression)
	// SignRaw is sql carrying session's mark; false where a raw write cannot.
	SignRaw(sql, key, session string) (string, bool)
}

// The stores that sign their writes.
var (
	_ TxSigner        = (*postgresStore)(nil)
	_ StatementSigner = (*mysqlStore)(nil)
)
