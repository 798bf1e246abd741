package offlinelock

import (
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/sqlscan"
)

// The writer's identity, carried to the guard inside statements the plugin
// already sends, so that it costs no round trip and ends with them:
//
// A write the plugin fences itself (it checks the lock again just before
// commit, fence.go) says so, and the guard then only checks it: the
// plugin's own rule of when a key row is held stays as it was (fence.go).
// Any other write of a record its session holds has the guard hold the key
// row until the transaction ends.
//
//   - PostgreSQL: set_config('offlinelock.session', s, true), local to the
//     transaction. The WHERE of an UPDATE or DELETE carries it as a
//     one-time filter (evaluated once, before the scan); an INSERT
//     carries it in RETURNING (evaluated as rows are written, before the
//     guard's statement trigger fires); and the plugin's check of a
//     write's locks, a statement in the write's transaction, carries it
//     for the rest of that transaction.
//   - MySQL/MariaDB: a user variable would outlive the statement, so the
//     statement itself carries it: SET STATEMENT max_join_size=<mark> FOR
//     … (MariaDB), or the SET_VAR hint (MySQL 8.0), which the server puts
//     back when the statement ends, whatever happens. The mark is a number
//     derived from the session (sessionMark); a limit of 2^59 rows changes
//     no plan.
//
// The identity is keyed with the guard's key (internal/lockstore's
// guard_key.go), which only a role that may read the lock table's catalog
// can use: a client with DML on the business tables alone cannot claim a
// session, however well it knows the session's id (docs/guard.md).

// identityClauses are the clauses whose builders carry the identity.
var identityClauses = []string{"WHERE", "INSERT", "UPDATE", "DELETE", "VALUES", "ON CONFLICT", "RETURNING"}

// registerIdentity wraps db's clause builders, once per database (with
// the callbacks), so that a write by a session carries its identity.
// Builders already there (the dialect's) are kept and called.
func (b *binding) registerIdentity(db *gorm.DB) {
	p := b.p
	if p.cfg.DisableGuard {
		return
	}
	if db.ClauseBuilders == nil {
		db.ClauseBuilders = map[string]clause.ClauseBuilder{}
	}
	for _, name := range identityClauses {
		db.ClauseBuilders[name] = b.identityBuilder(name, db.ClauseBuilders[name])
	}
}

// identityBuilder is a clause builder that adds the writer's identity to
// name's clause of a write by a session, in the way the store says its
// database takes it (decided here, once per database).
func (b *binding) identityBuilder(name string, prev clause.ClauseBuilder) clause.ClauseBuilder {
	build := func(c clause.Clause, cb clause.Builder) {
		if prev != nil {
			prev(c, cb)
		} else {
			c.Build(cb)
		}
	}
	var add identityAdder
	switch caps := b.t.caps; {
	case caps.Identity == lockstore.IdentityInTx && caps.TxSigner != nil:
		add = b.postgresIdentity(caps.TxSigner, name, prev != nil, build)
	case caps.Identity == lockstore.IdentityInStatement && caps.StatementSigner != nil:
		add = b.mysqlIdentity(caps.StatementSigner, name, build)
	}
	if add == nil {
		return build
	}
	return func(c clause.Clause, cb clause.Builder) {
		// The session a write is sent for: the owner in its context, when
		// its clauses hold a write and it is not a query on a statement
		// that also holds write clauses.
		stmt, ok := cb.(*gorm.Statement)
		var o Owner
		if ok && stmt.Context != nil && (len(stmt.BuildClauses) == 0 || stmt.BuildClauses[0] != "SELECT") { // a query writes nothing
			o, _ = stmt.Context.Value(ownerKey{}).(Owner)
		}
		if o.Session != "" {
			_, upd := stmt.Clauses["UPDATE"]
			_, del := stmt.Clauses["DELETE"]
			_, ins := stmt.Clauses["INSERT"]
			if !upd && !del && !ins {
				o.Session = ""
			} else if len(stmt.BuildClauses) > 0 {
				switch stmt.BuildClauses[0] {
				case "INSERT", "UPDATE", "DELETE":
				default:
					o.Session = ""
				}
			}
		}
		if o.Session == "" {
			build(c, cb)
			return
		}
		session := o.Session
		_, fenced := stmt.Settings.Load(stateKey) // the plugin checks it again before commit
		add(stmt, c, cb, session, fenced)
	}
}

// identityAdder builds one clause of a session's write with its identity.
type identityAdder func(stmt *gorm.Statement, c clause.Clause, cb clause.Builder, session string, fenced bool)

// postgresIdentity signs a PostgreSQL write: an INSERT returns the
// identity from its last clause, an UPDATE or DELETE evaluates it in its
// WHERE. A WHERE another builder writes (prevWhere) is left to it.
func (b *binding) postgresIdentity(sign lockstore.TxSigner, name string, prevWhere bool, build clause.ClauseBuilder) identityAdder {
	switch name {
	case "VALUES", "ON CONFLICT", "RETURNING":
		return func(stmt *gorm.Statement, c clause.Clause, cb clause.Builder, session string, fenced bool) {
			build(c, cb)
			if _, ins := stmt.Clauses["INSERT"]; ins && lastClause(stmt) == name {
				sign.SignInsert(cb, name == "RETURNING", session, fenced)
			}
		}
	case "WHERE":
		return func(stmt *gorm.Statement, c clause.Clause, cb clause.Builder, session string, fenced bool) {
			where, ok := c.Expression.(clause.Where)
			if !ok || len(where.Exprs) == 0 || prevWhere {
				build(c, cb)
				return
			}
			sign.SignWhere(cb, where, session, fenced)
		}
	}
	return nil
}

