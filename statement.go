package offlinelock

import (
	"database/sql"
	"fmt"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"github.com/offlinelock/offlinelock/internal/sqlscan"
	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// Which rows a statement reads or writes: the key-only SELECT with its
// FROM, JOINs, WHERE, ORDER and LIMIT, the rows that reached its
// destination (the keys its WHERE pins are read below: knownKeys).

// target is one row the plugin must lock: its key, the lock its model asks
// for, and the model.
type target struct {
	k key
	m *model.Model
}

// joinPath is a Joins path (nested ones too: Joins("Seat.Desk")) that
// fills a struct of a model locked on load.
type joinPath struct {
	alias  string          // the joined table's alias in the query: Seat__Desk
	fields []*schema.Field // the relation fields from the loaded model down to it
	m      *model.Model
	table  string // the joined model's table: the resource of its locks
}

// lockableJoins are the statement's Joins paths that fill structs of models
// locked on load, at any depth, whatever the loaded model is.
func (p *Plugin) lockableJoins(db *gorm.DB) []joinPath {
	stmt := db.Statement
	if stmt.Schema == nil || len(stmt.Joins) == 0 {
		return nil
	}
	var out []joinPath
	seen := map[string]bool{}
	for _, j := range stmt.Joins {
		cur, names, fields := stmt.Schema, []string(nil), []*schema.Field(nil)
		segs := strings.Split(j.Name, ".")
		for i, seg := range segs {
			rel, ok := cur.Relationships.Relations[seg]
			if !ok || rel.FieldSchema == nil {
				break
			}
			names, fields, cur = append(names, seg), append(fields, rel.Field), rel.FieldSchema
			alias := strings.Join(names, "__")
			if i == len(segs)-1 && j.Alias != "" {
				alias = j.Alias // Joins(clause.LeftJoin.Association("Desk").As("d"))
			}
			if seen[alias] {
				continue
			}
			seen[alias] = true
			if m := p.reg.ModelOf(cur, db.NamingStrategy); m.Lockable && m.Root == nil && m.Err == nil && m.LocksOnLoad() {
				out = append(out, joinPath{alias: alias, fields: slices.Clone(fields), m: m, table: cur.Table})
			}
		}
	}
	return out
}

// joinsMember says whether a Joins path of the statement fills a struct of
// an aggregate member: the plugin locks the roots of members it loads
// through their own model only, so such a load's SQL is checked as if the
// caller had written it (checkReadsOf refuses it when the member's root is
// locked on load).
func (p *Plugin) joinsMember(db *gorm.DB) bool {
	stmt := db.Statement
	if stmt.Schema == nil {
		return false
	}
	for _, j := range stmt.Joins {
		cur := stmt.Schema
		for _, seg := range strings.Split(j.Name, ".") {
			rel, ok := cur.Relationships.Relations[seg]
			if !ok || rel.FieldSchema == nil {
				break
			}
			if cur = rel.FieldSchema; p.reg.ModelOf(cur, db.NamingStrategy).Root != nil {
				return true
			}
		}
	}
	return false
}

// locksRows says whether the statement's own rows are locked on load (its
// model may be there only for the lockable models it joins).
func locksRows(m *model.Model) bool { return m.Lockable && m.Root == nil && m.LocksOnLoad() }

// loadedTargets lists the rows a query put into its destination: its own
// model's and those of lockable Joins. It reports false when the
// destination holds something other than the model.
// For members, links whose roots were resolved ahead (seen) need no
// second resolution.
func (p *Plugin) loadedTargets(db *gorm.DB, m *model.Model, seen map[string]bool) ([]target, bool, error) {
	stmt := db.Statement
	if m.Root != nil {
		all, ok := m.RootLinks(stmt.Context, stmt.ReflectValue)
		var links []any
		for _, l := range all {
			if !seen[model.TextKey(l)] {
				links = append(links, l)
			}
		}
		if !ok || len(links) == 0 {
			return nil, ok, nil
		}
		roots, err := p.rootsOf(db, m, links)
		return roots, true, err
	}
	joins := p.lockableJoins(db)
	var out []target
	keyless := false
	ok := model.StructsOf(stmt.ReflectValue, m.Type, func(v reflect.Value) {
		if locksRows(m) {
			if k, _, ok := m.RowKey(stmt.Context, v); ok {
				out = append(out, target{k, m})
			} else {
				keyless = true // Select without the key: the rows cannot be told apart
			}
		}
		for _, jp := range joins {
			e, ok := v, true
			for _, f := range jp.fields {
				// ReflectValueOf follows embedded pointers, where plain
				// field indexes do not.
				if e = f.ReflectValueOf(stmt.Context, e); e.Kind() == reflect.Pointer {
					if e.IsNil() {
						ok = false
						break
					}
					e = e.Elem()
				}
			}
			if ok {
				model.StructsOf(e, jp.m.Type, func(e reflect.Value) {
					if k, _, ok := jp.m.RowKey(stmt.Context, e); ok {
						out = append(out, target{k, jp.m})
					}
				})
			}
		}
	})
	if keyless && db.RowsAffected > 0 {
		return nil, false, nil
	}
	return out, ok, nil
}

// preselect finds the keys of the rows the statement will read or write:
// the same FROM, JOINs, WHERE, ORDER and LIMIT, selecting only primary keys
// (its own and those of lockable Joins). forUpdate row-locks them on
// PostgreSQL, so that a write finds the rows it will change.
func (p *Plugin) preselect(db *gorm.DB, m *model.Model, forUpdate bool) ([]target, error) {
	type part struct {
		m     *model.Model
		table string // the table's name in the query (a join's alias)
		res   string // the resource of its keys
	}
	var parts []part
	if forUpdate || locksRows(m) { // a write checks its own rows whatever the mode
		parts = append(parts, part{m, clause.CurrentTable, m.Table})
	}
	if !forUpdate {
		for _, jp := range p.lockableJoins(db) {
			parts = append(parts, part{jp.m, jp.alias, jp.table})
		}
	}
	if len(parts) == 0 {
		return nil, nil
	}
	var cols []clause.Column
	for _, pt := range parts {
		for _, f := range pt.m.PK {
			cols = append(cols, clause.Column{Table: pt.table, Name: f.DBName})
		}
	}
	q := p.keySelect(db, cols, forUpdate)
	var out []target
	// One row's values and texts, reused from row to row.
	vals, ptrs := make([]any, len(cols)), make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var texts []string
	_, err := direct(db).Query(q.SQL.String(), q.Vars, func(r *sql.Rows) error {
		clear(vals)
		if err := r.Scan(ptrs...); err != nil {
			return err
		}
		i := 0
		for _, pt := range parts {
			texts = slices.Grow(texts[:0], len(pt.m.PK))[:len(pt.m.PK)]
			null := false
			for j := range pt.m.PK {
				if vals[i] == nil {
					null = true
				} else {
					texts[j] = pt.m.IDText(j, vals[i])
				}
				i++
			}
			if !null { // a LEFT JOIN that found nothing
				out = append(out, target{key{Resource: pt.res, ID: model.EncodeKey(texts)}, pt.m})
			}
		}
		return nil
	})
	return out, err
}

// preselectLinks is preselect for a member: it reads the foreign keys that
// lead to the rows' roots.
func (p *Plugin) preselectLinks(db *gorm.DB, m *model.Model, forUpdate bool) ([]any, error) {
	q := p.keySelect(db, []clause.Column{{Table: clause.CurrentTable, Name: m.Root.Field.DBName}}, forUpdate)
	sqlText := q.SQL.String()
	if !forUpdate {
		// Many members share few roots: send each root key once.
		sqlText = lockstore.DistinctKeys(db.Statement.Quote(m.Root.Field.DBName), sqlText)
	}
	rows, err := rowsOf(db, sqlText, q.Vars, 1)
	var out []any
	for _, r := range rows {
		out = append(out, r[0])
	}
	return out, err
}

// keySelect builds SELECT cols with the statement's FROM, JOINs, WHERE,
// ORDER and LIMIT.
func (p *Plugin) keySelect(db *gorm.DB, cols []clause.Column, forUpdate bool) *gorm.Statement {
	stmt := db.Statement
	q := &gorm.Statement{
		DB: db, ConnPool: stmt.ConnPool, Context: stmt.Context, Table: stmt.Table, TableExpr: stmt.TableExpr, Schema: stmt.Schema,
		Clauses: map[string]clause.Clause{},
	}
	var caps lockstore.Traits // what a write's locking SELECT may do
	if forUpdate {
		caps = p.rowLocking(db)
	}
	names := []string{"FROM", "WHERE", "ORDER BY", "LIMIT"}
	if forUpdate && !caps.OrderedWrites {
		// A write's key-only SELECT finds the rows the write changes: GORM
		// builds ORDER BY and LIMIT into UPDATE and DELETE on MySQL only
		// (its dialect's clauses); elsewhere the write changes every row
		// its WHERE admits, and so must the check.
		names = names[:2]
	} else if _, grouped := stmt.Clauses["GROUP BY"]; grouped || !selectsRows(stmt) {
		// ORDER and LIMIT count groups, distinct values or aggregates, not
		// rows: find every row the WHERE admits, a superset of what they
		// are made of.
		names = names[:2]
	}
	for _, name := range names {
		if c, ok := stmt.Clauses[name]; ok {
			q.Clauses[name] = c
		}
	}
	if _, ok := q.Clauses["FROM"]; !ok {
		q.AddClause(clause.From{})
	}
	q.AddClause(clause.Select{Columns: cols})
	build := []string{"SELECT", "FROM", "WHERE", "ORDER BY", "LIMIT"}
	if forUpdate && caps.RowLocks {
		// OF names the table as FROM does: its alias, or its bare name for
		// a schema-qualified table (PostgreSQL refuses a qualified name).
		lock := clause.Locking{Strength: clause.LockingStrengthUpdate, Table: clause.Table{Name: stmt.Table}}
		if !caps.UpdateOf {
			lock.Table = clause.Table{} // MariaDB has no OF: the joined rows are locked too
		}
		q.AddClause(lock)
		build = append(build, "FOR")
	}
	q.Build(build...)
	return q
}

// existing returns which of rows exist in the statement's table, for
// writes that may insert rows nobody can have locked yet.
func (p *Plugin) existing(db *gorm.DB, m *model.Model, table string, rows []pkRow) (map[key]bool, error) {
	out := map[key]bool{}
	if len(rows) == 0 {
		return out, nil
	}
	stmt := db.Statement
	cols := make([]string, len(m.PK))
	for i, f := range m.PK {
		cols[i] = stmt.Quote(f.DBName)
	}
	byText := map[string]key{}
	widths := make([]int, len(rows))
	var args []any
	for i, r := range rows {
		widths[i] = len(r.vals)
		args = append(args, r.vals...)
		byText[r.k.ID] = r.k
	}
	q, args := gormBind(db, lockstore.ExistingKeys(stmt.Quote(table), cols, widths), args)
	_, err := direct(db).Query(q, args, func(r *sql.Rows) error {
		vals, err := scanValues(r, len(cols))
		if err != nil {
			return err
		}
		texts := make([]string, len(vals))
		for i, v := range vals {
			texts[i] = m.IDText(i, v)
		}
		if k, ok := byText[model.EncodeKey(texts)]; ok {
			out[k] = true
		}
		return nil
	})
	return out, err
}

// gormBind binds the ? placeholders of q, a statement on the
// application's tables, as GORM binds its own: through the dialector.
func gormBind(db *gorm.DB, q string, args []any) (string, []any) {
	s := &gorm.Statement{DB: db, Context: db.Statement.Context, Clauses: map[string]clause.Clause{}}
	clause.Expr{SQL: q, Vars: args}.Build(s)
	return s.SQL.String(), s.Vars
}

// rowsOf runs the query q, leaving out rows with a NULL: a NULL holds no
// key.
func rowsOf(db *gorm.DB, q string, vars []any, n int) ([][]any, error) {
	var out [][]any
	_, err := direct(db).Query(q, vars, func(r *sql.Rows) error {
		vals, err := scanValues(r, n)
		if err == nil && !slices.Contains(vals, nil) {
			out = append(out, vals)
		}
		return err
	})
	return out, err
}

// scanValues reads the n columns of the current row as driver values.
func scanValues(r *sql.Rows, n int) ([]any, error) {
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	return vals, r.Scan(ptrs...)
}

// selectsRows says whether each row the query returns is one row of its
// table: no DISTINCT, and no expression in the select list (an aggregate
// such as max(name), or a window, reads rows past ORDER and LIMIT).
func selectsRows(stmt *gorm.Statement) bool {
	sel, _ := stmt.Clauses["SELECT"].Expression.(clause.Select)
	if stmt.Distinct || sel.Distinct {
		return false
	}
	if e, ok := sel.Expression.(clause.Expr); ok && strings.Contains(e.SQL, "(") {
		return false
	}
	for _, s := range stmt.Selects {
		if strings.Contains(s, "(") {
			return false
		}
	}
	return true
}

// lockRows says whether the plugin's reads of the application's rows must
// lock them until the transaction ends (lockStore.rowLocks).
func (p *Plugin) lockRows(db *gorm.DB) bool {
	t, err := p.storeFor(db)
	return err == nil && t.RowLocks()
}

// rowLocking is what db's database can do with row locks.
func (p *Plugin) rowLocking(db *gorm.DB) lockstore.Traits {
	t, err := p.storeFor(db)
	if err != nil {
		return lockstore.Traits{}
	}
	return t.caps
}

// Fail closed: a statement that reads or writes rows of a lockable table is
// enforced exactly or refused. This file holds the refusals: the parts of a
// statement the plugin does not bound itself (raw SQL, a raw JOIN, a
// subquery as the table, a subquery in SELECT or WHERE) are tokenised, and
// a lockable table named there is refused where its mode asks for a lock;
// the parts it does bound are read only where they are sure to mean what
// they say (generated, and knownKeys: the keys a WHERE pins).

// lockableName is the lockable model named ident, for mentions.
func (p *Plugin) lockableName(ident string) (string, bool) {
	if m := p.reg.TableModel(ident); m != nil {
		return m.Table, true
	}
	if len(ident) >= pgNameLen {
		// PostgreSQL truncates identifiers to 63 bytes: any name with the
		// same first 63 bytes is that table to it.
		for _, m := range p.reg.Lockable() {
			if len(m.Table) >= pgNameLen && strings.EqualFold(m.Table[:pgNameLen], ident[:pgNameLen]) {
				return m.Table, true
			}
		}
	}
	return "", false
}

// pgNameLen is PostgreSQL's identifier length (NAMEDATALEN - 1 bytes).
const pgNameLen = 63

// namedModels are the lockable models whose tables sql names as
// identifiers (not in literals or comments).
func (p *Plugin) namedModels(sql string) []*model.Model {
	var out []*model.Model
	for _, name := range sqlscan.Mentions(sql, p.lockableName) {
		if m := p.reg.TableModel(name); m != nil {
			out = append(out, m)
		}
	}
	return out
}

// readsLocked returns the first model in ms whose rows need a lock to be
// read (its mode, or its root's, locks on load), other than those covered.
func (p *Plugin) readsLocked(ms []*model.Model, covered func(*model.Model) bool) *model.Model {
	for _, m := range ms {
		if covered != nil && covered(m) {
			continue
		}
		if err := p.reg.Resolve(m); err != nil || m.LocksOnLoad() {
			return m
		}
	}
	return nil
}

// volatileOrder marks an ORDER BY whose order changes from one evaluation
// to the next: random functions and fresh UUIDs. A refusal list: an ORDER
// BY of columns is stable, and GORM builds nothing else by itself.
var volatileOrder = regexp.MustCompile(`(?i)\b(rand|random|newid|uuid|gen_random_uuid|uuid_generate_v[14]|random_bytes|sys_guid)\s*\(`)

// refuseVolatileLimit refuses a lockable load or write that takes a LIMIT
// of rows in an order that changes between evaluations (ORDER BY RAND()
// LIMIT 1): the rows the plugin checks or locks need not be the rows the
// statement returns or changes.
func refuseVolatileLimit(db *gorm.DB, st *state) bool {
	lim, ok := db.Statement.Clauses["LIMIT"].Expression.(clause.Limit)
	if !ok || lim.Limit == nil && lim.Offset == 0 {
		return false
	}
	ob, ok := db.Statement.Clauses["ORDER BY"]
	if !ok || ob.Expression == nil {
		return false
	}
	// An ORDER BY of columns alone (First's primary key,
	// Order(clause.OrderByColumn{…})): each is quoted as an identifier,
	// so none calls a function.
	if cols, ok := ob.Expression.(clause.OrderBy); ok && cols.Expression == nil &&
		!slices.ContainsFunc(cols.Columns, func(c clause.OrderByColumn) bool { return c.Column.Raw }) {
		return false
	}
	if !volatileOrder.MatchString(exprSQL(db, ob.Expression)) {
		return false
	}
	st.fail(db, unenforceable(st.m.Table, "an ORDER BY of a random or volatile expression with a LIMIT picks rows the lock cannot pin, on lockable table"))
	return true
}

// readsDynamically refuses a raw read whose SQL no static reading can
// bound (sqlDynamic) while some lockable table is locked on load: it may
// read that table's rows without their locks. It reports whether it did.
func (p *Plugin) readsDynamically(db *gorm.DB, sql string) bool {
	for _, m := range p.reg.Lockable() {
		if p.reg.Resolve(m) != nil || m.LocksOnLoad() {
			if !sqlscan.Dynamic(sql) || p.bypassed(db, opRawQuery) {
				return false
			}
			db.AddError(unenforceable(m.Table, "a raw read of dynamic SQL (EXECUTE of built text, a function that reads a table named in a string) may read, without its locks, lockable table"))
			return true
		}
	}
	return false
}

// querySQL is the SQL the statement will send, built on a copy so that the
// statement itself is built later, by GORM, as it would be without the
// plugin; "" when it cannot name a table locked on load.
func (p *Plugin) querySQL(db *gorm.DB) string {
	if !p.mayNameLocked(db.Statement) && !p.joinsMember(db) { // a Joins names its association, not its table
		return ""
	}
	if db.Statement.SQL.Len() > 0 {
		return db.Statement.SQL.String()
	}
	tx := db.Session(&gorm.Session{Context: db.Statement.Context})
	tx.Statement.DB = tx
	tx.Statement.BuildClauses = db.Statement.BuildClauses
	tx.Statement.SQL.Reset()
	tx.Statement.Vars = nil
	callbacks.BuildQuerySQL(tx)
	return tx.Statement.SQL.String()
}

// checkReadsOf refuses a load whose SQL reads a lockable table, locked on
// load, that the plugin does not lock for it: a raw JOIN, a subquery, a
// joined member. own and the lockable Joins by association are covered.
func (p *Plugin) checkReadsOf(db *gorm.DB, sql string, own *model.Model) error {
	if sql == "" {
		return nil
	}
	// The references the plugin locks: the statement's own table once, and
	// each lockable Joins by association (by table: two Go types may share
	// one). Any further reference (a self-join, a subquery, a UNION) reads
	// rows the plugin did not lock.
	covered := map[string]int{}
	if own != nil {
		covered[strings.ToLower(own.Table)]++
		for _, jp := range p.lockableJoins(db) {
			covered[strings.ToLower(jp.table)]++
		}
	}
	refs := sqlscan.TableRefs(sql, p.lockableName)
	bad := p.readsLocked(p.namedModels(sql), func(m *model.Model) bool {
		name := strings.ToLower(m.Table)
		return covered[name] > 0 && refs[m.Table] <= covered[name]
	})
	if bad == nil || p.fromMigrator() {
		return nil
	}
	if bad.Root != nil && p.joinsMember(db) {
		return unenforceable(bad.Table, "a Joins of an aggregate member would read it without its root's lock (Preload loads members through their own model, which locks the root), lockable table")
	}
	return unenforceable(bad.Table, "the statement reads, beyond the rows the plugin locks (a raw JOIN, a self-join, a subquery, a joined member), lockable table")
}

// mayNameLocked cheaply says whether a statement could name a table locked
// on load: whether the text of its table, joins, selects and clauses,
// subqueries included, contains such a table's name. Only then is its SQL
// built and tokenised, which costs more than most statements.
func (p *Plugin) mayNameLocked(stmt *gorm.Statement) bool {
	names := p.reg.LockedOnLoad()
	if len(names) == 0 {
		return false
	}
	var b strings.Builder
	statementText(&b, stmt, 0)
	text := strings.ToLower(b.String())
	return strings.Contains(text, opaque) || containsAny(text, names)
}

// opaque marks statement text the plugin cannot read without building it.
const opaque = "\x00offlinelock:opaque"

// statementText writes what a statement's SQL is made of, for mayNameLocked.
func statementText(b *strings.Builder, stmt *gorm.Statement, depth int) {
	if stmt == nil || depth > 8 {
		return
	}
	table := stmt.Table
	if table == "" && stmt.Model != nil && stmt.DB != nil {
		// A subquery is parsed only when it is built.
		if ps := (&gorm.Statement{DB: stmt.DB}); ps.Parse(stmt.Model) == nil {
			table = ps.Table
		}
	}
	b.WriteString(table + " ")
	b.WriteString(stmt.SQL.String())
	if pendingScopes(stmt) {
		b.WriteString(opaque) // a subquery's Scopes run only when it is built
	}
	parts := []any{stmt.Selects, stmt.Clauses, stmt.TableExpr}
	for _, j := range stmt.Joins {
		parts = append(parts, j.Name, j.Expression, j.Conds, j.On)
	}
	for _, part := range parts {
		texts(reflect.ValueOf(part), b, depth, 0)
	}
}

// pendingScopes says whether stmt (a *gorm.Statement) may have Scopes not
// yet run: its unexported scopes field is not empty, or is not there to be
// read (a GORM that changed its shape), which counts as having some, so
// that the reading fails closed.
func pendingScopes(stmt any) bool {
	v := reflect.ValueOf(stmt)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return true
	}
	scopes := v.Elem().FieldByName("scopes")
	return scopes.Kind() != reflect.Slice || scopes.Len() > 0
}

