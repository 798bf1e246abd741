package offlinelock

import "testing"

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
