package sqlscan_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/offlinelock/offlinelock/internal/sqlscan"
)

// sqlScanLockable is the test's lockable set: customers and orders, in any
// case, canonicalised to lower case.
func sqlScanLockable(ident string) (string, bool) {
	switch l := strings.ToLower(ident); l {
	case "customers", "orders":
		return l, true
	}
	return "", false
}

func TestSQLScanIdents(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want []string
	}{
		{"SELECT id FROM public.customers", []string{"SELECT", "id", "FROM", "public", "customers"}},
		{`select "Cust""x", ` + "`y``z`" + `, [w] from "public"."Customers"`,
			[]string{"select", `Cust"x`, "y`z", "w", "from", "public", "Customers"}},
		{"UPDATE/**/customers\tSET\fa\v=\u00a0b\u3000WHERE\r\nc", []string{"UPDATE", "customers", "SET", "a", "b", "WHERE", "c"}},
		{"SELECT 'x', $$y$$, $1, ?, ?2, :n, @v, @@w, 1.5e3, x::int -- z\n", []string{"SELECT", "x", "int"}},
		// PostgreSQL nests comments; MySQL and SQLite end at the first */,
		// so c is code there.
		{"/* a /* b */ c */ SELECT x", []string{"SELECT", "x", "c"}},
		// MySQL runs /*! … */; PostgreSQL's reading comes first.
		{"SELECT /*!40101 y, */ x", []string{"SELECT", "x", "y"}},
		// # is an operator in PostgreSQL and a comment in MySQL.
		{"SELECT a # b", []string{"SELECT", "a", "b"}},
		// MySQL's '…' takes backslash escapes: there "b" is outside it.
		{`SELECT 'a\'', b --'`, []string{"SELECT", "b"}},
		{`SELECT 'a\' , b --'`, []string{"SELECT", "b"}},
		{"", nil},
	} {
		if got := sqlscan.Read(tc.sql).Idents; !slices.Equal(got, tc.want) {
			t.Errorf("sqlscan.Read(%q).Idents = %q, want %q", tc.sql, got, tc.want)
		}
	}
}

// sqlScanRowAccessCases: statements and whether they may touch rows.
var sqlScanRowAccessCases = []struct {
	sql  string
	want bool
}{
	{"SELECT 1", true},
	{"  (SELECT 1) UNION (SELECT 2)", true},
	{"/* hi */ UPDATE customers SET a = 1", true},
	{"-- x\nDELETE FROM customers", true},
	{"with x AS (DELETE FROM customers RETURNING *) SELECT * FROM x", true},
	{"UPDATE customers SET a = 1 RETURNING *", true},
	{"SELECT 1; DELETE FROM customers", true},
	{"TRUNCATE customers", true},
	{"EXPLAIN ANALYZE UPDATE customers SET a = 1", true},
	{"DO $$ BEGIN UPDATE customers SET a = 1; END $$", true},
	{"COPY customers TO STDOUT", true},
	{"CALL p()", true},
	{"PREPARE s AS DELETE FROM customers", true},
	{"FROBNICATE customers", true},
	{`"customers"`, true},
	{"CREATE TABLE x AS SELECT * FROM customers", true},
	{"CREATE TEMP TABLE x AS (SELECT 1)", true},
	{"CREATE TABLE x AS TABLE customers", true},
	{"CREATE TABLE x SELECT * FROM customers", true}, // MySQL
	{"CREATE MATERIALIZED VIEW m AS SELECT * FROM customers", true},
	{"CREATE OR REPLACE FUNCTION f() RETURNS void AS $$ DELETE FROM customers $$ LANGUAGE sql", true},
	{"CREATE TRIGGER t AFTER INSERT ON customers FOR EACH ROW EXECUTE FUNCTION f()", true},
	{"CREATE RULE r AS ON INSERT TO customers DO INSTEAD NOTHING", true},
	{"CREATE DEFINER=`root`@`%` PROCEDURE p() BEGIN DELETE FROM customers; END", true},
	{"CREATE POLICY p ON customers USING (true)", true},
	{"SET @n = (SELECT count(*) FROM customers)", true},
	{"DESCRIBE SELECT * FROM customers", true},
	{"BEGIN NOT ATOMIC DELETE FROM customers; END", true},
	{"ALTER EVENT e DO DELETE FROM customers", true},
	{"SELECT 'unterminated", true},
	{"ALTER TABLE customers ADD /* unterminated", true},
	{"CREATE TABLE customers (id int)", false},
	{"CREATE TABLE customers (id int, total int GENERATED ALWAYS AS (id * 2) STORED, o int REFERENCES orders ON DELETE CASCADE)", false},
	{"CREATE UNIQUE INDEX i ON customers (id)", false},
	{"CREATE VIEW v AS SELECT * FROM customers", false},
	{"CREATE TYPE t AS (a int)", false},
	{"ALTER TABLE customers ADD COLUMN x int", false},
	{"ALTER TABLE customers RENAME TO clients", false},
	{"DROP TABLE customers", false},
	{"COMMENT ON TABLE customers IS 'update customers'", false},
	{"GRANT SELECT, UPDATE ON customers TO app", false},
	{"LOCK TABLE customers IN SHARE UPDATE EXCLUSIVE MODE", false},
	{"PRAGMA journal_mode = DELETE", false},
	{"ANALYZE customers; VACUUM customers", false},
	{"BEGIN; SAVEPOINT a; RELEASE a; COMMIT", false},
	{"START TRANSACTION ISOLATION LEVEL READ COMMITTED, READ ONLY", false},
	{"SET search_path TO public; RESET ALL; SHOW search_path", false},
	{"LISTEN c; NOTIFY c, 'x'; DISCARD ALL; DEALLOCATE s", false},
	{"USE shop; DESC customers", false},
	{"/*!40101 SET NAMES utf8 */", false},
	{"", false},
	{" ; -- nothing\n", false},
}

