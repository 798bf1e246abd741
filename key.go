package offlinelock

import (
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// Limits on what reaches the lock table. They match its column sizes, so an
// over-long value is refused with ErrInvalid instead of failing in SQL.
const (
	maxResourceLen = 128
	maxTextLen     = 255
)

// targetKey finds the key target is locked by: its own table and primary
// key, or, for a member of an aggregate, its root's.
func (p *Plugin) targetKey(db *gorm.DB, target any) (key, error) {
	k, _, err := p.targetKeyModel(db, target)
	return k, err
}

// targetKeyModel is targetKey, and the model target parsed as (nil when
// it did not parse).
func (p *Plugin) targetKeyModel(db *gorm.DB, target any) (key, *model, error) {
	if err := checkTarget(target); err != nil {
		return key{}, nil, err
	}
	m, stmt, err := p.modelFor(db, target)
	k, err := p.modelKey(db, target, m, stmt, err)
	if err == nil && m != nil && !m.lockable && m.slip != "" && p.reg.tableModel(k.Resource) == nil {
		// An explicit lock on a model without lock tags is a lock like any
		// other (Fowler's explicit lock manager); one whose tags show a
		// slipped lock tag was meant to be lockable, and is not.
		return key{}, m, notLockable(m)
	}
	return k, m, err
}

// modelKey is targetKey of a target modelFor parsed into m and stmt (with
// its error err): its own key, or its root's.
func (p *Plugin) modelKey(db *gorm.DB, target any, m *model, stmt *gorm.Statement, err error) (key, error) {
	if m == nil || m.root == nil || err != nil {
		if err != nil && m != nil {
			return key{}, err
		}
		var k key
		if stmt != nil {
			k, err = parsedKey(db, stmt, target) // parsed once, above
		} else {
			k, err = targetRowKey(db, target)
		}
		if tm := p.reg.tableModel(k.Resource); tm != nil {
			k.Resource = tm.table // a DTO of a lockable table names its lock
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

// targetRowKey is the key of target's own row: its table and primary key
// (targetKey resolves a member to its root's). target must be a non-nil
// pointer to a model whose primary key is set.
func targetRowKey(db *gorm.DB, target any) (key, error) {
	if err := checkTarget(target); err != nil {
		return key{}, err
	}
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(target); err != nil {
		return key{}, invalid("cannot parse model %T: %v", target, err)
	}
	return parsedKey(db, stmt, target)
}

// parsedKey is targetRowKey of a target stmt has parsed already.
func parsedKey(db *gorm.DB, stmt *gorm.Statement, target any) (key, error) {
	rv := reflect.ValueOf(target)
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
	k := key{Resource: stmt.Table, ID: encodeKey(parts)}
	return k, validateKey(k)
}

func validateKey(k key) error {
	if err := checkText("resource", k.Resource, maxResourceLen, false); err != nil {
		return err
	}
	return checkText("id", k.ID, maxTextLen, false)
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

// kindOf is the key kind of a primary or foreign key column, from the
// column type the model declares (its type: tag, else its Go type). A
// column whose real type or collation differs from the declaration must
// declare it, or two spellings of one row become two locks.
func kindOf(f *schema.Field) keyKind {
	t := f.FieldType
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	dt := strings.ToLower(string(f.DataType))
	word := func(w string) bool { return strings.Contains(dt, w) }
	switch {
	case word("uuid") || strings.Contains(strings.ToLower(t.Name()), "uuid"):
		return kindUUID
	case f.DataType == schema.Int || f.DataType == schema.Uint || (word("int") && !word("interval") && !word("point")) || word("serial"):
		return kindInt
	case word("nocase") || word("citext") || word("_ci"):
		return kindFold
	case word("rtrim"): // SQLite's RTRIM collation ignores trailing spaces
		return kindChar
	case word("char") && !word("varchar") && !word("varying"):
		return kindChar
	case word("text") || word("varchar") || word("string"):
		return kindText
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return kindInt
	case f.DataType == schema.Bytes || t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return kindBytes
	}
	return kindText
}

// canonical renders v, a value given for (or read from) a key column of
// kind k, the one way the lock table spells it. A value the column could
// not hold (a non-integer for an integer key) is an error: the plugin
// cannot tell which row it names.
func canonical(k keyKind, v any) (string, error) {
	if k == kindInt { // the common keys, without reflection
		switch n := v.(type) {
		case uint:
			return strconv.FormatUint(uint64(n), 10), nil
		case int:
			return strconv.Itoa(n), nil
		case int64:
			return strconv.FormatInt(n, 10), nil
		case uint64:
			return strconv.FormatUint(n, 10), nil
		}
	}
	v = driverValue(v)
	switch k {
	case kindInt:
		return canonicalInt(v)
	case kindUUID:
		return canonicalUUID(v)
	case kindBytes:
		if b, ok := v.([]byte); ok {
			return hex.EncodeToString(b), nil
		}
	case kindFold:
		return strings.ToLower(textKey(v)), nil
	case kindChar:
		return strings.TrimRight(textKey(v), " "), nil
	}
	return textKey(v), nil
}

// isNumber says whether v reaches the database as a number (or a
// boolean, which MySQL takes as 0 or 1).
func isNumber(v any) bool {
	switch reflect.ValueOf(driverValue(v)).Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Bool:
		return true
	}
	return false
}

// textKey is keyText for a text column, or for a value read back from the
// database to tell values apart: bytes are their text, as the database
// compares them (MySQL's driver reads text in a binary collation as
// []byte), not hex.
func textKey(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return keyText(v)
}

// driverValue unwraps pointers and driver.Valuers (sql.NullInt64, UUID
// types) to the value the database receives.
func driverValue(v any) any {
	for range 4 {
		if vr, ok := v.(driver.Valuer); ok {
			rv := reflect.ValueOf(v)
			if rv.Kind() == reflect.Pointer && rv.IsNil() {
				return nil
			}
			if dv, err := vr.Value(); err == nil {
				v = dv
				continue
			}
		}
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Pointer {
			return v
		}
		if rv.IsNil() {
			return nil
		}
		v = rv.Elem().Interface()
	}
	return v
}

func canonicalInt(v any) (string, error) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(rv.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return strconv.FormatInt(int64(f), 10), nil
		}
	case reflect.String:
		return parseInt(rv.String())
	case reflect.Slice:
		if b, ok := v.([]byte); ok {
			return parseInt(string(b))
		}
	}
	return "", invalid("key value %v (%T) is not an integer, and the key column is one", v, v)
}

// parseInt reads an integer as the databases read text compared with an
// integer column: surrounding spaces, a sign and leading zeros allowed.
func parseInt(s string) (string, error) {
	t := strings.TrimSpace(s)
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		return strconv.FormatInt(n, 10), nil
	}
	if n, err := strconv.ParseUint(strings.TrimPrefix(t, "+"), 10, 64); err == nil {
		return strconv.FormatUint(n, 10), nil
	}
	return "", invalid("key value %q is not an integer, and the key column is one", s)
}

func canonicalUUID(v any) (string, error) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case []byte:
		if len(x) == 16 {
			s = hex.EncodeToString(x)
		} else {
			s = string(x)
		}
	case [16]byte:
		s = hex.EncodeToString(x[:])
	case fmt.Stringer:
		s = x.String()
	default:
		return "", invalid("key value %v (%T) is not a UUID, and the key column is one", v, v)
	}
	h := strings.ToLower(strings.NewReplacer("-", "", "{", "", "}", "").Replace(strings.TrimSpace(s)))
	if _, err := hex.DecodeString(h); err != nil || len(h) != 32 {
		return "", invalid("key value %q is not a UUID, and the key column is one", s)
	}
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32], nil
}
