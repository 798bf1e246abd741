package lockstore

import (
	"reflect"
	"testing"
)

func TestBindFromNumbersPlaceholders(t *testing.T) {
	for _, c := range []struct {
		in    string
		after int
		want  string
	}{
		{"SELECT 1", 0, "SELECT 1"},
		{"a = ? AND b = ?", 0, "a = $1 AND b = $2"},
		{"a = ? AND b = ?", 3, "a = $4 AND b = $5"},
		{"?", 9, "$10"},
		{"f(?,?)", 0, "f($1,$2)"},
	} {
		if got := bindFrom(c.in, c.after); got != c.want {
			t.Errorf("bindFrom(%q, %d) = %q, want %q", c.in, c.after, got, c.want)
		}
	}
}

func TestRedactHidesTokensAndHashes(t *testing.T) {
	tok := "0123456789abcdef0123456789abcdef"
	hash := tokenHash(tok)
	got := redact([]any{
		tok, hash, "orders", 42, "0123456789abcdef", // a key of 16 hex digits is no token
		[]string{"customers", hash},
		`[["docs","1","` + hash + `"],["docs","2","` + tok + `"]]`,
		hash + "0", // 65 digits: not a hash's length
	})
	want := []any{
		"<token>", "<token>", "orders", 42, "0123456789abcdef",
		[]string{"customers", "<token>"},
		`[["docs","1","<token>"],["docs","2","<token>"]]`,
		hash + "0",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("redact = %#v, want %#v", got, want)
	}
}

func TestTokenHashIsSHA256OfTheTokenText(t *testing.T) {
	// echo -n 0123456789abcdef0123456789abcdef | sha256sum
	const want = "3eb1bd439947eb762998e566ccc2e099c791118b2f40579cc4f7da2b5061b7f9"
	if got := tokenHash("0123456789abcdef0123456789abcdef"); got != want {
		t.Errorf("tokenHash = %s, want %s", got, want)
	}
	if len(want) != hashLen {
		t.Errorf("hashLen = %d", hashLen)
	}
}