func TestSQLScanRowAccess(t *testing.T) {
	for _, tc := range sqlScanRowAccessCases {
		if got := sqlscan.Read(tc.sql).RowAccess; got != tc.want {
			t.Errorf("sqlscan.Read(%q).RowAccess = %v, want %v", tc.sql, got, tc.want)
		}
	}
}

func TestSQLScanMentions(t *testing.T) {
	customers := []string{"customers"}
	for _, tc := range []struct {
		sql  string
		want []string
	}{
		{"/* hi */ UPDATE customers SET a = 1", customers},
		{`UPDATE U&"cust\006fmers" SET a = 1`, customers},
		{`SELECT * FROM 'customers'`, customers},                  // SQLite takes it as a name
		{"UPDATE customers SET a = 1 /* left open", customers},    // SQLite runs it
		{"/*+ ' */ UPDATE customers SET a = 'x' -- '", customers}, // MariaDB: a plain comment
		{`UPDATE 'customers' SET a = 1`, customers},
		{`UPDATE u&"cust\+00006fmers" SET a = 1`, customers},
		{`UPDATE U&"cust!006fmers" UESCAPE '!' SET a = 1`, customers},
		{`DO $$ BEGIN UPDATE U&"\0063ustomers" SET a = 1; END $$`, customers},
		{"-- x\nDELETE FROM customers", customers},
		{"/* a /* b */ c */ DELETE FROM customers", customers},
		{"UPDATE/**/customers SET a=1", customers},
		{"UPDATE\tcustomers\nSET\fa = 1", customers},
		{`SELECT * FROM "customers"`, customers},
		{"SELECT * FROM CUSTOMERS", customers},
		{"SELECT * FROM public.customers", customers},
		{`SELECT * FROM "public"."customers"`, customers},
		{"SELECT * FROM `shop`.`customers`", customers},
		{"SELECT * FROM [customers]", customers},
		{"TRUNCATE customers", customers},
		{"EXPLAIN ANALYZE UPDATE customers SET a = 1", customers},
		{"DO $$ BEGIN UPDATE customers SET a = 1; END $$", customers},
		{"DO $body$ BEGIN EXECUTE 'DELETE FROM customers'; END $body$", customers},
		{"DO 'BEGIN EXECUTE ''DELETE FROM customers''; END'", customers},
		{"DO $$ DECLARE q text := 'DELETE FROM customers'; BEGIN EXECUTE q; END $$", customers},
		{"CREATE FUNCTION f() RETURNS void AS 'DELETE FROM customers' LANGUAGE sql", customers},
		{`PREPARE s FROM "DELETE FROM customers"`, customers},
		{"UPDATE customers SET a = 1 RETURNING *", customers},
		{"WITH x AS (DELETE FROM customers RETURNING *) SELECT * FROM x", customers},
		{"SELECT 1; DELETE FROM customers", customers},
		{"SELECT * FROM orders JOIN customers ON true JOIN Orders o ON true", []string{"orders", "customers"}},
		{"SELECT /*!40101 customers.*/ 1", customers},
		{"SELECT 1 --x\nFROM customers", customers},
		{"SELECT 'customers'", nil},
		{"SELECT 1 -- customers", nil},
		{"SELECT /* customers */ 1", nil},
		{"SELECT /* a /* customers */ b */ 1", nil},
		{"SELECT $$customers$$", nil},
		{"SELECT $q$customers$q$", nil},
		// MySQL reads $tag$ as a name, so customers is code there.
		{"SELECT $tag$ customers $tag$", customers},
		{"INSERT INTO audit (msg) VALUES ('update customers')", nil},
		{`SELECT E'it\'s customers'`, nil},
		{`SELECT "customers_archive".id FROM customers_archive`, nil},
		{"SELECT customers_id, x.customers$ FROM x", nil},
		{"SELECT $1, :customers, @customers", nil},
		{"", nil},
	} {
		if got := sqlscan.Mentions(tc.sql, sqlScanLockable); !slices.Equal(got, tc.want) {
			t.Errorf("sqlscan.Mentions(%q) = %q, want %q", tc.sql, got, tc.want)
		}
	}
}