// texts writes every string inside v, subqueries' included.
func texts(v reflect.Value, b *strings.Builder, depth, level int) {
	if !v.IsValid() || level > 12 {
		return
	}
	if v.CanInterface() {
		switch x := v.Interface().(type) {
		case *gorm.DB:
			if x != nil {
				statementText(b, x.Statement, depth+1)
			}
			return
		case gorm.Valuer:
			b.WriteString(opaque) // its SQL exists only once GORM builds it
			return
		case clause.Expression:
			if !gormExpression(x) {
				b.WriteString(opaque) // a caller's own Expression writes whatever it likes
				return
			}
		}
	}
	switch v.Kind() {
	case reflect.String:
		b.WriteString(v.String())
		b.WriteByte(' ')
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			texts(v.Elem(), b, depth, level+1)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := 0; i < v.Len(); i++ {
			texts(v.Index(i), b, depth, level+1)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			texts(it.Key(), b, depth, level+1)
			texts(it.Value(), b, depth, level+1)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			texts(v.Field(i), b, depth, level+1)
		}
	}
}

// gormExpression says whether e is one of GORM's own clause types, whose
// SQL is made of the strings inside it (texts reads those).
func gormExpression(e clause.Expression) bool {
	t := reflect.TypeOf(e)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() == "gorm.io/gorm/clause"
}

