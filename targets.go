package offlinelock

// Which rows a statement reads or writes: the key-only SELECT with its
// FROM, JOINs, WHERE, ORDER and LIMIT, the rows that reached its
// destination (the keys its WHERE pins are read in failclosed.go).

import (
	"database/sql"
	"reflect"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
)

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
