package offlinelock

// Key values read from the Go values a statement carries: the model, a DTO
// of its table, maps, slices of them.

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// rowKey is the key of the row v (a struct of m's type) in table.
func (m *model) rowKey(ctx context.Context, table string, v reflect.Value) (key, bool) {
	r, ok := m.pkRow(ctx, table, v)
	return r.k, ok
}

// structsOf calls fn for every struct of type typ in v: v itself, or the
// elements of a slice or array of typ or *typ. It reports false when v holds
// something else (a DTO, a map, a count).
func structsOf(v reflect.Value, typ reflect.Type, fn func(reflect.Value)) bool {
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

// pkRow is a row's key with the primary key values it came from.
type pkRow struct {
	k    key
	vals []any
}

// pkRow is the key of the row v (a struct of m's type) in table, with its
// primary key values.
func (m *model) pkRow(ctx context.Context, table string, v reflect.Value) (pkRow, bool) {
	vals := make([]any, len(m.pk))
	parts := make([]string, len(m.pk))
	for i, f := range m.pk {
		val, zero := f.ValueOf(ctx, v)
		if zero {
			return pkRow{}, false
		}
		vals[i], parts[i] = val, m.idText(i, val)
	}
	return pkRow{key{Resource: m.table, ID: encodeKey(parts)}, vals}, true
}

// valueRows reads the values of cols from every row v holds: a struct of
// any model (the lockable one, a DTO), a map, or a slice or array of them.
// complete is false when some row lacks one of them (absent or zero);
// known is false when v holds something else.
func valueRows(db *gorm.DB, v reflect.Value, cols []*schema.Field) (rows [][]any, complete, known bool) {
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
// names field c in another spelling (mapKeysNaming).
func mapValueOf(s *schema.Schema, e reflect.Value, c *schema.Field) reflect.Value {
	if keys := mapKeysNaming(s, e, c); len(keys) > 0 {
		return e.MapIndex(keys[0])
	}
	return reflect.Value{}
}

// mapKeysNaming are the keys of map e that name field c as GORM or the
// database reads a column name: exactly, in another letter case (SQLite
// and MySQL compare column names so), or through the naming strategy
// (GORM maps "ORDER_ID" and "OrderId" to order_id), sorted.
func mapKeysNaming(s *schema.Schema, e reflect.Value, c *schema.Field) []reflect.Value {
	var out []reflect.Value
	for _, k := range e.MapKeys() {
		if namesField(s, k.String(), c) {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// namesField says whether a column name given to GORM (a map key, a SET
// column, an Update's name) writes field f.
func namesField(s *schema.Schema, name string, f *schema.Field) bool {
	if name == f.DBName || name == f.Name || strings.EqualFold(name, f.DBName) || strings.EqualFold(name, f.Name) {
		return true
	}
	return s != nil && s.LookUpField(name) == f
}

// keyOf is the lock key of m's row whose key column values are vals, in
// the lock table's spelling of each.
func (m *model) keyOf(vals []any) (key, error) {
	parts := make([]string, len(vals))
	for i, v := range vals {
		switch v.(type) {
		case clause.Expression, *gorm.DB, gorm.Valuer: // isExpr
			// A GormValue key: the database gets the SQL it builds, not v.
			return key{}, unenforceable(m.table, "a key value that GORM builds as SQL (an expression, a subquery, a GormValue) names no record the plugin can tell, on lockable table")
		}
		id, err := canonical(m.kinds[i], v)
		if err != nil {
			return key{}, fmt.Errorf("table %s column %s: %w", m.table, m.pk[i].DBName, err)
		}
		parts[i] = id
	}
	k := key{Resource: m.table}
	if len(parts) == 1 { // encodeKey keeps one part as it is
		k.ID = parts[0]
	} else {
		k.ID = encodeKey(parts)
	}
	if err := checkText("resource", k.Resource, maxResourceLen, false); err != nil { // validateKey
		return key{}, err
	}
	return k, checkText("id", k.ID, maxTextLen, false)
}

// keyArgs are vals as the database compares them with m's key columns:
// integers as integers, whatever spelling the caller gave.
func (m *model) keyArgs(vals []any) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = v
		if m.kinds[i] != kindInt {
			continue
		}
		if id, err := canonical(kindInt, v); err == nil {
			if n, err := strconv.ParseInt(id, 10, 64); err == nil {
				out[i] = n
			} else if u, err := strconv.ParseUint(id, 10, 64); err == nil {
				out[i] = u
			}
		}
	}
	return out
}