// mysqlIdentity signs a MariaDB or MySQL write: a prefix (MariaDB) or an
// optimizer hint (MySQL) on INSERT, UPDATE and DELETE, and the identity
// folded into the values of an INSERT or an upsert.
func (b *binding) mysqlIdentity(sign lockstore.StatementSigner, name string, build clause.ClauseBuilder) identityAdder {
	switch name {
	case "INSERT", "UPDATE", "DELETE":
		return func(stmt *gorm.Statement, c clause.Clause, cb clause.Builder, session string, fenced bool) {
			key := "" // b.guard.Key(): "" while the guard's key is not known
			if k := b.guard.MarkKey.Load(); k != nil {
				key = *k
			}
			sign.SignWrite(cb, c, name, key, session, fenced, build)
		}
	case "VALUES":
		return func(stmt *gorm.Statement, c clause.Clause, cb clause.Builder, _ string, _ bool) {
			foldIntoValues(sign, stmt, c, cb, build)
		}
	case "ON CONFLICT":
		return func(stmt *gorm.Statement, c clause.Clause, cb clause.Builder, _ string, _ bool) {
			build(c, cb)
			foldIntoUpsert(sign, stmt, cb)
		}
	}
	return nil
}

// lastClause is the last of the clauses stmt builds that it has: where a
// PostgreSQL INSERT's RETURNING goes (evaluated for each row written,
// before the guard's statement trigger fires).
func lastClause(stmt *gorm.Statement) string {
	for i := len(stmt.BuildClauses) - 1; i >= 0; i-- {
		if _, ok := stmt.Clauses[stmt.BuildClauses[i]]; ok {
			return stmt.BuildClauses[i]
		}
	}
	return ""
}

// rawIdentity gives a raw write (Exec) by a session its identity: on
// MySQL/MariaDB the statement is prefixed; on PostgreSQL, inside a
// transaction, set_config runs first (outside one, a raw write carries no
// identity: the guard refuses it on a held record, even the holder's).
func (b *binding) rawIdentity(db *gorm.DB) {
	p := b.p
	if b.t == nil || p.cfg.DisableGuard || db.Error != nil || db.DryRun {
		return // no store: a plugin that failed to initialise refuses elsewhere
	}
	o, ok := OwnerFrom(db.Statement.Context)
	if !ok || o.Session == "" {
		return
	}
	sql := db.Statement.SQL.String()
	switch firstWord(sql) {
	case "insert", "update", "delete", "replace", "with", "merge":
	default:
		return
	}
	switch b.t.caps.Identity {
	case lockstore.IdentityInStatement:
		signed, ok := b.t.caps.StatementSigner.SignRaw(sql, b.guard.Key(), o.Session)
		if !ok {
			return
		}
		db.Statement.SQL.Reset()
		db.Statement.SQL.WriteString(signed)
	case lockstore.IdentityInTx:
		if _, inTx := db.Statement.ConnPool.(gorm.TxCommitter); !inTx {
			// The identity is local to a transaction: the write gets one.
			tx := db.Session(&gorm.Session{NewDB: true, Context: db.Statement.Context}).Begin()
			if tx.Error != nil {
				db.AddError(tx.Error)
				return
			}
			db.InstanceSet(rawTxKey, rawTx{pool: db.Statement.ConnPool})
			db.Statement.ConnPool = tx.Statement.ConnPool
		}
		q, args := b.t.caps.TxSigner.IdentityStatement(o.Session)
		if _, err := direct(db).Exec(q, args...); err != nil {
			db.AddError(err)
		}
	}
}

// firstWord is the first word of sql, lower case, past comments.
func firstWord(sql string) string {
	if idents := sqlscan.Read(sql).Idents; len(idents) > 0 {
		return strings.ToLower(idents[0])
	}
	return ""
}

const rawTxKey = "offlinelock:raw_tx"

// rawTx is the transaction rawIdentity began for a raw write, and the
// connection pool to put back when it ends.
type rawTx struct{ pool gorm.ConnPool }

// endRawTx commits (or, on error, rolls back) the transaction rawIdentity
// began.
func endRawTx(db *gorm.DB) {
	v, _ := db.InstanceGet(rawTxKey)
	rt, ok := v.(rawTx)
	if !ok {
		return
	}
	if tx, ok := db.Statement.ConnPool.(gorm.TxCommitter); ok {
		if db.Error != nil {
			tx.Rollback()
		} else if err := tx.Commit(); err != nil {
			db.AddError(err)
		}
	}
	db.Statement.ConnPool = rt.pool
	db.InstanceSet(rawTxKey, nil)
}