// countSelect matches the SELECT of GORM's Count and of a hand-written
// count of rows: a number that reveals no row's values.
var countSelect = regexp.MustCompile(`(?i)^\s*count\(\s*(\*|1|\?|distinct\s*\(\s*\?\s*\)|distinct\s*\(?\s*[\w."]+\s*\)?|[\w."]+)\s*\)\s*$`)

// isCount says whether the statement is a count of rows into a number
// (Count, or Select("count(*)")): anything else read into a number, such
// as Select("max(name)") or Select("count(*) + max(credit)"), is a load.
func isCount(stmt *gorm.Statement) bool {
	v := stmt.ReflectValue
	if !v.IsValid() || v.Kind() < reflect.Int || v.Kind() > reflect.Float64 {
		return false
	}
	expr := stmt.Clauses["SELECT"].Expression
	if sel, ok := expr.(clause.Select); ok {
		if len(sel.Columns) > 0 {
			return false
		}
		expr = sel.Expression
	}
	e, ok := expr.(clause.Expr)
	if !ok || !countSelect.MatchString(e.SQL) {
		return false
	}
	for _, v := range e.Vars {
		if _, ok := v.(clause.Column); !ok {
			return false
		}
	}
	return true
}

// fromMigrator says whether GORM's migrator sent the statement: its reads
// of a table (one row, for the column types) are introspection, not a
// business read, and its SQLite table rebuilds copy rows unchanged.
func (p *Plugin) fromMigrator() bool {
	var pcs [48]uintptr
	n := runtime.Callers(3, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "gorm.io/") &&
			(strings.Contains(f.Function, "/migrator.") || strings.Contains(f.Function, ".Migrator.")) {
			return true
		}
		if !more {
			return false
		}
	}
}

