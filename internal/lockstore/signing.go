package lockstore

import (
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock/internal/sqlscan"
)

// The writer's identity rides to the guard inside statements the plugin
// already sends, keyed with the guard's key (docs/guard.md): PostgreSQL's
// set_config in a WHERE's one-time filter or an INSERT's RETURNING;
// MySQL's max_join_size mark in SET STATEMENT or SET_VAR, which the
// server puts back when the statement ends.

// Signer is a store whose writes carry their writer's identity
// (PostgreSQL, MySQL/MariaDB).
type Signer interface {
	// SignWrites wraps db's clause builders, once per database, so that a
	// write by a session carries its identity; builders already there
	// (the dialect's) are kept and called.
	SignWrites(db *gorm.DB, w Writer)
	// SignRaw gives db's raw write (Exec) by a session its identity: on
	// MariaDB the statement is prefixed; on PostgreSQL set_config runs
	// first, in a transaction begun for the write outside one (EndRawTx
	// ends it). MySQL's raw writes carry none: the guard refuses them on a
	// held record, even the holder's.
	SignRaw(db *gorm.DB, w Writer)
}

// Writer is what the plugin tells a Signer about a statement.
type Writer interface {
	// Writer is the session stmt is sent for ("" for none), and whether
	// the plugin fences its write itself.
	Writer(stmt *gorm.Statement) (session string, fenced bool)
	// GuardKey is the guard's key, "" while it is not known.
	GuardKey() string
	// Upsert is the fence folded into stmt, an upsert of one record (MySQL):
	// its key column, the fences for its VALUES and its ON DUPLICATE KEY
	// UPDATE part (nil: none), and where to mark, with UpsertFoldedValues
	// and UpsertFoldedUpdate, which of them the statement carries.
	Upsert(stmt *gorm.Statement) (key string, values, update clause.Expression, folds *int)
	// Conn is the connection for a statement of the plugin's on db.
	Conn(db *gorm.DB) Conn
}

// Which of an upsert's two folded fences its statement carries.
const (
	UpsertFoldedValues = 1 << iota
	UpsertFoldedUpdate
)

// identityClauses are the clauses whose builders carry the identity.
var identityClauses = []string{"WHERE", "INSERT", "UPDATE", "DELETE", "VALUES", "ON CONFLICT", "RETURNING"}

// signer builds one clause of a session's write with its identity.
type signer func(stmt *gorm.Statement, c clause.Clause, cb clause.Builder, session string, fenced bool)

// signWrites wraps db's builders of identityClauses with the signer
// signerFor gives each (nil: the clause carries nothing), called for a
// write by a session; build writes a clause as it was.
func signWrites(db *gorm.DB, w Writer, signerFor func(name string, prev bool, build clause.ClauseBuilder) signer) {
	if db.ClauseBuilders == nil {
		db.ClauseBuilders = map[string]clause.ClauseBuilder{}
	}
	for _, name := range identityClauses {
		prev := db.ClauseBuilders[name]
		build := func(c clause.Clause, cb clause.Builder) {
			if prev != nil {
				prev(c, cb)
			} else {
				c.Build(cb)
			}
		}
		sign := signerFor(name, prev != nil, build)
		if sign == nil {
			continue
		}
		db.ClauseBuilders[name] = func(c clause.Clause, cb clause.Builder) {
			if stmt, ok := cb.(*gorm.Statement); ok && isWrite(stmt) {
				if session, fenced := w.Writer(stmt); session != "" {
					sign(stmt, c, cb, session, fenced)
					return
				}
			}
			build(c, cb)
		}
	}
}

// SignWrites is Signer's: an INSERT returns the identity from its last
// clause, an UPDATE or DELETE evaluates it in its WHERE. A WHERE another
// builder writes (prevWhere) is left to it.
func (s *postgresStore) SignWrites(db *gorm.DB, w Writer) {
	signWrites(db, w, func(name string, prevWhere bool, build clause.ClauseBuilder) signer {
		switch name {
		case "VALUES", "ON CONFLICT", "RETURNING":
			return func(stmt *gorm.Statement, c clause.Clause, cb clause.Builder, session string, fenced bool) {
				build(c, cb)
				if _, ins := stmt.Clauses["INSERT"]; ins && lastClause(stmt) == name {
					s.SignInsert(cb, name == "RETURNING", session, fenced)
				}
			}
		case "WHERE":
			return func(stmt *gorm.Statement, c clause.Clause, cb clause.Builder, session string, fenced bool) {
				where, ok := c.Expression.(clause.Where)
				if !ok || len(where.Exprs) == 0 || prevWhere {
					build(c, cb)
					return
				}
				s.SignWhere(cb, where, session, fenced)
			}
		}
		return nil
	})
}

