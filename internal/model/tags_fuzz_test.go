package model

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm/schema"
)

// FuzzTagParser feeds arbitrary lock tags, on the primary key and on a
// foreign key, to the parser: it never panics, and every tag either parses
// to one of the three modes or a root, or is an ErrInvalid naming the model
// and the field.
func FuzzTagParser(f *testing.F) {
	for _, seed := range []string{
		"exclusive_write", "exclusive_read", "read_write", "read_write,ttl=2h", "exclusive_read, ttl=30m",
		"root", "root=orders", "root=", "exclusive", "exclusive_read,color=red", "read_write,ttl=-1h",
		"read_write,ttl=", ",", "", "ttl=2h", "root,ttl=1h", "exclusive_write,ttl=1h,ttl=2h", "\x00", "é",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, tag string, onForeignKey bool) {
		field := "ID"
		fields := []reflect.StructField{
			{Name: "ID", Type: reflect.TypeOf(uint(0))},
			{Name: "OrderID", Type: reflect.TypeOf(uint(0))},
		}
		target := 0
		if onForeignKey {
			field, target = "OrderID", 1
		}
		fields[target].Tag = reflect.StructTag(`gorm:"` + map[bool]string{false: "primaryKey", true: ""}[onForeignKey] + `" lock:` + strconv.Quote(tag))
		typ := reflect.StructOf(fields)
		s, err := schema.Parse(reflect.New(typ).Interface(), &sync.Map{}, schema.NamingStrategy{})
		if err != nil {
			t.Skip(err)
		}
		m := parseModel(s, schema.NamingStrategy{})
		if m.Err != nil {
			if !strings.Contains(m.Err.Error(), "field "+field) && !strings.Contains(m.Err.Error(), "no primary key") {
				t.Fatalf("tag %q: error %q names no field", tag, m.Err)
			}
			return
		}
		if onForeignKey {
			if m.Root == nil && m.Lockable {
				t.Fatalf("tag %q on a foreign key made a lockable model without a root", tag)
			}
			return
		}
		if !slices.Contains([]Mode{ExclusiveWrite, ExclusiveRead, ReadWrite}, m.Mode) {
			t.Fatalf("tag %q parsed to mode %q", tag, m.Mode)
		}
		if m.TTL < 0 {
			t.Fatalf("tag %q parsed to a negative ttl", tag)
		}
	})
}