// checkWriteSQL refuses a write whose target is a table expression that
// names a lockable table without being a plain table (the plugin cannot
// tell which rows it changes), and a write whose WHERE or SET reads a table
// locked on load other than its own (a subquery).
func (p *Plugin) checkWriteSQL(db *gorm.DB, own *model.Model, op opKind) error {
	stmt := db.Statement
	if te := stmt.TableExpr; te != nil && own == nil {
		if named := p.namedModels(exprSQL(db, te)); len(named) > 0 && !p.fromMigrator() {
			return unenforceable(named[0].Table, "a "+string(op)+" through a table expression that is not a plain table names lockable table")
		}
	}
	locked := p.reg.LockedOnLoad()
	if len(locked) == 0 {
		return nil
	}
	// Every clause the write carries (WHERE, SET, FROM, ON CONFLICT,
	// RETURNING, …) and every SQL value inside what it writes (a subquery,
	// gorm.Expr, a GormValuer) may read another table.
	var parts []clause.Expression
	for _, c := range stmt.Clauses {
		if c.Expression != nil {
			parts = append(parts, c.Expression)
		}
	}
	seen := map[uintptr]bool{}
	for _, v := range []any{stmt.Dest, stmt.Model} {
		eachSQLExpr(db, reflect.ValueOf(v), func(e clause.Expression) { parts = append(parts, e) }, seen, 0)
	}
	for _, e := range parts {
		text := exprSQL(db, e)
		if !containsAny(strings.ToLower(text), locked) {
			continue // names no table locked on load: nothing to tokenise
		}
		// A reference to a table here is a subquery or a FROM; a qualified
		// column (customers.credit) is not.
		for table := range sqlscan.TableRefs(text, p.lockableName) {
			if bad := p.readsLocked([]*model.Model{p.reg.TableModel(table)}, nil); bad != nil {
				return unenforceable(bad.Table, "a "+string(op)+" reads, in a subquery or a FROM, lockable table")
			}
		}
	}
	return nil
}

