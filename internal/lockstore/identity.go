package lockstore

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
)

// How a write tells the database guard who sends it (the root's
// identity.go puts these into the statements GORM builds). The identity
// rides inside the write and ends with it: PostgreSQL's set_config is
// local to the transaction, MySQL's SET STATEMENT and SET_VAR to the
// statement.

// PostgresSetIdentity is an expression whose value is not NULL and which
// gives the transaction the writer's identity; its one ? is bound to
// PostgresIdentity.
const PostgresSetIdentity = "(SELECT set_config('offlinelock.session', ?, true))"

// PostgresSetIdentityStatement is PostgresSetIdentity as a statement of
// its own, for a raw write in a transaction.
const PostgresSetIdentityStatement = "SELECT set_config('offlinelock.session', $1, true)"

// MariaDBIdentityPrefix begins a MariaDB write of session: SET STATEMENT
// gives it the session's mark for that statement alone. A write the
// plugin fences also carries the proof's blank (proofBlank): the fence
// function writes its proof there, and the server puts the variable back
// when the statement ends (fence_mysql.go).
func MariaDBIdentityPrefix(session string, fenced bool) string {
	prefix := "SET STATEMENT max_join_size=" + strconv.FormatUint(SessionMark(session, fenced), 10)
	if fenced {
		prefix += ", sql_select_limit=" + proofBlank
	}
	return prefix + " FOR "
}

// MySQLIdentityHint follows the first word of a MySQL 8.0 write of
// session: the SET_VAR hint, which the server applies to that statement.
func MySQLIdentityHint(session string, fenced bool) string {
	return "/*+ SET_VAR(max_join_size=" + strconv.FormatUint(SessionMark(session, fenced), 10) + ") */ "
}

// SessionMark is the number a MySQL statement of session carries: 2^59,
// plus 55 bits of SHA-256(session) as the guard's procedure computes them
// (sessionMarkSQL), plus 1 when the plugin fences the write itself.
func SessionMark(session string, fenced bool) uint64 {
	h := sha256.Sum256([]byte(session))
	m := (binary.BigEndian.Uint64(h[:8])>>8)&^1 | 1<<59
	if fenced {
		m |= 1
	}
	return m
}

// PostgresIdentity is the value of offlinelock.session for a write of session:
// "f:" when the plugin fences the write itself (fence.go), else "s:".
func PostgresIdentity(session string, fenced bool) string {
	if fenced {
		return "f:" + session
	}
	return "s:" + session
}
