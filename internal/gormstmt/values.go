package gormstmt

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/offlinelock/offlinelock/internal/model"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// NextLinks reads the root links a create, an update or (del) a delete
// sets: from the value a Create or Save writes, from what an Update sets (a
// struct, a map, Update(col, v)), and from a SET clause (Clauses(clause.Set
// {…}), the generics Set). A link set as SQL is among them (IsSQL).
func NextLinks(db *gorm.DB, m *model.Model, create, del bool) []any {
	stmt := db.Statement
	src := stmt.ReflectValue
	if !create && !SamePointer(stmt.Dest, stmt.Model) {
		src = reflect.ValueOf(stmt.Dest)
	}
	rows, _, _ := model.ValueRows(db, src, []*schema.Field{m.Root.Field})
	var links []any
	for _, r := range rows {
		links = append(links, r[0])
	}
	if !del {
		// GORM saves an assigned belongs-to root first and copies its key
		// into the link: seen now, before any hook runs.
		links = append(links, assignedRoots(stmt, m, src)...)
	}
	if dest := reflect.Indirect(reflect.ValueOf(stmt.Dest)); !create && dest.Kind() == reflect.Map && dest.Type().Key().Kind() == reflect.String {
		// Every key that names the link, in any spelling: GORM writes
		// them all, and the last one wins. A NULL or zero link belongs to
		// no root: the member leaves its old one, which is checked anyway.
		for _, k := range model.MapKeysNaming(stmt.Schema, dest, m.Root.Field) {
			v := dest.MapIndex(k)
			for v.IsValid() && (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) {
				if v.IsNil() {
					v = reflect.Value{}
				} else {
					v = v.Elem()
				}
			}
			if v.IsValid() && !v.IsZero() {
				links = append(links, v.Interface())
			}
		}
	}
	if set, ok := stmt.Clauses["SET"].Expression.(clause.Set); ok {
		for _, a := range set {
			if model.NamesField(stmt.Schema, a.Column.Name, m.Root.Field) {
				links = append(links, a.Value)
			}
		}
	}
	return links
}

// assignedRoots are the keys of the belongs-to roots assigned in the rows
// of v (line.Order = &Order{ID: 8}), which GORM saves before the write and
// copies into each row's link.
func assignedRoots(stmt *gorm.Statement, m *model.Model, v reflect.Value) []any {
	rel := m.Root.Rel
	if rel == nil || m.Type == nil || len(rel.References) != 1 || rel.References[0].PrimaryKey == nil {
		return nil
	}
	pk := rel.References[0].PrimaryKey
	var out []any
	model.StructsOf(v, m.Type, func(row reflect.Value) {
		a := rel.Field.ReflectValueOf(stmt.Context, row)
		for a.Kind() == reflect.Pointer || a.Kind() == reflect.Interface {
			if a.IsNil() {
				return
			}
			a = a.Elem()
		}
		if a.Kind() != reflect.Struct || a.Type() != pk.Schema.ModelType {
			return
		}
		if k, zero := pk.ValueOf(stmt.Context, a); !zero {
			out = append(out, k)
		}
	})
	return out
}

// IsSQL says whether v is SQL rather than a value: an expression, a
// subquery, or a GormValue (GORM writes the SQL it builds, whatever the Go
// value says).
func IsSQL(v any) bool {
	switch v.(type) {
	case clause.Expression, *gorm.DB, gorm.Valuer:
		return true
	}
	return false
}

// SamePointer says whether a and b are the same pointer (Save: the value
// written is the model).
func SamePointer(a, b any) bool {
	ra, rb := reflect.ValueOf(a), reflect.ValueOf(b)
	return ra.Kind() == reflect.Pointer && rb.Kind() == reflect.Pointer && ra.Pointer() == rb.Pointer() && ra.Type() == rb.Type()
}

// KeySignature spells the values of the model's rows that the check reads
// keys from: each row's primary key and, for a member, its link.
func KeySignature(stmt *gorm.Statement, m *model.Model) string {
	fields := append([]*schema.Field(nil), m.PK...)
	if m.Root != nil {
		fields = append(fields, m.Root.Field)
	}
	var b strings.Builder
	row := func(v reflect.Value) {
		for _, f := range fields {
			if f == nil || f.Schema == nil || v.Type() != f.Schema.ModelType {
				b.WriteString("?\x00") // not the model's struct: nothing to compare
				continue
			}
			x, zero := f.ValueOf(stmt.Context, v)
			if rv := reflect.ValueOf(x); rv.Kind() == reflect.Pointer && !rv.IsNil() {
				x = rv.Elem().Interface()
			}
			fmt.Fprintf(&b, "%t %#v\x00", zero, x)
		}
		b.WriteByte('\n')
	}
	// What the statement writes besides the model: a hook's SetColumn
	// writes a map Dest, and a hook may add a SET clause.
	if dest := reflect.Indirect(reflect.ValueOf(stmt.Dest)); dest.Kind() == reflect.Map && dest.Type().Key().Kind() == reflect.String {
		for _, f := range fields {
			for _, k := range model.MapKeysNaming(stmt.Schema, dest, f) {
				fmt.Fprintf(&b, "map %s=%#v\x00", k.String(), dest.MapIndex(k).Interface())
			}
		}
	}
	if set, ok := stmt.Clauses["SET"].Expression.(clause.Set); ok {
		for _, a := range set {
			for _, f := range fields {
				if model.NamesField(stmt.Schema, a.Column.Name, f) {
					fmt.Fprintf(&b, "set %s=%#v\x00", a.Column.Name, a.Value)
				}
			}
		}
	}
	rv := reflect.Indirect(stmt.ReflectValue)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		for i := 0; i < rv.Len(); i++ {
			if e := reflect.Indirect(rv.Index(i)); e.Kind() == reflect.Struct {
				row(e)
			}
		}
	case reflect.Struct:
		row(rv)
	}
	return b.String()
}

// EachSQLExpr calls fn with every SQL expression among the values v holds:
// clause expressions, subqueries, and GormValuer values, in structs (their
// exported fields), maps, slices and pointers to them.
func EachSQLExpr(db *gorm.DB, v reflect.Value, fn func(clause.Expression), seen map[uintptr]bool, depth int) {
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
		EachSQLExpr(db, v.Elem(), fn, seen, depth+1)
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			EachSQLExpr(db, it.Value(), fn, seen, depth+1)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := 0; i < v.Len(); i++ {
			EachSQLExpr(db, v.Index(i), fn, seen, depth+1)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				EachSQLExpr(db, v.Field(i), fn, seen, depth+1)
			}
		}
	}
}