// containsAny says whether text contains one of names.
func containsAny(text string, names []string) bool {
	for _, n := range names {
		if strings.Contains(text, n) {
			return true
		}
	}
	return false
}

// eachSQLExpr calls fn with every SQL expression among the values v holds:
// clause expressions, subqueries, and GormValuer values, in structs (their
// exported fields), maps, slices and pointers to them.
func eachSQLExpr(db *gorm.DB, v reflect.Value, fn func(clause.Expression), seen map[uintptr]bool, depth int) {
	if !v.IsValid() || depth > 6 {
		return
	}
	if v.CanInterface() {
		switch x := v.Interface().(type) {
		case clause.Expression:
			fn(x)
			return
		case *gorm.DB:
			if x != nil {
				fn(clause.Expr{SQL: "?", Vars: []any{x}})
			}
			return
		case gorm.Valuer:
			if v.Kind() != reflect.Pointer || !v.IsNil() {
				fn(x.GormValue(db.Statement.Context, db))
			}
			return
		}
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if v.Kind() == reflect.Pointer {
			if seen[v.Pointer()] {
				return
			}
			seen[v.Pointer()] = true
		}
		eachSQLExpr(db, v.Elem(), fn, seen, depth+1)
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			eachSQLExpr(db, it.Value(), fn, seen, depth+1)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := 0; i < v.Len(); i++ {
			eachSQLExpr(db, v.Index(i), fn, seen, depth+1)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				eachSQLExpr(db, v.Field(i), fn, seen, depth+1)
			}
		}
	}
}

