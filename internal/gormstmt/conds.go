package gormstmt

import (
	"database/sql"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"github.com/offlinelock/offlinelock/internal/sqlscan"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// volatileOrder marks an ORDER BY whose order changes from one evaluation
// to the next: random functions and fresh UUIDs. A refusal list: an ORDER
// BY of columns is stable, and GORM builds nothing else by itself.
var volatileOrder = regexp.MustCompile(`(?i)\b(rand|random|newid|uuid|gen_random_uuid|uuid_generate_v[14]|random_bytes|sys_guid)\s*\(`)

// VolatileLimit says whether the statement takes a LIMIT of rows in an
// order that changes between evaluations (ORDER BY RAND() LIMIT 1): the
// rows a check reads need not be the rows the statement returns or changes.
func VolatileLimit(db *gorm.DB) bool {
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
	return volatileOrder.MatchString(ExprSQL(db, ob.Expression))
}

// Generated says whether every part of the statement's SQL is one GORM
// writes from the model and plain values (columns, comparisons, IN lists,
// ORDER BY columns, LIMIT, FOR): then it reads the statement's own table
// and its Joins by association and nothing else, and needs no tokenising.
func Generated(stmt *gorm.Statement) bool {
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

// KnownKeys reads the keys a statement is limited to from its WHERE, when
// one of its AND-ed conditions is the primary key equal to or in a list of
// plain values, as First(&c, 129), Find(&cs, ids) and Delete(&T{}, id)
// build. It reports false when the WHERE does not pin the rows down.
func KnownKeys(stmt *gorm.Statement, m *model.Model) ([]lockstore.Key, bool) {
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
	keys := make([]lockstore.Key, 0, len(values))
	for _, v := range values {
		if !plainValue(v) || m.Kinds[0] != lockstore.KindInt && model.IsNumber(v) {
			// A number against a text key: MySQL compares them as numbers
			// ('7up' = 7, 'abc' = 0), so the rows it matches are not the
			// key's spelling; the general path reads the keys it matches.
			return nil, false
		}
		id, err := model.Canonical(m.Kinds[0], v)
		if err != nil {
			return nil, false // the general path finds the rows the database matches
		}
		keys = append(keys, lockstore.Key{Resource: m.Table, ID: id})
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
		col, isCol := x.Column.(clause.Column) // closedColumn, inline: a load by key passes here
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

// WithKeyCondition runs fn with stmt's WHERE AND-ed with m's primary key
// in vals, as GORM's update and delete callbacks add it after the
// caller's terms, and puts the WHERE back.
func WithKeyCondition(stmt *gorm.Statement, m *model.Model, vals [][]any, fn func() error) error {
	saved, had := stmt.Clauses["WHERE"]
	var ors []clause.Expression
	for _, v := range vals {
		var and []clause.Expression
		for i, f := range m.PK {
			and = append(and, clause.Eq{Column: clause.Column{Table: clause.CurrentTable, Name: f.DBName}, Value: v[i]})
		}
		ors = append(ors, clause.And(and...))
	}
	keys := ors[0]
	if len(ors) > 1 {
		keys = clause.Or(ors...) // (a OR b): one OR of one term would read as "OR a"
	}
	where, _ := saved.Expression.(clause.Where)
	where.Exprs = append(slices.Clone(where.Exprs), keys)
	stmt.Clauses["WHERE"] = clause.Clause{Name: "WHERE", Expression: where}
	defer func() {
		if had {
			stmt.Clauses["WHERE"] = saved
		} else {
			delete(stmt.Clauses, "WHERE")
		}
	}()
	return fn()
}

// ValueKey is the key gorm:query adds from the destination's own value
// (First(&Account{ID: 2})), or nil.
func ValueKey(stmt *gorm.Statement, m *model.Model) []lockstore.Key {
	if v := stmt.ReflectValue; len(m.PK) == 1 && v.Kind() == reflect.Struct && v.Type() == m.Type {
		if k, _, found := m.RowKey(stmt.Context, v); found {
			return []lockstore.Key{k}
		}
	}
	return nil
}

// AndWhere adds cond to stmt's WHERE, as AddClause(clause.Where{…}) does,
// without the intermediate slices and boxes AddClause's MergeClause makes.
// The existing conditions' slice is copied, never appended to: a fallback
// puts the original WHERE back (fastDone).
func AndWhere(stmt *gorm.Statement, cond clause.Expression) {
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