// SignWrites is Signer's: a prefix (MariaDB) or an optimizer hint (MySQL)
// on INSERT, UPDATE and DELETE, and an upsert's fence folded into its
// values.
func (s *mysqlStore) SignWrites(db *gorm.DB, w Writer) {
	signWrites(db, w, func(name string, _ bool, build clause.ClauseBuilder) signer {
		switch name {
		case "INSERT", "UPDATE", "DELETE":
			return func(_ *gorm.Statement, c clause.Clause, cb clause.Builder, session string, fenced bool) {
				s.signWrite(cb, c, name, w.GuardKey(), session, fenced, build)
			}
		case "VALUES":
			return func(stmt *gorm.Statement, c clause.Clause, cb clause.Builder, _ string, _ bool) {
				foldIntoValues(w, stmt, c, cb, build)
			}
		case "ON CONFLICT":
			return func(stmt *gorm.Statement, c clause.Clause, cb clause.Builder, _ string, _ bool) {
				build(c, cb)
				if col, _, fence, folds := w.Upsert(stmt); fence != nil {
					s.foldUpsert(cb, clause.Column{Name: col}, fence)
					*folds |= UpsertFoldedUpdate
				}
			}
		}
		return nil
	})
}

// foldIntoValues writes a folded upsert's VALUES with its key passed
// through the fence that refuses a record another session holds.
func foldIntoValues(w Writer, stmt *gorm.Statement, c clause.Clause, cb clause.Builder, build clause.ClauseBuilder) {
	col, fence, _, folds := w.Upsert(stmt)
	vals, ok := c.Expression.(clause.Values)
	i := -1
	if ok && fence != nil && len(vals.Values) == 1 {
		i = indexOfColumn(vals.Columns, col)
	}
	if i < 0 { // the key omitted: the fence sees the fold missing, and refuses
		build(c, cb)
		return
	}
	row := append([]any(nil), vals.Values[0]...)
	row[i] = clause.Expr{SQL: "IF(?, ?, NULL)", Vars: []any{fence, row[i]}}
	vals.Values = [][]any{row}
	c.Expression = vals
	build(c, cb)
	*folds |= UpsertFoldedValues
}

// indexOfColumn is the index of the column named name in cols, or -1.
func indexOfColumn(cols []clause.Column, name string) int {
	for i, col := range cols {
		if col.Name == name {
			return i
		}
	}
	return -1
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

// rawSession is the session a raw write on db is sent for: "" when its
// SQL writes nothing or no session sends it.
func rawSession(db *gorm.DB, w Writer) string {
	switch sqlscan.FirstWord(db.Statement.SQL.String()) {
	case "insert", "update", "delete", "replace", "with", "merge":
		session, _ := w.Writer(db.Statement)
		return session
	}
	return ""
}

// SignRaw is Signer's: a MariaDB write of one statement is prefixed.
func (s *mysqlStore) SignRaw(db *gorm.DB, w Writer) {
	session := rawSession(db, w)
	sql := db.Statement.SQL.String()
	if session == "" || !s.mariadb.Load() || strings.Contains(sql, ";") {
		return
	}
	db.Statement.SQL.Reset()
	db.Statement.SQL.WriteString(mariadbIdentityPrefix(w.GuardKey(), session, false) + sql)
}

// SignRaw is Signer's: set_config runs first, in the write's transaction.
func (s *postgresStore) SignRaw(db *gorm.DB, w Writer) {
	session := rawSession(db, w)
	if session == "" {
		return
	}
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
	q, args := s.IdentityStatement(session)
	if _, err := w.Conn(db).Exec(q, args...); err != nil {
		db.AddError(err)
	}
}

const rawTxKey = "offlinelock:raw_tx"

// rawTx is the transaction SignRaw began for a raw write, and the
// connection pool to put back when it ends.
type rawTx struct{ pool gorm.ConnPool }

// EndRawTx commits (or, on error, rolls back) the transaction SignRaw
// began for db's raw write, if it began one.
func EndRawTx(db *gorm.DB) {
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

// The stores that sign their writes.
var (
	_ Signer = (*postgresStore)(nil)
	_ Signer = (*mysqlStore)(nil)
)