func TestSQLScanSimpleTable(t *testing.T) {
	for _, tc := range []struct {
		expr         string
		table, alias string
		ok           bool
	}{
		{"customers", "customers", "", true},
		{`"customers"`, "customers", "", true},
		{"public.customers", "customers", "", true},
		{`"public"."customers"`, "customers", "", true},
		{"customers c", "customers", "c", true},
		{"customers AS c", "customers", "c", true},
		{`customers as "c"`, "customers", "c", true},
		{"`customers`", "customers", "", true},
		{"[shop].[customers] AS [c]", "customers", "c", true},
		{" \tdb.public.Customers\n", "Customers", "", true},
		{"(?) AS t", "", "", false},
		{"customers, orders", "", "", false},
		{"customers c JOIN orders o ON true", "", "", false},
		{"fn(?)", "", "", false},
		{"customers AS", "", "", false},
		{"", "", "", false},
		{"customers c d", "", "", false},
		{"a.b.c.d", "", "", false},
		{"ONLY customers", "", "", false},
		{"customers JOIN", "", "", false},
		{"customers /* c */", "", "", false},
		{`""`, "", "", false},
		{"customers.", "", "", false},
		{"$1", "", "", false},
	} {
		table, alias, ok := sqlscan.SimpleTable(tc.expr)
		if table != tc.table || alias != tc.alias || ok != tc.ok {
			t.Errorf("sqlscan.SimpleTable(%q) = %q, %q, %v; want %q, %q, %v", tc.expr, table, alias, ok, tc.table, tc.alias, tc.ok)
		}
	}
}

// inUnicodeDecoded: name is in sql once PostgreSQL's U& escapes are
// decoded, with any of sql's bytes as the escape character (UESCAPE).
func inUnicodeDecoded(sql, name string) bool {
	if !strings.Contains(sql, "u&") {
		return false
	}
	for i := 0; i < len(sql); i++ {
		if strings.Contains(strings.ToLower(sqlscan.UnicodeUnescape(sql, sql[i])), name) {
			return true
		}
	}
	return false
}

// FuzzScanSQL: scanSQL and simpleTable never panic; a statement that
// deletes rows keeps the text rowAccess whatever follows; mentions reports
// only names in the input (allowing for decoded backslash and U& escapes).
func FuzzScanSQL(f *testing.F) {
	for _, seed := range []string{
		"SELECT 1", "/* hi */ UPDATE customers SET a = 1", "-- x\nDELETE FROM customers",
		"DO $body$ BEGIN EXECUTE 'DELETE FROM customers'; END $body$", `SELECT E'it\'s customers'`,
		"SELECT /*!40101 customers.*/ 1", "SELECT [a'b] FROM `c``d` WHERE \"e\"\"f\" = $1",
		"/* a /* b */ c */", "U&\"d\\0061t\" UESCAPE '!'", "CREATE TABLE x AS SELECT * FROM orders",
		"SELECT 'a\\' , b --'", "$$", "$a$ $a", "'", "\"", "/*", "\xff\xfe", "SELECT\u00a0customers",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		_ = sqlscan.Read(sql)
		if !sqlscan.Read("DELETE FROM t;\n" + sql).RowAccess {
			t.Errorf("DELETE prefix: rowAccess false for %q", sql)
		}
		lower, stripped := strings.ToLower(sql), strings.ToLower(strings.ReplaceAll(sql, `\`, ""))
		for _, name := range sqlscan.Mentions(sql, sqlScanAnyName) {
			if !strings.Contains(lower, name) && !strings.Contains(stripped, name) && !inUnicodeDecoded(lower, name) {
				t.Errorf("sqlscan.Mentions(%q) reports %q, absent from the input", sql, name)
			}
		}
		if table, _, ok := sqlscan.SimpleTable(sql); ok && table == "" {
			t.Errorf("sqlscan.SimpleTable(%q): ok with an empty table", sql)
		}
	})
}

// sqlScanAnyName accepts every identifier that lower-cases to [a-z0-9_]+.
func sqlScanAnyName(ident string) (string, bool) {
	l := strings.ToLower(ident)
	if l == "" || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return "", false
	}
	return l, true
}
