package offlinelock

import (
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// fastPath is a one-statement way to load a single row by primary key on
// PostgreSQL, the commonest load of all (First(&c, 129)). Both paths check
// the lock in the very statement that reads the row, so neither can return
// a row the session does not hold; when they return no row, the load falls
// back to the general path, which decides exactly and names the holders.
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
)

// grantCTE names the CTE of fastGrant.
const grantCTE = "offlinelock_grant"

// tryFast rewrites a simple single-row load into one of the fast paths,
// builds it, and reports whether it did.
func (p *Plugin) tryFast(db *gorm.DB, st *state) bool {
	stmt := db.Statement
	if !st.t.d.dollar || st.m.root != nil || !locksRows(st.m) || len(stmt.Preloads) > 0 || len(stmt.Joins) > 0 || stmt.TableExpr != nil || stmt.Distinct {
		return false
	}
	for _, name := range []string{"FOR", "GROUP BY"} {
		if _, ok := stmt.Clauses[name]; ok {
			return false
		}
	}
	keys, ok := knownKeys(stmt, st.m)
	if !ok && len(st.m.pk) == 1 {
		// First(&Account{ID: 2}): gorm:query adds the key from the value.
		if v := stmt.ReflectValue; v.Kind() == reflect.Struct && v.Type() == st.m.typ {
			if r, found := st.m.pkRow(stmt.Context, stmt.Table, v); found {
				keys, ok = []key{r.k}, true
			}
		}
	}
	if !ok || len(keys) != 1 {
		return false
	}
	k := keys[0]
	ttl, err := p.ttlFor(db, st.m)
	if err != nil {
		st.fail(db, err)
		return true
	}
	if where, ok := stmt.Clauses["WHERE"]; ok {
		st.where = &where
	}
	var cte string
	var cteVars []any
	switch {
	case p.hints.fresh(st.owner.Session, k, ttl/2):
		st.fast = fastHeld
		held := `holder = '' AND access = 'write'`
		if st.m.loadAccess() == Read {
			held = `(holder = '' AND access = 'write' OR holder = session)`
		}
		stmt.AddClause(clause.Where{Exprs: []clause.Expression{clause.Expr{
			SQL: `EXISTS (SELECT 1 FROM ` + st.t.table + ` WHERE resource = ? AND lock_id = ? AND session = ? AND ` + held +
				` AND expires_at > clock_timestamp() + ? * interval '1 microsecond')`,
			Vars: []any{k.resource, k.id, st.owner.Session, (ttl / 2).Microseconds()},
		}}})
	case st.m.loadAccess() == Write:
		st.fast = fastGrant
		if st.fastTok, err = newToken(); err != nil {
			st.fail(db, err)
			return true
		}
		stmt.AddClause(clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: `EXISTS (SELECT 1 FROM ` + grantCTE + `)`}}})
		stmt.AddClause(clause.Locking{Strength: clause.LockingStrengthShare, Table: clause.Table{Name: clause.CurrentTable}})
		cte, cteVars = st.t.grantSQL(k, st.owner, st.fastTok, ttl)
	default:
		return false
	}
	st.fastKey, st.fastRewrote = k, true
	callbacks.BuildQuerySQL(db)
	if cte != "" {
		// The CTE's parameters are numbered after the query's.
		n := len(stmt.Vars)
		var b strings.Builder
		for _, r := range cte {
			if r == '?' {
				n++
				fmt.Fprintf(&b, "$%d", n)
				continue
			}
			b.WriteRune(r)
		}
		cte = b.String()
		sql := "WITH " + grantCTE + " AS (" + cte + ") " + stmt.SQL.String()
		stmt.SQL.Reset()
		stmt.SQL.WriteString(sql)
		stmt.Vars = append(stmt.Vars, cteVars...)
	}
	return true
}

// fastDone finishes a fast path after gorm:query: a row came back, so the
// lock is held; or none did, and the load takes the general path. It
// reports whether the load may go on to its usual checks.
func (p *Plugin) fastDone(db *gorm.DB, st *state) bool {
	path := st.fast
	st.fast = fastNone
	if db.Error != nil && !errors.Is(db.Error, gorm.ErrRecordNotFound) {
		return false
	}
	if db.Error == nil && db.RowsAffected > 0 {
		st.locked[st.fastKey] = true
		st.known = []key{st.fastKey} // the WHERE pins the row to its key
		if path == fastGrant {
			ttl, _ := p.ttlFor(db, st.m)
			p.hints.put(st.owner.Session, st.fastKey, time.Now().Add(ttl))
		}
		return true
	}
	// No row: not locked by the session, someone else holds it, or no such
	// row. Undo the rewrite and take the general path.
	db.Error, db.RowsAffected = nil, 0
	if st.restore != nil {
		st.restore()
	}
	stmt := db.Statement
	if st.where != nil {
		stmt.Clauses["WHERE"] = *st.where
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
		return false
	}
	return reread(db, st)
}

