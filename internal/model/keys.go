package model

import (
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"gorm.io/gorm/schema"
)

// Keys, spelt once: a key column's kind, and the one way the lock table
// spells each value of it, so that "0129", 129 and int64(129) are one lock.

// Limits on what reaches the lock table. They match its column sizes, so an
// over-long value is refused with ErrInvalid instead of failing in SQL.
const (
	MaxResourceLen = 128 // a lock's resource (a table name)
	MaxTextLen     = 255 // a lock id, a session, a user
)

// invalid wraps ErrInvalid with a message that says what was wrong.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", lockstore.ErrInvalid, fmt.Sprintf(format, args...))
}

// ValidateKey refuses a key the lock table cannot hold exactly.
func ValidateKey(k lockstore.Key) error {
	if err := CheckText("resource", k.Resource, MaxResourceLen, false); err != nil {
		return err
	}
	return CheckText("id", k.ID, MaxTextLen, false)
}

// CheckText refuses strings the lock table cannot hold exactly: empty (unless
// allowed), too long, not UTF-8, or containing NUL (PostgreSQL rejects it).
func CheckText(what, s string, max int, emptyOK bool) error {
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

// KeyText renders one primary key value as text: integers and strings as
// they are, UUIDs and other Stringers by String, byte slices as hex.
func KeyText(v any) string {
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

// EncodeKey joins the parts of a primary key: one part as it is, several
// with '\' and ',' escaped and joined with ',', so keys never collide.
func EncodeKey(parts []string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	esc := strings.NewReplacer(`\`, `\\`, `,`, `\,`)
	for i, p := range parts {
		parts[i] = esc.Replace(p)
	}
	return strings.Join(parts, ",")
}

// KindOf is the key kind of a primary or foreign key column, from the
// column type the model declares (its type: tag, else its Go type).
func KindOf(f *schema.Field) lockstore.KeyKind {
	t := f.FieldType
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	dt := strings.ToLower(string(f.DataType))
	word := func(w string) bool { return strings.Contains(dt, w) }
	switch {
	case word("uuid") || strings.Contains(strings.ToLower(t.Name()), "uuid"):
		return lockstore.KindUUID
	case f.DataType == schema.Int || f.DataType == schema.Uint || (word("int") && !word("interval") && !word("point")) || word("serial"):
		return lockstore.KindInt
	case word("nocase") || word("citext") || word("_ci"):
		return lockstore.KindFold
	case word("rtrim"): // SQLite's RTRIM collation ignores trailing spaces
		return lockstore.KindChar
	case word("char") && !word("varchar") && !word("varying"):
		return lockstore.KindChar
	case word("text") || word("varchar") || word("string"):
		return lockstore.KindText
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return lockstore.KindInt
	case f.DataType == schema.Bytes || t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return lockstore.KindBytes
	}
	return lockstore.KindText
}

// Canonical renders v, a value of a key column of kind k, the one way the
// lock table spells it; a value the column could not hold is an error.
func Canonical(k lockstore.KeyKind, v any) (string, error) {
	if k == lockstore.KindInt { // the common keys, without reflection
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
	case lockstore.KindInt:
		return canonicalInt(v)
	case lockstore.KindUUID:
		return canonicalUUID(v)
	case lockstore.KindBytes:
		if b, ok := v.([]byte); ok {
			return hex.EncodeToString(b), nil
		}
	case lockstore.KindFold:
		return strings.ToLower(TextKey(v)), nil
	case lockstore.KindChar:
		return strings.TrimRight(TextKey(v), " "), nil
	}
	return TextKey(v), nil
}

// IsNumber says whether v reaches the database as a number (or a
// boolean, which MySQL takes as 0 or 1).
func IsNumber(v any) bool {
	switch reflect.ValueOf(driverValue(v)).Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Bool:
		return true
	}
	return false
}

// TextKey is KeyText for a text column, or a value read back from the
// database: bytes are their text, as the database compares them, not hex.
func TextKey(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return KeyText(v)
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
