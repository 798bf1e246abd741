// Package gormstmt reads what a GORM statement says: its text, its
// conditions, the keys it names, its shape. It only reads (and, for a
// check, briefly extends) statements; it never runs one.
package gormstmt

import (
	"reflect"
	"regexp"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// MayName cheaply says whether stmt could name one of names (lower-case
// table names): whether the text of its table, joins, selects and
// clauses, subqueries included, contains one, or holds a part whose SQL
// exists only once built. Only then need its SQL be built and tokenised.
func MayName(stmt *gorm.Statement, names []string) bool {
	if len(names) == 0 {
		return false
	}
	var b strings.Builder
	statementText(&b, stmt, 0)
	text := strings.ToLower(b.String())
	return strings.Contains(text, opaque) || ContainsAny(text, names)
}

// opaque marks statement text the plugin cannot read without building it.
const opaque = "\x00offlinelock:opaque"

// statementText writes what a statement's SQL is made of, for MayName.
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

// IsCount says whether the statement is a count of rows into a number
// (Count, or Select("count(*)")): anything else read into a number, such
// as Select("max(name)") or Select("count(*) + max(credit)"), is a load.
func IsCount(stmt *gorm.Statement) bool {
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

// ContainsAny says whether text contains one of names.
func ContainsAny(text string, names []string) bool {
	for _, n := range names {
		if strings.Contains(text, n) {
			return true
		}
	}
	return false
}

// ExprSQL builds one expression (subqueries included) on a scratch
// statement, to read the SQL it stands for.
func ExprSQL(db *gorm.DB, e clause.Expression) string {
	s := &gorm.Statement{DB: db, Table: db.Statement.Table, Schema: db.Statement.Schema, Context: db.Statement.Context, Clauses: map[string]clause.Clause{}}
	e.Build(s)
	return s.SQL.String()
}

// Bind binds the ? placeholders of q, a statement on the
// application's tables, as GORM binds its own: through the dialector.
func Bind(db *gorm.DB, q string, args []any) (string, []any) {
	s := &gorm.Statement{DB: db, Context: db.Statement.Context, Clauses: map[string]clause.Clause{}}
	clause.Expr{SQL: q, Vars: args}.Build(s)
	return s.SQL.String(), s.Vars
}
