package lockstore

import (
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
)

// Statements about many lock rows on MariaDB take their keys as one JSON
// array (JSON_TABLE), not a placeholder per key: MariaDB refuses more than
// 65,535 placeholders, and a long disjunction of keys makes it scan and
// lock the table. Joined by whole primary key, JSON_TABLE first, each key
// is one eq_ref lookup in sortKeys order. Keys are hex: the columns are bytes.

// mysqlJSONMax bounds one statement's JSON array well inside
// max_allowed_packet (16 MiB on MariaDB 10.6+).
const mysqlJSONMax = 2 << 20

// mysqlPKColumns are the JSON_TABLE columns of a list of whole primary
// keys, [resource, lock_id, holder] in hex.
const mysqlPKColumns = `r VARCHAR(1024) PATH '$[0]', i VARCHAR(2040) PATH '$[1]', h VARCHAR(2040) PATH '$[2]'`

// jsonTable is JSON_TABLE over the one ? parameter with columns, as k.
func jsonTable(columns string) string {
	return `JSON_TABLE(?, '$[*]' COLUMNS (` + columns + `)) k`
}

// joinPKs is the list of whole primary keys (mysqlPKColumns) joined to
// the lock table l by primary key, in the list's order.
func (s *mysqlStore) joinPKs() string {
	return jsonTable(mysqlPKColumns) + ` STRAIGHT_JOIN ` + s.table + ` l` + mysqlPK +
		` ON l.Resource = UNHEX(k.r) AND l.lock_id = UNHEX(k.i) AND l.holder = UNHEX(k.h)`
}

// jsonArrays renders items as JSON arrays of at most mysqlJSONMax bytes
// each: one per statement.
func jsonArrays(items [][]string) []string {
	var out []string
	var b, enc []byte
	for _, it := range items {
		enc = appendJSONItem(enc[:0], it)
		if len(b) > 0 && len(b)+len(enc)+2 > mysqlJSONMax {
			out = append(out, string(append(b, ']')))
			b = b[:0]
		}
		if len(b) == 0 {
			b = append(b, '[')
		} else {
			b = append(b, ',')
		}
		b = append(b, enc...)
	}
	if len(b) > 0 {
		out = append(out, string(append(b, ']')))
	}
	return out
}

// appendJSONItem appends it as a JSON array of strings (hex and digits as
// they are, anything else by json.Marshal).
func appendJSONItem(b []byte, it []string) []byte {
	b = append(b, '[')
	for i, v := range it {
		if i > 0 {
			b = append(b, ',')
		}
		if !plainJSON(v) {
			enc, _ := json.Marshal(v) // a string: never fails
			b = append(b, enc...)
			continue
		}
		b = append(b, '"')
		b = append(b, v...)
		b = append(b, '"')
	}
	return append(b, ']')
}

// plainJSON says whether s needs no escaping in a JSON string: ASCII
// letters and digits only.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// pkJSON is rows' whole primary keys as JSON arrays (joinPKs).
func pkJSON(rows []row) []string {
	items := make([][]string, len(rows))
	flat := make([]string, 3*len(rows))
	for i, r := range rows {
		it := flat[3*i : 3*i+3 : 3*i+3]
		it[0], it[1], it[2] = hexOf(r.Resource), hexOf(r.ID), hexOf(r.holder)
		items[i] = it
	}
	return jsonArrays(items)
}

func hexOf(s string) string { return hex.EncodeToString([]byte(s)) }

// keyRowsOf are the key rows (holder ”) of the records of rows, once
// each, in rows' order.
func keyRowsOf(rows []row) []row {
	var out []row
	seen := map[Key]bool{}
	for _, r := range rows {
		if k := (Key{r.Resource, r.ID}); !seen[k] {
			seen[k] = true
			out = append(out, row{Lock: Lock{Resource: r.Resource, ID: r.ID}})
		}
	}
	return out
}

// mysqlVersionAtLeast says whether VERSION()'s answer v is major.minor or
// later ("10.11.19-MariaDB-0+deb12u1" is 10.11).
func mysqlVersionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	maj, err1 := strconv.Atoi(parts[0])
	mnr, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return maj > major || maj == major && mnr >= minor
}