// grantSQL is fastWrite's statement for one key, with ? placeholders.
func (t *lockTable) grantSQL(k key, o Owner, token string, ttl time.Duration) (string, []any) {
	return `INSERT INTO ` + t.table + ` AS l (` + lockColumns + `)
VALUES (?, ?, '', 'write', ?, ?, ?, nextval('` + unquote(t.seq) + `'), clock_timestamp(), clock_timestamp() + ? * interval '1 microsecond')
ON CONFLICT (resource, lock_id, holder) DO UPDATE SET ` + writeRefresh + `
WHERE ` + writeGrantable + `
RETURNING 1`, []any{k.resource, k.id, o.Session, o.User, token, ttl.Microseconds()}
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
	if err := st.t.dropSessionKeys(direct(db), gone, st.owner.Session); err != nil {
		st.fail(db, err)
	}
}

// findAndLock is, on PostgreSQL, the general load's lock-ahead in a single
// statement: a CTE finds the keys the query will read (its WHERE as a
// key-only SELECT), an INSERT … ON CONFLICT locks them all in key order,
// and the statement aborts itself (division by zero, SQLSTATE 22012) when
// any key is refused, so that it is all or nothing without a transaction.
// It serves loads outside a transaction that take Write locks on a
// single-column integer or text key: their own, or their root's one level
// up. It reports whether it handled the load (granted, or failed with an
// error other than a refusal); on a refusal the caller takes the general
// path, which names the holders.
func (p *Plugin) findAndLock(db *gorm.DB, st *state) bool {
	stmt, m := db.Statement, st.m
	if !st.t.d.dollar || !m.lockable || m.loadAccess() != Write || stmt.TableExpr != nil || len(p.lockableJoins(db)) > 0 {
		return false
	}
	if _, grouped := stmt.Clauses["GROUP BY"]; grouped {
		return false
	}
	col, resource := m.pk, stmt.Table
	if m.root != nil {
		m.mu.Lock()
		chain := m.chain
		m.mu.Unlock()
		if len(chain) != 1 {
			return false
		}
		col, resource = []*schema.Field{m.root.field}, chain[0].table
	}
	if len(col) != 1 || !textKeyKind(col[0]) {
		return false
	}
	ttl, err := p.ttlFor(db, m)
	if err != nil {
		st.fail(db, err)
		return true
	}
	batchToken, err := newToken()
	if err != nil {
		st.fail(db, err)
		return true
	}
	q := keySelect(db, []clause.Column{{Table: clause.CurrentTable, Name: col[0].DBName}}, false)
	n := len(q.Vars)
	arg := func(i int) string { return fmt.Sprintf("$%d", n+i) }
	c := stmt.Quote(col[0].DBName)
	query := `WITH offlinelock_keys AS (SELECT DISTINCT CAST(` + c + ` AS TEXT) AS lock_id FROM (` + q.SQL.String() + `) q WHERE ` + c + ` IS NOT NULL),
offlinelock_grants AS (
	INSERT INTO ` + st.t.table + ` AS l (` + lockColumns + `)
	SELECT ` + arg(1) + `, k.lock_id, '', 'write', ` + arg(2) + `, ` + arg(3) + `, ` + arg(4) + `, nextval('` + unquote(st.t.seq) + `'),
		clock_timestamp(), clock_timestamp() + ` + arg(5) + ` * interval '1 microsecond'
	FROM offlinelock_keys k ORDER BY k.lock_id COLLATE "C"
	ON CONFLICT (resource, lock_id, holder) DO UPDATE SET ` + writeRefresh + `
	WHERE ` + writeGrantable + `
	RETURNING lock_id, token, expires_at)
SELECT lock_id, token, expires_at, NULL::int FROM offlinelock_grants
UNION ALL
SELECT NULL, NULL, NULL, 1 / (CASE WHEN (SELECT count(*) FROM offlinelock_grants) = (SELECT count(*) FROM offlinelock_keys) THEN NULL ELSE 0 END)`
	args := append(q.Vars, resource, st.owner.Session, st.owner.User, batchToken, ttl.Microseconds())
	type grant struct {
		k     key
		fresh bool
		exp   time.Time
	}
	var grants []grant
	_, err = direct(db).query(query, args, func(r *sql.Rows) error {
		var id, tok *string
		var exp, check any
		if err := r.Scan(&id, &tok, &exp, &check); err != nil || id == nil {
			return err
		}
		e, err := scanTime(exp)
		grants = append(grants, grant{key{resource, *id}, *tok == batchToken, e})
		return err
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "22012" {
		return false // refused: the general path names the holders
	}
	if err != nil {
		st.fail(db, err)
		return true
	}
	st.detached = true
	if m.root != nil {
		st.links = map[string]bool{}
	}
	for _, g := range grants {
		st.locked[g.k], st.newly[g.k] = true, g.fresh
		if st.links != nil {
			st.links[g.k.id] = true
		}
		p.hints.put(st.owner.Session, g.k, g.exp)
	}
	return true
}

// textKeyKind says whether a key column's text in SQL (CAST AS TEXT) is
// its canonical spelling (canonical): integers and exact text.
func textKeyKind(f *schema.Field) bool {
	k := kindOf(f)
	return k == kindInt || k == kindText
}
