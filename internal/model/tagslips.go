package model

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/offlinelock/offlinelock/internal/lockstore"
)

// A lock tag the plugin never reads would leave a model unprotected while
// Acquire seems to work: a slipped tag is an error naming it (docs/callbacks.md).

// NotLockable is the error of a lock call on, or a Config.Models entry of,
// model m, which is not lockable.
func NotLockable(m *Model) error {
	return fmt.Errorf("%w: %s is not lockable: no lock tag on its primary key (model %s; lock:\"exclusive_write|exclusive_read|read_write\") "+
		"or on a foreign key (lock:\"root\")%s", lockstore.ErrInvalid, m.Table, m.Name, m.Slip)
}

// tagKey matches the keys of a struct tag: `gorm:"…" lock:"…"`.
var tagKey = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*):"`)

// TagSlip names the first field of typ whose tags look like a lock tag
// the plugin does not read: inside the gorm tag (gorm:"primaryKey;lock:…"),
// or under another spelling (Lock:, locks:, lock_mode:). "" when none.
func TagSlip(typ reflect.Type) string {
	for typ != nil && (typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice) {
		typ = typ.Elem()
	}
	if typ == nil || typ.Kind() != reflect.Struct {
		return ""
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Anonymous {
			if s := TagSlip(f.Type); s != "" {
				return s
			}
		}
		if g := strings.ToLower(f.Tag.Get("gorm")); strings.Contains(g, "lock:") || strings.Contains(g, "lock=") {
			return fmt.Sprintf("; field %s has its lock tag inside the gorm tag, which the plugin does not read: write it as a tag of its own, "+
				"`gorm:\"primaryKey\" lock:\"exclusive_write\"`", f.Name)
		}
		for _, m := range tagKey.FindAllStringSubmatch(string(f.Tag), -1) {
			if k := m[1]; k != TagName && strings.Contains(strings.ToLower(k), "lock") {
				return fmt.Sprintf("; field %s has a tag %q, which the plugin does not read: the tag is %q", f.Name, k, TagName)
			}
		}
	}
	return ""
}