// exprSQL builds one expression (subqueries included) on a scratch
// statement, to read the SQL it stands for.
func exprSQL(db *gorm.DB, e clause.Expression) string {
	s := &gorm.Statement{DB: db, Table: db.Statement.Table, Schema: db.Statement.Schema, Context: db.Statement.Context, Clauses: map[string]clause.Clause{}}
	e.Build(s)
	return s.SQL.String()
}

// refuseViews refuses, Strict or not and from the migrator too, DDL that
// makes a view, rule, trigger or function over a lockable table: a
// statement through it would reach the table's rows under another name.
// The DDL is read as every server reads it (sqlFaceDDL), comments,
// options and other statements around it included. Bypass lets it
// through. Under Strict, a rename of a lockable table or an INHERIT is
// refused too.
func (p *Plugin) refuseViews(db *gorm.DB) {
	sql := db.Statement.SQL.String()
	face := sqlscan.FaceDDL(sql)
	rename := !face && p.cfg.Strict && !p.fromMigrator() && sqlscan.RenameDDL(sql)
	if !face && !rename {
		return
	}
	if named := p.namedModels(sql); len(named) > 0 && !p.bypassed(db, opExec) {
		if face {
			db.AddError(unenforceable(named[0].Table, "a view, rule, trigger or function would reach the rows of lockable table"))
		} else {
			db.AddError(fmt.Errorf("%w: exec renames or re-parents lockable table %s (ALTER TABLE … RENAME, RENAME TABLE, INHERIT); run it as a migration or under offlinelock.Bypass", ErrStrict, named[0].Table))
		}
	}
}

