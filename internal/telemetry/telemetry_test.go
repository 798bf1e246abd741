package telemetry

import "testing"

// TestSQLOp: a statement's operation and span name, from its first
// keyword whatever its case and leading blanks or parentheses.
func TestSQLOp(t *testing.T) {
	for _, c := range []struct{ query, op, span string }{
		{"SELECT 1", "SELECT", "offlinelock SELECT"},
		{" \n(select 1)", "SELECT", "offlinelock SELECT"},
		{"insert into t", "INSERT", "offlinelock INSERT"},
		{"WITH x AS (SELECT 1) SELECT * FROM x", "WITH", "offlinelock WITH"},
		{"RELEASE SAVEPOINT sp", "RELEASE", "offlinelock SAVEPOINT"},
		{"ROLLBACK TO SAVEPOINT sp", "ROLLBACK", "offlinelock SAVEPOINT"},
		{"SET LOCAL x = 1", "SET", "offlinelock OTHER"},
		{"VACUUM", "OTHER", "offlinelock OTHER"},
	} {
		if op, span := sqlOp(c.query); op != c.op || span != c.span {
			t.Errorf("sqlOp(%q) = %q, %q; want %q, %q", c.query, op, span, c.op, c.span)
		}
	}
}
