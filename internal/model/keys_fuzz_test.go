package model

import (
	"strings"
	"testing"
)

// uuidLike is a 16-byte key that renders as a UUID, like google/uuid.UUID.
type uuidLike [16]byte

func (u uuidLike) String() string {
	const hexd = "0123456789abcdef"
	var b strings.Builder
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b.WriteByte('-')
		}
		b.WriteByte(hexd[c>>4])
		b.WriteByte(hexd[c&15])
	}
	return b.String()
}

// FuzzKeyEncoding checks that distinct primary keys never share a lock id:
// composite keys with separators and escapes in their parts, integers, and
// UUIDs.
func FuzzKeyEncoding(f *testing.F) {
	f.Add("a,b", "c", "a", "b,c", int64(1), int64(2), []byte("0123456789abcdef"), []byte("0123456789abcdeg"))
	f.Add(`a\`, ",b", `a\,`, "b", int64(-1), int64(1), []byte{}, []byte{1})
	f.Add("", "", ",", "", int64(0), int64(0), []byte("x"), []byte("x"))
	f.Add(`\\`, `\`, `\`, `\\`, int64(10), int64(1), []byte("a"), []byte("b"))
	f.Fuzz(func(t *testing.T, a1, a2, b1, b2 string, i1, i2 int64, u1, u2 []byte) {
		ka, kb := EncodeKey([]string{a1, a2}), EncodeKey([]string{b1, b2})
		if (a1 == b1 && a2 == b2) != (ka == kb) {
			t.Fatalf("keys (%q, %q) and (%q, %q) encode to %q and %q", a1, a2, b1, b2, ka, kb)
		}
		if (i1 == i2) != (KeyText(i1) == KeyText(i2)) {
			t.Fatalf("integers %d and %d share text", i1, i2)
		}
		var x, y uuidLike
		copy(x[:], u1)
		copy(y[:], u2)
		if (x == y) != (KeyText(x) == KeyText(y)) {
			t.Fatalf("UUIDs %v and %v share text", x, y)
		}
		// Mixed: an integer key and a composite key of the same parts.
		if EncodeKey([]string{KeyText(i1), a1}) == EncodeKey([]string{KeyText(i2), b1}) && (i1 != i2 || a1 != b1) {
			t.Fatalf("composite keys (%d, %q) and (%d, %q) collide", i1, a1, i2, b1)
		}
	})
}