// generated says whether every part of the statement's SQL is one GORM
// writes from the model and plain values (columns, comparisons, IN lists,
// ORDER BY columns, LIMIT, FOR): then it reads the statement's own table
// and its Joins by association and nothing else, and needs no tokenising.
func generated(stmt *gorm.Statement) bool {
	if stmt.TableExpr != nil || len(stmt.Selects) > 0 || len(stmt.Joins) > 0 {
		return false // Joins by association may join a member: tokenise
	}
	for _, c := range stmt.Clauses {
		switch x := c.Expression.(type) {
		case nil, clause.Limit, clause.Locking:
		case clause.Where:
			if !generatedConds(x.Exprs) {
				return false
			}
		case clause.OrderBy:
			if x.Expression != nil || slices.ContainsFunc(x.Columns, func(o clause.OrderByColumn) bool { return o.Column.Raw }) {
				return false
			}
		case clause.Select:
			if x.Expression != nil || slices.ContainsFunc(x.Columns, func(c clause.Column) bool { return c.Raw }) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// generatedConds says whether conditions are all column comparisons with
// plain values.
func generatedConds(exprs []clause.Expression) bool {
	for _, e := range exprs {
		var col any
		var vals []any
		switch x := e.(type) {
		case clause.Eq:
			col, vals = x.Column, []any{x.Value}
		case clause.Neq:
			col, vals = x.Column, []any{x.Value}
		case clause.Gt:
			col, vals = x.Column, []any{x.Value}
		case clause.Gte:
			col, vals = x.Column, []any{x.Value}
		case clause.Lt:
			col, vals = x.Column, []any{x.Value}
		case clause.Lte:
			col, vals = x.Column, []any{x.Value}
		case clause.IN:
			col, vals = x.Column, x.Values
		case clause.AndConditions:
			if !generatedConds(x.Exprs) {
				return false
			}
			continue
		default:
			return false
		}
		if c, ok := col.(clause.Column); !ok || c.Raw {
			return false
		}
		for _, v := range vals {
			if v != nil && !plainValue(v) {
				return false
			}
		}
	}
	return true
}

// knownKeys reads the keys a statement is limited to from its WHERE, when
// one of its AND-ed conditions is the primary key equal to or in a list of
// plain values, as First(&c, 129), Find(&cs, ids) and Delete(&T{}, id)
// build. It reports false when the WHERE does not pin the rows down.
func knownKeys(stmt *gorm.Statement, m *model.Model) ([]key, bool) {
	if len(m.PK) != 1 {
		return nil, false
	}
	w, ok := stmt.Clauses["WHERE"].Expression.(clause.Where)
	if !ok {
		return nil, false
	}
	for _, e := range w.Exprs {
		if or, ok := e.(clause.OrConditions); ok && len(or.Exprs) == 1 {
			return nil, false // joined with OR, not AND
		}
		if !closedCondition(e) {
			return nil, false
		}
	}
	isPK := func(c any) bool {
		col, ok := c.(clause.Column)
		return ok && !col.Raw && (col.Name == clause.PrimaryKey || col.Name == m.PK[0].DBName) &&
			(col.Table == "" || col.Table == clause.CurrentTable || col.Table == stmt.Table)
	}
	var values []any
	for _, e := range w.Exprs {
		switch x := e.(type) {
		case clause.IN:
			if isPK(x.Column) {
				values = x.Values
			}
		case clause.Eq:
			if isPK(x.Column) {
				values = []any{x.Value}
			}
		default:
			continue
		}
		if values != nil {
			break
		}
	}
	if values == nil {
		return nil, false
	}
	keys := make([]key, 0, len(values))
	for _, v := range values {
		if !plainValue(v) || m.Kinds[0] != kindInt && model.IsNumber(v) {
			// A number against a text key: MySQL compares them as numbers
			// ('7up' = 7, 'abc' = 0), so the rows it matches are not the
			// key's spelling; the general path reads the keys it matches.
			return nil, false
		}
		id, err := model.Canonical(m.Kinds[0], v)
		if err != nil {
			return nil, false // the general path finds the rows the database matches
		}
		keys = append(keys, key{Resource: m.Table, ID: id})
	}
	return keys, true
}

// closedCondition says whether e is sure to stay one AND-ed term of the
// WHERE: raw SQL with parentheses or an OR may close GORM's parentheses
// around it and OR in other rows ("1=1) OR (id = 129").
func closedCondition(e clause.Expression) bool {
	var sql string
	switch x := e.(type) {
	case clause.Expr:
		sql = x.SQL
		if !closedValues(x.Vars) {
			return false
		}
	case clause.NamedExpr:
		sql = x.SQL
		if !closedValues(x.Vars) {
			return false
		}
	case clause.AndConditions:
		return allClosed(x.Exprs)
	case clause.OrConditions:
		return allClosed(x.Exprs)
	case clause.NotConditions:
		return allClosed(x.Exprs) // NOT of a raw term is built without parentheses of its own
	case clause.Eq:
		return closedEq(x)
	case clause.Neq:
		return closedEq(clause.Eq(x))
	case clause.Gt:
		return closedEq(clause.Eq(x))
	case clause.Gte:
		return closedEq(clause.Eq(x))
	case clause.Lt:
		return closedEq(clause.Eq(x))
	case clause.Lte:
		return closedEq(clause.Eq(x))
	case clause.Like:
		return closedEq(clause.Eq(x))
	case clause.IN:
		col, isCol := x.Column.(clause.Column) // closedColumn
		return (!isCol || !col.Raw) && closedValues(x.Values)
	default:
		return false // an expression of another kind may build any SQL
	}
	if strings.ContainsAny(sql, "()") {
		return false
	}
	for _, id := range sqlscan.Read(sql).Idents {
		if strings.EqualFold(id, "or") {
			return false
		}
	}
	return true
}

// closedValues: no value is built into the SQL as SQL (an expression, a
// subquery, a GormValue): GORM writes those inline, where they can close
// parentheses and OR in other rows. Maps and slices are looked into (named
// arguments, IN lists).
func closedValues(vals []any) bool {
	for _, v := range vals {
		switch x := v.(type) {
		case nil, []byte:
		case *gorm.DB, clause.Expression, gorm.Valuer:
			return false
		case map[string]any:
			for _, e := range x {
				if !closedValues([]any{e}) {
					return false
				}
			}
		case []any:
			if !closedValues(x) {
				return false
			}
		case sql.NamedArg:
			if !closedValues([]any{x.Value}) {
				return false
			}
		default:
			if rv := reflect.ValueOf(v); (rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array) && rv.Type().Elem().Kind() != reflect.Uint8 {
				for i := 0; i < rv.Len(); i++ {
					if !closedValues([]any{rv.Index(i).Interface()}) {
						return false
					}
				}
			}
		}
	}
	return true
}

// closedEq: a comparison (Eq and its kin, which share its fields) of a
// quoted column with a plain value.
func closedEq(e clause.Eq) bool { return closedColumn(e.Column) && closedValues([]any{e.Value}) }

// closedColumn: a column GORM quotes, not raw SQL.
func closedColumn(c any) bool {
	col, ok := c.(clause.Column)
	return !ok || !col.Raw
}

func allClosed(exprs []clause.Expression) bool {
	for _, e := range exprs {
		if !closedCondition(e) {
			return false
		}
	}
	return true
}

// plainValue says whether v is a value whose text is a key, not a
// subquery, an expression or a list.
func plainValue(v any) bool {
	if v == nil {
		return false
	}
	switch v.(type) {
	case *gorm.DB, clause.Expression, gorm.Valuer, []byte:
		return false // SQL, or a value GORM replaces with the SQL it builds
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.Struct, reflect.Pointer, reflect.Func, reflect.Chan:
		_, stringer := v.(interface{ String() string })
		return stringer
	}
	return true
}
