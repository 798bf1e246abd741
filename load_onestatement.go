package offlinelock

import (
	"errors"
	"reflect"
	"strings"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// fastPath is the short way a load of one record by its key, the
// commonest load of all (First(&c, 129)), is taking (loadByKey). The
// in-read paths check the lock in the very statement that reads the row,
// so neither can return a row the session does not hold; when they return
// no row, the load falls back to the general path, which decides exactly
// and names the holders.
type fastPath int

const (
	fastNone fastPath = iota
	// fastHeld: the session holds a fresh lock (so a hint says); the
	// query's WHERE also requires it. Read-only: no write, no WAL flush.
	fastHeld
	// fastGrant: a data-modifying CTE takes the Write lock and the query
	// reads the row FOR SHARE: one round trip, one WAL flush. FOR SHARE
	// makes PostgreSQL return the latest committed version of the row, so
	// the row is never older than the lock even when the lock had to wait.
	fastGrant
	// fastAhead: outside a transaction, the store granted the key in its
	// own statements before the read (Traits.KeyLoad says how many), as
	// the general path would have, without finding the key again.
	fastAhead
)

// loadByKey is the load of one record by its key, in the fewest
// statements the store's database allows (Traits.KeyLoad): a holder's
// re-read checks its lock in its own WHERE (Held); a Write lock is granted
// in the read's own statement where the store can (KeyLoad 1, Loader);
// elsewhere, outside a transaction, the store grants the key first and
// the read follows. It reports whether it took the load, which it then
// built (or failed: db.Error says so).
func (p *Plugin) loadByKey(db *gorm.DB, st *state) bool {
	stmt := db.Statement
	if st.m.Root != nil || len(stmt.Preloads) > 0 || len(stmt.Joins) > 0 {
		return false
	}
	_, inTx := stmt.ConnPool.(gorm.TxCommitter)
	keys, ahead := knownKeys(stmt, st.m)
	ahead = ahead && !inTx && len(keys) == 1
	inRead := st.caps.Held != nil && st.m.Lockable && st.m.Root == nil && st.m.LocksOnLoad() && // locksRows
		stmt.TableExpr == nil && !stmt.Distinct
	for _, name := range []string{"FOR", "GROUP BY"} {
		if _, ok := stmt.Clauses[name]; ok {
			inRead = false
		}
	}
	if inRead && keys == nil && len(st.m.PK) == 1 {
		// First(&Account{ID: 2}): gorm:query adds the key from the value.
		if v := stmt.ReflectValue; v.Kind() == reflect.Struct && v.Type() == st.m.Type {
			if k, _, found := st.m.RowKey(stmt.Context, v); found {
				keys = []key{k}
			}
		}
	}
	if len(keys) != 1 || !inRead && !ahead {
		return false
	}
	k := keys[0]
	ttl, err := p.ttlFor(db, st.m)
	if err != nil {
		st.fail(db, err)
		return true
	}
	st.where, st.hadWhere = stmt.Clauses["WHERE"]
	switch {
	case inRead && p.hints.fresh(st.owner.Session, k, ttl/2) && !staleInTx(st.t, stmt):
		rewriteHeld(db, st, st.caps.Held, k, ttl)
	case inRead && st.caps.KeyLoad == 1 && loadAccess(st.m) == Write:
		if st.fastTok, err = lockstore.NewToken(); err != nil {
			st.fail(db, err)
			return true
		}
		st.fast = fastGrant
		stmt.AddClause(clause.Where{Exprs: []clause.Expression{st.caps.Loader.GrantCondition()}})
		stmt.AddClause(clause.Locking{Strength: clause.LockingStrengthShare, Table: clause.Table{Name: clause.CurrentTable}})
	case ahead:
		callbacks.BuildQuerySQL(db)
		if db.Error == nil {
			p.grantAhead(db, st, k, ttl)
		}
		return true
	default:
		return false
	}
	st.fastKey, st.fastRewrote = k, true
	callbacks.BuildQuerySQL(db)
	if st.fast == fastGrant {
		prefix, vars := st.caps.Loader.GrantPrefix(k, lockstore.Owner(st.owner), st.fastTok, ttl, len(stmt.Vars))
		var sql strings.Builder
		sql.Grow(len(prefix) + stmt.SQL.Len())
		sql.WriteString(prefix)
		sql.WriteString(stmt.SQL.String())
		stmt.SQL = sql
		stmt.Vars = append(stmt.Vars, vars...)
	}
	return true
}

// grantAhead locks k, which the load's WHERE names alone, outside any
// transaction: its lock is one atomic grant, committed before the read,
// which then sees everything committed before it (the general path's
// lock of one key, without finding the key again).
func (p *Plugin) grantAhead(db *gorm.DB, st *state, k key, ttl time.Duration) {
	st.fast, st.fastKey = fastAhead, k
	st.knownOne[0] = k
	st.known, st.detached = st.knownOne[:], true
	access := loadAccess(st.m)
	// The store's Grant itself, not t.grant: public only on a refusal.
	c := lockstore.NewConn(db, connCtx(db)).Observed(st.t.obs) // st.t.direct(db)
	got, err := st.t.Grant(c, st.known, lockstore.Owner(st.owner), lockstore.Access(access), ttl)
	if err != nil {
		st.fail(db, public(err))
		return
	}
	p.hints.putAll(st.owner.Session, got)
	st.locked[k], st.newly[k] = true, got[k].Fresh
}

// rewriteHeld makes stmt the holder's re-read of k: its WHERE also
// requires the session's fresh lock, and it runs prepared where the store
// keeps statements prepared.
func rewriteHeld(db *gorm.DB, st *state, hs lockstore.Held, k key, ttl time.Duration) {
	stmt := db.Statement
	st.fast = fastHeld
	andWhere(stmt, hs.HeldCondition(k, st.owner.Session, lockstore.Access(loadAccess(st.m)), ttl/2))
	if pool, ok := lockstore.PreparedPool(db, st.t.Store); ok {
		stmt.ConnPool, st.prepared = pool, true
	}
	// Room for the lock check's text and arguments up front: growing them
	// piece by piece as GORM writes costs an allocation per doubling.
	stmt.SQL.Grow(fastSQLRoom)
	if cap(stmt.Vars) == 0 {
		stmt.Vars = make([]any, 0, 8)
	}
}

// fastSQLRoom is the text a fast path's statement is given room for
// before GORM builds it: a one-row SELECT by key with the lock check.
const fastSQLRoom = 512

// andWhere adds cond to stmt's WHERE, as AddClause(clause.Where{…}) does,
// without the intermediate slices and boxes AddClause's MergeClause makes.
// The existing conditions' slice is copied, never appended to: a fallback
// puts the original WHERE back (fastDone).
func andWhere(stmt *gorm.Statement, cond clause.Expression) {
	c, had := stmt.Clauses["WHERE"]
	w, ok := c.Expression.(clause.Where)
	if had && !ok { // a WHERE of another shape: let GORM merge it
		stmt.AddClause(clause.Where{Exprs: []clause.Expression{cond}})
		return
	}
	exprs := make([]clause.Expression, len(w.Exprs)+1)
	copy(exprs, w.Exprs)
	exprs[len(w.Exprs)] = cond
	c.Name, c.Expression = "WHERE", clause.Where{Exprs: exprs}
	stmt.Clauses["WHERE"] = c
}

// staleInTx reports that a plain read of the lock table in stmt's
// connection could see an old snapshot (Traits.SnapshotReads, in a transaction).
func staleInTx(t lockStore, stmt *gorm.Statement) bool {
	if !t.caps.SnapshotReads {
		return false
	}
	_, inTx := stmt.ConnPool.(gorm.TxCommitter)
	return inTx
}

// fastDone finishes a fast path after gorm:query: a row came back, so the
// lock is held; or none did, and the load takes the general path. It
// reports whether the load may go on (ok), and whether it took the general
// path (fellBack), whose rows the usual checks look at; a row of the fast
// path needs none: its WHERE pinned it to the key it holds.
func (p *Plugin) fastDone(db *gorm.DB, st *state) (ok, fellBack bool) {
	path := st.fast
	st.fast = fastNone
	if db.Error != nil && !errors.Is(db.Error, gorm.ErrRecordNotFound) {
		return false, false
	}
	if path == fastAhead {
		// Locked before the read: a row is its key's (the WHERE pins it);
		// a miss goes on as the general path does (its phantom lock).
		return true, db.Error != nil || db.RowsAffected == 0
	}
	if db.Error == nil && db.RowsAffected > 0 {
		st.locked[st.fastKey] = true
		st.knownOne[0] = st.fastKey
		st.known = st.knownOne[:] // the WHERE pins the row to its key
		if path == fastGrant {
			ttl, _ := p.ttlFor(db, st.m)
			p.hints.put(st.owner.Session, st.fastKey, time.Now().Add(ttl))
		}
		return true, false
	}
	// No row: not locked by the session, someone else holds it, or no such
	// row. Undo the rewrite and take the general path.
	db.Error, db.RowsAffected = nil, 0
	if st.restore != nil {
		st.restore()
	}
	stmt := db.Statement
	if st.hadWhere {
		stmt.Clauses["WHERE"] = st.where
	} else {
		delete(stmt.Clauses, "WHERE")
	}
	delete(stmt.Clauses, "FOR")
	st.fastRewrote = false
	stmt.SQL.Reset()
	stmt.Vars = nil
	callbacks.BuildQuerySQL(db)
	p.lockInTx(db, st, false)
	if db.Error != nil {
		return false, true
	}
	return reread(db, st), true
}

// releasePhantoms gives back the locks a load took ahead on keys its WHERE
// named but that had no row, so that a miss leaves no lock behind; locks
// the session held before the load stay.
func (p *Plugin) releasePhantoms(db *gorm.DB, st *state, loaded []target) {
	if len(st.known) == 0 {
		return
	}
	got := map[key]bool{}
	for _, tg := range loaded {
		got[tg.k] = true
	}
	var gone []key
	for _, k := range st.known {
		if st.newly[k] && !got[k] {
			gone = append(gone, k)
			st.newly[k] = false
		}
	}
	if len(gone) == 0 {
		return
	}
	for _, k := range gone {
		p.hints.drop(st.owner.Session, k)
	}
	if err := st.t.Drop(direct(db), gone, st.owner.Session); err != nil {
		st.fail(db, err)
	}
}

// findAndLock is, on a store that offers it, the general load's lock-ahead
// in a single statement (lockstore.Loader.FindAndLock): the keys the query will
// read, found by its WHERE as a key-only SELECT, Write-locked all or
// nothing. It serves loads outside a transaction that take Write locks on a
// single-column integer or text key: their own, or their root's one level
// up. It reports whether it handled the load (granted, or failed with an
// error other than a refusal); on a refusal the caller takes the general
// path, which names the holders.
func (p *Plugin) findAndLock(db *gorm.DB, st *state) bool {
	stmt, m := db.Statement, st.m
	ls := st.caps.Loader
	if ls == nil || !m.Lockable || loadAccess(m) != Write || len(p.lockableJoins(db)) > 0 {
		return false
	}
	if _, grouped := stmt.Clauses["GROUP BY"]; grouped {
		return false
	}
	col, resource := m.PK, m.Table
	if m.Root != nil {
		chain := m.Chain()
		if len(chain) != 1 {
			return false
		}
		col, resource = []*schema.Field{m.Root.Field}, chain[0].Table
	}
	if len(col) != 1 || !textKeyKind(col[0]) {
		return false
	}
	ttl, err := p.ttlFor(db, m)
	if err != nil {
		st.fail(db, err)
		return true
	}
	token, err := lockstore.NewToken()
	if err != nil {
		st.fail(db, err)
		return true
	}
	q := p.keySelect(db, []clause.Column{{Table: clause.CurrentTable, Name: col[0].DBName}}, false)
	grants, refused, err := ls.FindAndLock(direct(db), q.SQL.String(), q.Vars, stmt.Quote(col[0].DBName), resource, lockstore.Owner(st.owner), token, ttl)
	if refused {
		return false // the general path names the holders
	}
	if err != nil {
		st.fail(db, err)
		return true
	}
	st.detached = true
	if m.Root != nil {
		st.links = map[string]bool{}
	}
	for _, g := range grants {
		st.locked[g.Key], st.newly[g.Key] = true, g.Fresh
		if st.links != nil {
			st.links[g.Key.ID] = true
		}
		p.hints.put(st.owner.Session, g.Key, g.Expires)
	}
	return true
}

// textKeyKind says whether a key column's text in SQL (CAST AS TEXT) is
// its canonical spelling (canonical): integers and exact text.
func textKeyKind(f *schema.Field) bool {
	k := model.KindOf(f)
	return k == kindInt || k == kindText
}

// unpreparedPool puts back the pool tryFast or prepareWrite replaced with
// one of prepared statements, if it is still there.
func unpreparedPool(db *gorm.DB, st *state) {
	if !st.prepared {
		return
	}
	st.prepared = false
	if pool, ok := lockstore.Unprepared(db.Statement.ConnPool); ok {
		db.Statement.ConnPool = pool
	}
}
