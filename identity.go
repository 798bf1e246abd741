package offlinelock

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The writer's identity, carried to the guard inside statements the plugin
// already sends, so that it costs no round trip and ends with them:
//
//   - PostgreSQL: set_config('offlinelock.session', s, true), local to the
//     transaction. The WHERE of an UPDATE or DELETE carries it as a
//     one-time filter (evaluated once, before the scan); the plugin's
//     check of a write's locks (a statement in the write's transaction,
//     before the write) carries it for INSERTs.
//   - MySQL/MariaDB: a user variable would outlive the statement, so the
//     statement itself carries it: SET STATEMENT max_join_size=<mark> FOR
//     … (MariaDB), or the SET_VAR hint (MySQL 8.0), which the server puts
//     back when the statement ends, whatever happens. The mark is a number
//     derived from the session (sessionMark); a limit of 2^59 rows changes
//     no plan.
//
// The identity is not a credential: any client that knows a session id can
// claim it, as it can on any connection. The guard protects holders from
// mistakes and from code paths that never ask, not from a client that
// impersonates a session on purpose; database privileges are the boundary
// for that (docs/guard.md).

// identityClauses are the clauses whose builders carry the identity.
var identityClauses = []string{"WHERE", "INSERT", "UPDATE", "DELETE"}

// registerIdentity wraps db's clause builders, once per database (with
// the callbacks), so that a write by a session carries its identity.
// Builders already there (the dialect's) are kept and called.
func (p *Plugin) registerIdentity(db *gorm.DB) {
	if p.cfg.DisableGuard {
		return
	}
	if db.ClauseBuilders == nil {
		db.ClauseBuilders = map[string]clause.ClauseBuilder{}
	}
	for _, name := range identityClauses {
		db.ClauseBuilders[name] = p.identityBuilder(name, db.ClauseBuilders[name])
	}
}

// identityBuilder is a clause builder that adds the writer's identity to
// name's clause of a write by a session.
func (p *Plugin) identityBuilder(name string, prev clause.ClauseBuilder) clause.ClauseBuilder {
	build := func(c clause.Clause, b clause.Builder) {
		if prev != nil {
			prev(c, b)
		} else {
			c.Build(b)
		}
	}
	return func(c clause.Clause, b clause.Builder) {
		stmt, ok := b.(*gorm.Statement)
		session := ""
		if ok {
			session = writerSession(stmt)
		}
		if session == "" {
			build(c, b)
			return
		}
		switch {
		case name == "WHERE" && stmt.Dialector.Name() == "postgres":
			where, ok := c.Expression.(clause.Where)
			if !ok || len(where.Exprs) == 0 || prev != nil {
				build(c, b)
				return
			}
			b.WriteString("WHERE (")
			where.Build(b)
			b.WriteString(") AND (SELECT set_config('offlinelock.session', ")
			b.AddVar(b, session)
			b.WriteString(", true)) IS NOT NULL")
		case name != "WHERE" && stmt.Dialector.Name() == "mysql":
			if p.my.mariadb.Load() {
				b.WriteString("SET STATEMENT max_join_size=" + strconv.FormatUint(sessionMark(session), 10) + " FOR ")
				build(c, b)
				return
			}
			hint := "/*+ SET_VAR(max_join_size=" + strconv.FormatUint(sessionMark(session), 10) + ") */ "
			if name == "DELETE" {
				b.WriteString("DELETE " + hint)
				if d, ok := c.Expression.(clause.Delete); ok && d.Modifier != "" {
					b.WriteString(d.Modifier)
				}
				return
			}
			b.WriteString(name + " " + hint)
			c.Expression.Build(b)
		default:
			build(c, b)
		}
	}
}

// writerSession is the session a write statement is sent for: the owner in
// its context, when it writes (its clauses say so).
func writerSession(stmt *gorm.Statement) string {
	if stmt.Context == nil {
		return ""
	}
	o, ok := OwnerFrom(stmt.Context)
	if !ok || o.Session == "" {
		return ""
	}
	_, upd := stmt.Clauses["UPDATE"]
	_, del := stmt.Clauses["DELETE"]
	_, ins := stmt.Clauses["INSERT"]
	if !upd && !del && !ins {
		return ""
	}
	if len(stmt.BuildClauses) > 0 {
		switch stmt.BuildClauses[0] {
		case "INSERT", "UPDATE", "DELETE":
		default:
			return "" // a query on a statement that also holds write clauses
		}
	}
	return o.Session
}

// sessionMark is the number a MySQL statement of session carries: 2^59
// plus the first 56 bits of SHA-256(session), as the guard's procedure
// computes it (sessionMarkSQL).
func sessionMark(session string) uint64 {
	h := sha256.Sum256([]byte(session))
	return binary.BigEndian.Uint64(h[:8])>>8 | 1<<59
}

// rawIdentity gives a raw write (Exec) by a session its identity: on
// MySQL/MariaDB the statement is prefixed; on PostgreSQL, inside a
// transaction, set_config runs first (outside one, a raw write carries no
// identity: the guard refuses it on a held record, even the holder's).
func (p *Plugin) rawIdentity(db *gorm.DB) {
	if p.cfg.DisableGuard || db.Error != nil || db.DryRun {
		return
	}
	o, ok := OwnerFrom(db.Statement.Context)
	if !ok || o.Session == "" {
		return
	}
	sql := db.Statement.SQL.String()
	idents := scanSQL(sql).idents
	if len(idents) == 0 {
		return
	}
	switch strings.ToLower(idents[0]) {
	case "insert", "update", "delete", "replace", "with", "merge":
	default:
		return
	}
	switch db.Dialector.Name() {
	case "mysql":
		if !p.my.mariadb.Load() || strings.Contains(strings.ToUpper(sql), ";") {
			return
		}
		mark := "SET STATEMENT max_join_size=" + strconv.FormatUint(sessionMark(o.Session), 10) + " FOR "
		db.Statement.SQL.Reset()
		db.Statement.SQL.WriteString(mark + sql)
	case "postgres":
		if _, inTx := db.Statement.ConnPool.(gorm.TxCommitter); !inTx {
			return
		}
		if _, err := direct(db).exec(`SELECT set_config('offlinelock.session', $1, true)`, o.Session); err != nil {
			db.AddError(err)
		}
	}
}
