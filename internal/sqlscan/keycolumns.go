package sqlscan

import "strings"

// KeysAsStored reports whether sql is one plain SELECT whose returned key
// columns are table's own, one row of table per row (no aggregate, window,
// GROUP BY, set operation or subquery), so that each row carries its key.
func KeysAsStored(sql, table string, keys []string) bool {
	passes := sqlTrusted(sqlPasses(sql))
	for _, p := range passes {
		var stmts [][]sqlToken
		for _, st := range p.stmts {
			if len(st) > 0 {
				stmts = append(stmts, st)
			}
		}
		if len(stmts) != 1 || !keysAsStored(stmts[0], table, keys) {
			return false
		}
	}
	return len(passes) > 0
}

// sqlMixesRows are the words that make a row of several rows, or bring
// rows of another query.
var sqlMixesRows = sqlWordSet(`GROUP HAVING WINDOW OVER UNION INTERSECT EXCEPT MINUS`)

func keysAsStored(st []sqlToken, table string, keys []string) bool {
	if len(st) == 0 || sqlKeyword(st[0]) != "SELECT" {
		return false // WITH, VALUES, a parenthesised query
	}
	from := -1
	for i, t := range st {
		if sqlIsPunct(t, '(') && from < 0 {
			return false // a function or a subquery in the select list
		}
		if sqlMixesRows[sqlKeyword(t)] {
			return false
		}
		if sqlKeyword(t) == "FROM" && from < 0 {
			from = i
		}
	}
	if from < 0 {
		return false
	}
	alias, joined, ok := sqlFromTable(st[from+1:], table)
	if !ok {
		return false
	}
	return sqlSelectList(st[1:from], table, alias, joined, keys)
}

// sqlFromTable reads a FROM clause that starts with table (optionally
// schema-qualified) and its alias: joined says more tables follow.
func sqlFromTable(toks []sqlToken, table string) (alias string, joined, ok bool) {
	i := 0
	if len(toks) >= 3 && sqlIsIdent(toks[0]) && sqlIsPunct(toks[1], '.') && sqlIsIdent(toks[2]) {
		i = 2 // schema.table
	}
	if i >= len(toks) || !sqlIsIdent(toks[i]) || !strings.EqualFold(toks[i].text, table) {
		return "", false, false
	}
	i++
	if i < len(toks) && sqlKeyword(toks[i]) == "AS" {
		i++
	}
	if i < len(toks) && sqlPlainName(toks[i]) {
		alias = toks[i].text
		i++
	}
	if i < len(toks) && sqlIsPunct(toks[i], '(') {
		return "", false, false // a column alias list renames the columns; a partition list
	}
	if i < len(toks) {
		switch kw := sqlKeyword(toks[i]); {
		case sqlIsPunct(toks[i], ','), kw == "JOIN", kw == "LEFT", kw == "RIGHT", kw == "INNER", kw == "FULL",
			kw == "CROSS", kw == "NATURAL", kw == "STRAIGHT_JOIN", kw == "OUTER":
			joined = true
		}
	}
	return alias, joined, true
}

// sqlSelectList checks the select list: each key column returned is a plain
// reference to table's column, at most once; * only with no join, t.* only
// for table.
func sqlSelectList(toks []sqlToken, table, alias string, joined bool, keys []string) bool {
	if len(toks) > 0 && (sqlKeyword(toks[0]) == "DISTINCT" || sqlKeyword(toks[0]) == "ALL") {
		toks = toks[1:]
	}
	own := func(q sqlToken) bool {
		return strings.EqualFold(q.text, table) || alias != "" && strings.EqualFold(q.text, alias)
	}
	isKey := func(name string) bool {
		for _, k := range keys {
			if strings.EqualFold(k, name) {
				return true
			}
		}
		return false
	}
	seen := map[string]bool{}
	for _, item := range sqlSplit(toks, ',') { // no parentheses here: keysAsStored refused them
		ref, out, ok := sqlItem(item)
		switch {
		case !ok:
			return false
		case len(ref) == 1 && sqlIsPunct(ref[0], '*'):
			if joined {
				return false
			}
			continue
		case len(ref) == 3 && sqlIsPunct(ref[2], '*'):
			if !own(ref[0]) {
				return false
			}
			continue
		case !isKey(out):
			continue
		case seen[strings.ToLower(out)]:
			return false
		}
		seen[strings.ToLower(out)] = true
		col := ref[len(ref)-1]
		plain := len(ref) == 1 && !joined || len(ref) == 3 && own(ref[0])
		if !plain || !sqlIsIdent(col) || !strings.EqualFold(col.text, out) {
			return false
		}
	}
	return true
}

// sqlItem splits a select item into its expression and the name it returns;
// ok is false where it cannot read it.
func sqlItem(item []sqlToken) (ref []sqlToken, out string, ok bool) {
	n := len(item)
	switch {
	case n == 0:
		return nil, "", false
	case n >= 3 && sqlKeyword(item[n-2]) == "AS" && sqlIsIdent(item[n-1]):
		return item[:n-2], item[n-1].text, true
	case n >= 2 && sqlIsIdent(item[n-1]) && (sqlIsIdent(item[n-2]) || item[n-2].kind == sqlNumber || item[n-2].kind == sqlString):
		return item[:n-1], item[n-1].text, true // an alias without AS
	case n == 1 && sqlIsIdent(item[0]), n == 3 && sqlIsIdent(item[0]) && sqlIsPunct(item[1], '.') && sqlIsIdent(item[2]):
		return item, item[n-1].text, true
	case n == 1 && sqlIsPunct(item[0], '*'), n == 3 && sqlIsIdent(item[0]) && sqlIsPunct(item[1], '.') && sqlIsPunct(item[2], '*'):
		return item, "*", true
	}
	return item, "", true // an expression without a name: it returns no key column
}
