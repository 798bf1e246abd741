package offlinelock

import "strings"

// TEMPORARY stand-in until sqlscan.go lands.
type sqlScan struct {
	idents    []string
	rowAccess bool
}

func scanSQL(sql string) sqlScan {
	f := strings.FieldsFunc(sql, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r > 127)
	})
	return sqlScan{idents: f, rowAccess: true}
}

func mentions(sql string, lockable func(string) (string, bool)) []string {
	var out []string
	seen := map[string]bool{}
	for _, id := range scanSQL(sql).idents {
		if c, ok := lockable(id); ok && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

func simpleTable(expr string) (string, string, bool) {
	f := strings.Fields(strings.NewReplacer(`"`, "", "`", "").Replace(expr))
	if len(f) == 3 && strings.EqualFold(f[1], "as") {
		f = []string{f[0], f[2]}
	}
	if len(f) == 0 || len(f) > 2 || strings.ContainsAny(expr, "(),?") {
		return "", "", false
	}
	t := f[0]
	if i := strings.LastIndex(t, "."); i >= 0 {
		t = t[i+1:]
	}
	if len(f) == 2 {
		return t, f[1], true
	}
	return t, "", true
}
