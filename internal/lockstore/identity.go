package lockstore

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// How a write tells the guard who sends it; the identity ends with the
// transaction (PostgreSQL) or the statement (MySQL).

// postgresSetIdentity is a non-NULL expression giving the transaction the
// writer's identity (one ?, postgresIdentity), signed in the same statement
// with the catalog's guard key, so the key never leaves the database;
// unsigned before the first install.
func postgresSetIdentity(catalog string) string {
	return "(SELECT set_config('offlinelock.session', i.v || coalesce('/' || encode(sha256(convert_to(k.spec || i.v, 'UTF8')), 'hex'), ''), true) " +
		"FROM (SELECT CAST(? AS text) AS v) i LEFT JOIN " + catalog + " k ON k.name = " + sqlLiteral(guardKeyName) + ")"
}

// IdentityStatement gives a transaction session's identity (not fenced),
// signed in the database with the guard's key, as a statement of its own
// with its arguments: for a raw write in a transaction.
func (s *postgresStore) IdentityStatement(session string) (string, []any) {
	return s.setIdentityStatement, []any{postgresIdentity(session, false)}
}

// mariadbIdentityPrefix begins a MariaDB write of session: SET STATEMENT of
// its keyed mark and, when fenced, the proof's blank (fence_mysql.go).
func mariadbIdentityPrefix(key, session string, fenced bool) string {
	prefix := "SET STATEMENT max_join_size=" + strconv.FormatUint(sessionMark(key, session, fenced), 10)
	if fenced {
		prefix += ", sql_select_limit=" + fencedBlank(key)
	}
	return prefix + " FOR "
}

// keyedBlank is the fenced blank (fencedBlank) of one guard key.
type keyedBlank struct{ key, blank string }

// mysqlIdentityHint is MySQL 8.0's SET_VAR hint of session's mark.
func mysqlIdentityHint(key, session string, fenced bool) string {
	return "/*+ SET_VAR(max_join_size=" + strconv.FormatUint(sessionMark(key, session, fenced), 10) + ") */ "
}

// sessionMark is 2^59 plus 55 bits of SHA-256(key || session) (as
// sessionMarkSQL), plus 1 when the plugin fences the write.
func sessionMark(key, session string, fenced bool) uint64 {
	h := sha256.Sum256([]byte(key + session))
	m := (binary.BigEndian.Uint64(h[:8])>>8)&^1 | 1<<59
	if fenced {
		m |= 1
	}
	return m
}

// signWrite writes the clause c (named name: INSERT, UPDATE or DELETE) of
// session's write, keyed with the guard's key: MariaDB's SET STATEMENT
// prefix before it, or MySQL's SET_VAR hint after its first word. build
// writes c as it would be without the mark.
func (s *mysqlStore) signWrite(cb clause.Builder, c clause.Clause, name, key, session string, fenced bool, build clause.ClauseBuilder) {
	if s.mariadb.Load() { // mariadbIdentityPrefix, with the fenced blank of key kept
		cb.WriteString("SET STATEMENT max_join_size=" + strconv.FormatUint(sessionMark(key, session, fenced), 10))
		if fenced {
			b := s.blank.Load()
			if b == nil || b.key != key {
				b = &keyedBlank{key: key, blank: fencedBlank(key)}
				s.blank.Store(b)
			}
			cb.WriteString(", sql_select_limit=" + b.blank)
		}
		cb.WriteString(" FOR ")
		build(c, cb)
		return
	}
	hint := mysqlIdentityHint(key, session, fenced)
	if name == "DELETE" {
		cb.WriteString("DELETE " + hint)
		if d, ok := c.Expression.(clause.Delete); ok && d.Modifier != "" {
			cb.WriteString(d.Modifier)
		}
		return
	}
	cb.WriteString(name + " " + hint)
	c.Expression.Build(cb)
}

// foldUpsert ends an ON DUPLICATE KEY UPDATE list with the key col
// assigned itself while fence holds, and NULL otherwise.
func (s *mysqlStore) foldUpsert(cb clause.Builder, col clause.Column, fence clause.Expression) {
	cb.WriteByte(',')
	cb.WriteQuoted(col)
	cb.WriteString("=IF(")
	fence.Build(cb)
	cb.WriteString(", ")
	cb.WriteQuoted(col)
	cb.WriteString(", NULL)")
}

// isWrite: stmt builds an INSERT, UPDATE or DELETE (not a query on a
// statement that also holds write clauses).
func isWrite(stmt *gorm.Statement) bool {
	if stmt.Context == nil {
		return false
	}
	_, upd := stmt.Clauses["UPDATE"]
	_, del := stmt.Clauses["DELETE"]
	_, ins := stmt.Clauses["INSERT"]
	if !upd && !del && !ins {
		return false
	}
	if len(stmt.BuildClauses) == 0 {
		return true
	}
	switch stmt.BuildClauses[0] {
	case "INSERT", "UPDATE", "DELETE":
		return true
	}
	return false
}
