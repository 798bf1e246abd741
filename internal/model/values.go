package model

import (
	"context"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// Key values read from the Go values a statement carries: the model, a DTO
// of its table, maps, slices of them.

// StructsOf calls fn for every struct of type typ in v, or its slice or
// array of typ or *typ; false when v holds something else.
func StructsOf(v reflect.Value, typ reflect.Type, fn func(reflect.Value)) bool {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return true
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() != typ {
			return false
		}
		fn(v)
		return true
	case reflect.Slice, reflect.Array:
		et := v.Type().Elem()
		for et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if et != typ {
			return false
		}
		for i := 0; i < v.Len(); i++ {
			e := v.Index(i)
			for e.Kind() == reflect.Pointer {
				if e.IsNil() {
					break
				}
				e = e.Elem()
			}
			if e.Kind() == reflect.Struct {
				fn(e)
			}
		}
		return true
	}
	return false
}

// RowKey is the lock key of the row v (a struct of m's type), with the
// primary key values it came from; ok is false when a key field is zero.
func (m *Model) RowKey(ctx context.Context, v reflect.Value) (k lockstore.Key, vals []any, ok bool) {
	vals = make([]any, len(m.PK))
	parts := make([]string, len(m.PK))
	for i, f := range m.PK {
		val, zero := f.ValueOf(ctx, v)
		if zero {
			return lockstore.Key{}, nil, false
		}
		vals[i], parts[i] = val, m.IDText(i, val)
	}
	return lockstore.Key{Resource: m.Table, ID: EncodeKey(parts)}, vals, true
}

// ValueRows reads the values of cols from every row v holds (a struct of any
// model, a map, or a slice or array of them): complete is false when some
// row lacks one, known when v holds something else.
func ValueRows(db *gorm.DB, v reflect.Value, cols []*schema.Field) (rows [][]any, complete, known bool) {
	complete, known = true, true
	var visit func(e reflect.Value, top bool)
	visit = func(e reflect.Value, top bool) {
		for e.Kind() == reflect.Pointer || e.Kind() == reflect.Interface {
			if e.IsNil() {
				return
			}
			e = e.Elem()
		}
		var row []any
		ok := false
		switch e.Kind() {
		case reflect.Struct:
			row, ok = structValues(db, e, cols)
		case reflect.Map:
			if e.Type().Key().Kind() != reflect.String {
				known = false
				return
			}
			row, ok = mapValues(db.Statement.Schema, e, cols)
		case reflect.Slice, reflect.Array:
			if !top {
				known = false
				return
			}
			for i := 0; i < e.Len(); i++ {
				visit(e.Index(i), false)
			}
			return
		default:
			known = false
			return
		}
		if ok {
			rows = append(rows, row)
		} else {
			complete = false
		}
	}
	if v.IsValid() {
		visit(v, true)
	}
	return rows, complete, known
}

// structValues reads cols from a struct of any model, by column name.
func structValues(db *gorm.DB, e reflect.Value, cols []*schema.Field) ([]any, bool) {
	s := db.Statement.Schema
	if s == nil || s.ModelType != e.Type() {
		stmt := &gorm.Statement{DB: db}
		if err := stmt.Parse(reflect.New(e.Type()).Interface()); err != nil {
			return nil, false
		}
		s = stmt.Schema
	}
	row := make([]any, len(cols))
	for i, c := range cols {
		f := s.LookUpField(c.DBName)
		if f == nil {
			return nil, false
		}
		v, zero := f.ValueOf(db.Statement.Context, e)
		if zero {
			return nil, false
		}
		row[i] = v
	}
	return row, true
}

// mapValues reads cols from a map of column (or field) names to values.
func mapValues(s *schema.Schema, e reflect.Value, cols []*schema.Field) ([]any, bool) {
	row := make([]any, len(cols))
	for i, c := range cols {
		var v reflect.Value
		for _, name := range []string{c.DBName, c.Name} {
			if v = e.MapIndex(reflect.ValueOf(name).Convert(e.Type().Key())); v.IsValid() {
				break
			}
		}
		if !v.IsValid() {
			v = mapValueOf(s, e, c)
		}
		for v.IsValid() && v.Kind() == reflect.Interface {
			v = v.Elem()
		}
		if !v.IsValid() || v.IsZero() {
			return nil, false
		}
		row[i] = v.Interface()
	}
	return row, true
}

// mapValueOf is the value of the first key of map e, in key order, that
// names field c in another spelling (MapKeysNaming).
func mapValueOf(s *schema.Schema, e reflect.Value, c *schema.Field) reflect.Value {
	if keys := MapKeysNaming(s, e, c); len(keys) > 0 {
		return e.MapIndex(keys[0])
	}
	return reflect.Value{}
}

// MapKeysNaming are the keys of map e that name field c as GORM or the
// database reads a column name (exactly, in another letter case, or
// through the naming strategy), sorted.
func MapKeysNaming(s *schema.Schema, e reflect.Value, c *schema.Field) []reflect.Value {
	var out []reflect.Value
	for _, k := range e.MapKeys() {
		if NamesField(s, k.String(), c) {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// NamesField says whether a column name given to GORM (a map key, a SET
// column, an Update's name) writes field f.
func NamesField(s *schema.Schema, name string, f *schema.Field) bool {
	if name == f.DBName || name == f.Name || strings.EqualFold(name, f.DBName) || strings.EqualFold(name, f.Name) {
		return true
	}
	return s != nil && s.LookUpField(name) == f
}

// KeyArgs are vals as the database compares them with m's key columns:
// integers as integers, whatever spelling the caller gave.
func (m *Model) KeyArgs(vals []any) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = v
		if m.Kinds[i] != lockstore.KindInt {
			continue
		}
		if id, err := Canonical(lockstore.KindInt, v); err == nil {
			if n, err := strconv.ParseInt(id, 10, 64); err == nil {
				out[i] = n
			} else if u, err := strconv.ParseUint(id, 10, 64); err == nil {
				out[i] = u
			}
		}
	}
	return out
}
