package sqlscan_test

import (
	"testing"

	"github.com/offlinelock/offlinelock/internal/sqlscan"
)

func TestKeysAsStored(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want bool
	}{
		{"SELECT * FROM docs WHERE id = ?", true},
		{"SELECT id, title FROM docs WHERE id IN (?, ?)", true},
		{"select DISTINCT d.id, d.title from docs d where d.title like ?", true},
		{"SELECT docs.* FROM docs JOIN users u ON u.id = docs.owner_id", true},
		{"SELECT d.id, u.name AS title FROM docs AS d JOIN users u ON (u.id = d.owner_id)", true},
		{`SELECT "id", title FROM public.docs ORDER BY id LIMIT 5`, true},
		{"SELECT id AS id, title FROM docs", true},
		{"SELECT title, id FROM docs FOR UPDATE", true},

		{"SELECT id+100 AS id, title FROM docs", false},
		{"SELECT id + 100 id, title FROM docs", false},
		{"SELECT title AS id FROM docs", false},
		{"SELECT other_id id, title FROM docs", false},
		{"SELECT *, id+1 AS id FROM docs", false},
		{"SELECT id, id FROM docs", false},
		{"SELECT max(id) AS id FROM docs", false},
		{"SELECT id, group_concat(title) AS title FROM docs", false},
		{"SELECT id, lag(title) OVER (ORDER BY id) AS title FROM docs", false},
		{"SELECT id, title FROM docs GROUP BY title", false},
		{"SELECT id, title FROM docs UNION SELECT id, title FROM docs", false},
		{"SELECT * FROM docs JOIN users ON users.doc_id = docs.id", false},
		{"SELECT u.* FROM docs d JOIN users u ON u.id = d.owner_id", false},
		{"SELECT u.id, d.title FROM docs d JOIN users u ON u.id = d.owner_id", false},
		{"SELECT id, title FROM docs d JOIN users u ON u.id = d.owner_id", false},
		{"SELECT id, title FROM docs AS d(title, id)", false},
		{"SELECT * FROM (SELECT id + 100 AS id, title FROM docs) t", false},
		{"WITH t AS (SELECT * FROM docs) SELECT * FROM t", false},
		{"SELECT 5 AS id, title FROM docs", false},
		{"SELECT id, title FROM docs; SELECT 1", false},
		{"SELECT id, title FROM others", false},
		{"SELECT (SELECT id FROM docs LIMIT 1) AS id, title FROM docs", false},
		{"SELECT CASE WHEN id > 0 THEN id END AS id FROM docs", false},
		{"SELECT id::text AS id FROM docs", false},
	} {
		if got := sqlscan.KeysAsStored(c.sql, "docs", []string{"id"}); got != c.want {
			t.Errorf("KeysAsStored(%q) = %v, want %v", c.sql, got, c.want)
		}
	}
}

func FuzzKeysAsStored(f *testing.F) {
	f.Add("SELECT id, title FROM docs WHERE id = ?")
	f.Add("SELECT id+1 AS id FROM docs")
	f.Fuzz(func(t *testing.T, sql string) {
		sqlscan.KeysAsStored(sql, "docs", []string{"id"}) // never panics
	})
}
