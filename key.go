package offlinelock

import (
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"
)

// Limits on what reaches the lock table. They match its column sizes, so an
// over-long value is refused with ErrInvalid instead of failing in SQL.
const (
	maxResourceLen = 128
	maxTextLen     = 255
)

// key names one lockable row in the lock table.
type key struct{ resource, id string }

// targetKey finds the key target is locked by: its own table and primary
// key, or, for a member of an aggregate, its root's.
func (p *Plugin) targetKey(db *gorm.DB, target any) (key, error) {
	if err := checkTarget(target); err != nil {
		return key{}, err
	}
	m, _, err := p.modelFor(db, target)
	if m == nil || m.root == nil || err != nil {
		if err != nil && m != nil {
			return key{}, err
		}
		k, err := targetKey(db, target)
		if tm := p.reg.tableModel(k.resource); tm != nil {
			k.resource = tm.table // a DTO of a lockable table names its lock
		}
		return k, err
	}
	root, err := p.memberRootOf(db, m, reflect.ValueOf(target).Elem())
	return root.k, err
}

func checkTarget(target any) error {
	if target == nil {
		return invalid("target is nil")
	}
	rv := reflect.ValueOf(target)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return invalid("target must be a non-nil pointer to a model, got %T", target)
	}
	if rv.Elem().Kind() != reflect.Struct {
		return invalid("target must point to a struct, got %T", target)
	}
	return nil
}

// targetKey finds the table and primary key of target, which must be a
// non-nil pointer to a model whose primary key is set.
func targetKey(db *gorm.DB, target any) (key, error) {
	if err := checkTarget(target); err != nil {
		return key{}, err
	}
	rv := reflect.ValueOf(target)
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(target); err != nil {
		return key{}, invalid("cannot parse model %T: %v", target, err)
	}
	fields := stmt.Schema.PrimaryFields
	if len(fields) == 0 {
		return key{}, invalid("model %s has no primary key", stmt.Schema.Name)
	}
	parts := make([]string, len(fields))
	for i, f := range fields {
		v, zero := f.ValueOf(db.Statement.Context, rv.Elem())
		if zero {
			return key{}, invalid("model %s has no value in primary key field %s", stmt.Schema.Name, f.Name)
		}
		id, err := canonical(kindOf(f), v)
		if err != nil {
			return key{}, fmt.Errorf("model %s field %s: %w", stmt.Schema.Name, f.Name, err)
		}
		parts[i] = id
	}
	k := key{resource: stmt.Table, id: encodeKey(parts)}
	return k, k.validate()
}

func (k key) validate() error {
	if err := checkText("resource", k.resource, maxResourceLen, false); err != nil {
		return err
	}
	return checkText("id", k.id, maxTextLen, false)
}

// checkText refuses strings the lock table cannot hold exactly: empty (unless
// allowed), too long, not UTF-8, or containing NUL (PostgreSQL rejects it).
func checkText(what, s string, max int, emptyOK bool) error {
	switch {
	case s == "" && !emptyOK:
		return invalid("%s is empty", what)
	case len(s) > max:
		return invalid("%s is %d bytes long, at most %d allowed", what, len(s), max)
	case !utf8.ValidString(s):
		return invalid("%s is not valid UTF-8", what)
	case strings.IndexByte(s, 0) >= 0:
		return invalid("%s contains a NUL byte", what)
	}
	return nil
}

// keyText renders one primary key value as text: integers and strings as
// they are, UUIDs and other Stringers by String, byte slices as hex.
func keyText(v any) string {
	if vr, ok := v.(driver.Valuer); ok {
		if dv, err := vr.Value(); err == nil && dv != nil {
			v = dv
		}
	}
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return hex.EncodeToString(x)
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

// encodeKey joins the parts of a primary key. A single part is kept as it is
// so that "customers 129" reads naturally; composite keys escape '\' and ','
// in each part before joining with ',', so distinct keys never collide.
func encodeKey(parts []string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	esc := strings.NewReplacer(`\`, `\\`, `,`, `\,`)
	for i, p := range parts {
		parts[i] = esc.Replace(p)
	}
	return strings.Join(parts, ",")
}
