package model

import (
	"reflect"
	"strings"

	"github.com/offlinelock/offlinelock/internal/sqlscan"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// JoinOwner is a lockable side of a join table (or a cascade's lockable
// child): Columns hold Model's key, in key order.
type JoinOwner struct {
	Model   *Model
	Columns []string
}

// PartialJoin is a join table, Join, that does not hold the whole key of
// its lockable side Side: which record a row relates cannot be told.
type PartialJoin struct {
	Join string
	Side *Model
}

// Error says which join table and side.
func (e *PartialJoin) Error() string {
	return "join table " + e.Join + " does not hold the whole key of lockable table " + e.Side.Table
}

// JoinOwners lists the lockable sides of the join table named table; a
// side whose key it does not hold whole is a *PartialJoin.
func (r *Registry) JoinOwners(table string) ([]JoinOwner, error) {
	byTable := map[string][]JoinSide{}
	var order []string
	for _, side := range r.JoinSides(table) {
		name := strings.ToLower(side.Table)
		if _, ok := byTable[name]; !ok {
			order = append(order, name)
		}
		byTable[name] = append(byTable[name], side)
	}
	var out []JoinOwner
	for _, name := range order {
		m := r.TableModel(name)
		if m == nil {
			continue
		}
		o := JoinOwner{Model: m}
		for _, f := range m.PK {
			for _, side := range byTable[name] {
				if side.Key == f.DBName || side.Key == "" && len(m.PK) == 1 {
					o.Columns = append(o.Columns, side.Column)
					break
				}
			}
		}
		if len(o.Columns) != len(m.PK) {
			return nil, &PartialJoin{Join: table, Side: m}
		}
		out = append(out, o)
	}
	return out, nil
}

// Cascades says whether a delete (del) or an update db runs of m's rows
// reaches other tables through foreign-key actions (an update: of the key).
func (r *Registry) Cascades(db *gorm.DB, m *Model, del bool) bool {
	return len(m.PK) == 1 && len(r.CascadesOf(m.Table, del, !del)) > 0 && (del || writesKey(db, m))
}

// writesKey says whether the update db runs writes m's key column.
func writesKey(db *gorm.DB, m *Model) bool {
	stmt := db.Statement
	if set, ok := stmt.Clauses["SET"].Expression.(clause.Set); ok {
		for _, a := range set {
			if NamesField(stmt.Schema, a.Column.Name, m.PK[0]) {
				return true
			}
		}
	}
	dest := reflect.Indirect(reflect.ValueOf(stmt.Dest))
	if d, mv := reflect.ValueOf(stmt.Dest), reflect.ValueOf(stmt.Model); d.Kind() == reflect.Pointer && mv.Kind() == reflect.Pointer && d.Pointer() == mv.Pointer() && d.Type() == mv.Type() {
		return false // Save and Updates of the model itself: its key is the WHERE
	}
	switch {
	case dest.Kind() == reflect.Map && dest.Type().Key().Kind() == reflect.String:
		return len(MapKeysNaming(stmt.Schema, dest, m.PK[0])) > 0
	case dest.Kind() == reflect.Struct:
		vals, _, _ := ValueRows(db, reflect.ValueOf(stmt.Dest), m.PK)
		return len(vals) > 0
	}
	return false
}

// WritesParentKey says whether an update by table name may write the
// parent's key that refs follow: a map's or SET's column naming it, or any
// column where refs do not say which it is.
func WritesParentKey(stmt *gorm.Statement, refs []CascadeRef) bool {
	var cols []string
	if set, ok := stmt.Clauses["SET"].Expression.(clause.Set); ok {
		for _, a := range set {
			cols = append(cols, a.Column.Name)
		}
	}
	if dest := reflect.Indirect(reflect.ValueOf(stmt.Dest)); dest.Kind() == reflect.Map && dest.Type().Key().Kind() == reflect.String {
		for _, k := range dest.MapKeys() {
			cols = append(cols, k.String())
		}
	} else if dest.IsValid() && len(cols) == 0 {
		return true // a struct or anything else: its columns are not read here
	}
	for _, r := range refs {
		for _, c := range cols {
			if r.ParentColumn == "" || strings.EqualFold(c, r.ParentColumn) {
				return true
			}
		}
	}
	return false
}

// ParentNamed finds, among the tables a write by table name names
// (stmt.Table, or those its TableExpr mentions), the first whose
// foreign-key actions a delete (del) or an update of the key (upd) reaches
// lockable rows through, and those actions; "" and nil when none.
func (r *Registry) ParentNamed(stmt *gorm.Statement, del, upd bool) (string, []CascadeRef) {
	names := []string{stmt.Table}
	if stmt.TableExpr != nil { // "schema.table", a quoted name, an alias, a join
		names = sqlscan.Mentions(stmt.TableExpr.SQL, func(ident string) (string, bool) {
			return strings.ToLower(ident), len(r.CascadesOf(ident, del, upd)) > 0
		})
	}
	for _, name := range names {
		if refs := r.CascadesOf(name, del, upd); len(refs) > 0 && (!upd || WritesParentKey(stmt, refs)) {
			return name, refs
		}
	}
	return "", nil
}

// InsertedRows reads the keys of o's records that the rows a Create of
// the join table inserts relate; false when a row lacks the whole key.
func (o JoinOwner) InsertedRows(db *gorm.DB) ([][]any, bool) {
	fields := make([]*schema.Field, len(o.Columns))
	for i, c := range o.Columns {
		fields[i] = SpecField(c, o.Model.Kinds[i])
	}
	rows, complete, known := ValueRows(db, db.Statement.ReflectValue, fields)
	return rows, complete && known
}

// NamesOnly says whether a table expression is table itself, plainly
// (Table("folders") over the Folder model): the model's own write.
func NamesOnly(expr *clause.Expr, table string) bool {
	name, _, ok := sqlscan.SimpleTable(expr.SQL)
	return ok && len(expr.Vars) == 0 && strings.EqualFold(name, table)
}
