package lockstore

import "testing"

// TestWallClockText: every statement that reads or writes rows is sent
// with the timestamp at the wall clock, merged into a SET STATEMENT it has;
// DDL, transactions and calls go as they are.
func TestWallClockText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"SELECT UTC_TIMESTAMP(6)", "SET STATEMENT timestamp = 0 FOR SELECT UTC_TIMESTAMP(6)"},
		{"\n\tinsert INTO t VALUES (1)", "SET STATEMENT timestamp = 0 FOR \n\tinsert INTO t VALUES (1)"},
		{"UPDATE t SET a = 1", "SET STATEMENT timestamp = 0 FOR UPDATE t SET a = 1"},
		{"DELETE q FROM t q", "SET STATEMENT timestamp = 0 FOR DELETE q FROM t q"},
		{"REPLACE INTO t VALUES (1)", "SET STATEMENT timestamp = 0 FOR REPLACE INTO t VALUES (1)"},
		{"WITH a AS (SELECT 1) SELECT * FROM a", "SET STATEMENT timestamp = 0 FOR WITH a AS (SELECT 1) SELECT * FROM a"},
		{"(SELECT 1) UNION (SELECT 2)", "SET STATEMENT timestamp = 0 FOR (SELECT 1) UNION (SELECT 2)"},
		{"SET STATEMENT innodb_lock_wait_timeout = 2 FOR INSERT INTO t VALUES (1)",
			"SET STATEMENT timestamp = 0, innodb_lock_wait_timeout = 2 FOR INSERT INTO t VALUES (1)"},
		{"SELECTED", "SELECTED"},
		{"CREATE TABLE t (a INT)", "CREATE TABLE t (a INT)"},
		{"CALL p(1)", "CALL p(1)"},
		{"SET timestamp = DEFAULT", "SET timestamp = DEFAULT"},
		{"", ""},
	} {
		if got := wallClockText(c.in); got != c.want {
			t.Errorf("wallClockText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
