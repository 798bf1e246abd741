package gormstmt

import (
	"reflect"
	"slices"
	"strings"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// KeySelect builds SELECT cols with the statement's FROM, JOINs, WHERE,
// ORDER and LIMIT; with caps, a write's locking SELECT on a database that
// can do what caps says.
func KeySelect(db *gorm.DB, cols []clause.Column, caps *lockstore.Traits) *gorm.Statement {
	stmt := db.Statement
	q := &gorm.Statement{
		DB: db, ConnPool: stmt.ConnPool, Context: stmt.Context, Table: stmt.Table, TableExpr: stmt.TableExpr, Schema: stmt.Schema,
		Clauses: map[string]clause.Clause{},
	}
	forUpdate := caps != nil
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

// Retargeted is the table that the statement's clause via (INSERT,
// UPDATE, or a DELETE's FROM) makes it write instead of its own: ""
// when none does.
func Retargeted(stmt *gorm.Statement, via string) string {
	var name string
	switch c := stmt.Clauses[via].Expression.(type) {
	case clause.Insert:
		name = c.Table.Name
	case clause.Update:
		name = c.Table.Name
	case clause.From:
		if len(c.Tables) > 0 {
			name = c.Tables[0].Name
		}
	}
	if name == "" || name == clause.CurrentTable || strings.EqualFold(name, stmt.Table) {
		return ""
	}
	return name
}

// refuseRetarget refuses, before any hook, a write whose clause makes it
// write a lockable table other than its model's: the plugin reads keys and

// ConflictOnKey says whether an upsert's conflict target is the primary
// key (GORM's Save and association saves use it, or name no columns).
func ConflictOnKey(stmt *gorm.Statement, m *model.Model) bool {
	c, _ := stmt.Clauses["ON CONFLICT"].Expression.(clause.OnConflict)
	if c.OnConstraint != "" {
		return false // PostgreSQL takes the constraint over the columns
	}
	if len(c.Columns) == 0 {
		// GORM fills in the primary key for UpdateAll only; elsewhere
		// SQLite would take any unique index.
		return c.OnConstraint == "" && c.UpdateAll
	}
	if len(c.Columns) != len(m.PK) {
		return false
	}
	for i, col := range c.Columns {
		if col.Name != m.PK[i].DBName && col.Name != m.PK[i].Name {
			return false
		}
	}
	return true
}

// MayCollideBeyondKey says whether a row written to m's table may collide
// with another on a unique key that is not its primary key, by the
// unique keys the statement's model declares and those the lockable model
// declares (a DTO over the table may leave them out). With neither known,
// it may.
func MayCollideBeyondKey(db *gorm.DB, m *model.Model) bool {
	known := false
	if sch := db.Statement.Schema; sch != nil && sch.Table == m.Table {
		if uniqueBeyondKey(sch) {
			return true
		}
		known = true
	}
	if m.Type != nil {
		stmt := &gorm.Statement{DB: db}
		if err := stmt.Parse(reflect.New(m.Type).Interface()); err == nil {
			return uniqueBeyondKey(stmt.Schema)
		}
	}
	return !known
}

// uniqueBeyondKey says whether a row of sch may collide with another row on
// a unique key without colliding on its primary key: a unique column or
// index that does not include every primary-key column. A unique key that
// includes them collides only with the row of the same key. Without a
// schema the answer is yes: refusing is the safe side.
func uniqueBeyondKey(sch *schema.Schema) bool {
	if sch == nil {
		return true
	}
	covers := func(fields []*schema.Field) bool {
		for _, pk := range sch.PrimaryFields {
			if !slices.Contains(fields, pk) {
				return false
			}
		}
		return len(sch.PrimaryFields) > 0
	}
	for _, f := range sch.Fields {
		if f.Unique && !covers([]*schema.Field{f}) {
			return true
		}
	}
	for _, idx := range sch.ParseIndexes() {
		if !strings.EqualFold(idx.Class, "UNIQUE") {
			continue
		}
		fields := make([]*schema.Field, 0, len(idx.Fields))
		for _, o := range idx.Fields {
			fields = append(fields, o.Field) // an expression has none: not covered
		}
		if !covers(fields) {
			return true
		}
	}
	return false
}

// Replaces says whether an INSERT carries a REPLACE modifier (SQLite's
// INSERT OR REPLACE), which deletes whatever row it conflicts with.
func Replaces(stmt *gorm.Statement) bool {
	ins, ok := stmt.Clauses["INSERT"].Expression.(clause.Insert)
	return ok && strings.Contains(strings.ToUpper(ins.Modifier), "REPLACE")
}

// Upserts says whether an INSERT overwrites rows that exist (Save, and
// association saves with FullSaveAssociations).
func Upserts(stmt *gorm.Statement) bool {
	c, ok := stmt.Clauses["ON CONFLICT"].Expression.(clause.OnConflict)
	return ok && !c.DoNothing && (c.UpdateAll || len(c.DoUpdates) > 0)
}

// ModelType is the struct type of a model value: *T, []T, *[]*T, ….
func ModelType(v any) reflect.Type {
	t := reflect.TypeOf(v)
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		t = t.Elem()
	}
	return t
}

// LimitPerRecord says whether stmt is exactly the load LimitPerRecord
// builds (gorm's generics.go).
func LimitPerRecord(stmt *gorm.Statement) bool {
	te := stmt.TableExpr
	if te == nil || te.SQL != "(?) t" || len(te.Vars) != 1 || stmt.Schema == nil || len(stmt.Selects) > 0 || len(stmt.Joins) > 0 || len(stmt.Clauses) != 1 {
		return false
	}
	inner, ok := te.Vars[0].(*gorm.DB)
	if !ok || inner.Statement.SQL.Len() > 0 || inner.Statement.TableExpr != nil || len(inner.Statement.Joins) > 0 ||
		ModelType(inner.Statement.Model) != stmt.Schema.ModelType || inner.Statement.Table != "" && inner.Statement.Table != stmt.Schema.Table {
		return false
	}
	for _, c := range inner.Statement.Selects {
		if stmt.Schema.LookUpField(c) == nil {
			return false // a column of its own, or nothing
		}
	}
	sel, ok := inner.Statement.Clauses["SELECT"].Expression.(clause.CommaExpression)
	if !ok || len(sel.Exprs) < 2 {
		return false
	}
	rnn, ok := sel.Exprs[len(sel.Exprs)-1].(clause.Expr)
	if !ok || rnn.SQL != "ROW_NUMBER() OVER (PARTITION BY ? ?) AS ?" {
		return false
	}
	for _, e := range sel.Exprs[:len(sel.Exprs)-1] {
		if x, ok := e.(clause.Expr); !ok || x.SQL != "*" && x.SQL != "?" {
			return false
		}
	}
	for name := range inner.Statement.Clauses {
		if name != "SELECT" && name != "WHERE" && name != "ORDER BY" {
			return false
		}
	}
	where, ok := stmt.Clauses["WHERE"].Expression.(clause.Where)
	return ok && len(where.Exprs) == 1
}

// EachJoin calls fn with every relation the statement's Joins paths pass
// (nested ones too: Joins("Seat.Desk")), once per alias: the joined
// table's alias in the query (Seat__Desk), the relation fields from the
// statement's model down to it, and its schema. fn returns false to stop.
func EachJoin(stmt *gorm.Statement, fn func(alias string, fields []*schema.Field, s *schema.Schema) bool) {
	if stmt.Schema == nil || len(stmt.Joins) == 0 {
		return
	}
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
			if !fn(alias, fields, cur) {
				return
			}
		}
	}
}
