package lockstore

import "strings"

// The plugin's reads of the application's keys, with names quoted by the
// caller's dialect and values as ? placeholders.

// DistinctKeys reads each value of col that the key-only SELECT inner finds, once.
func DistinctKeys(col, inner string) string {
	return "SELECT DISTINCT " + col + " FROM (" + inner + ") offlinelock_links"
}

// KeysIn reads col of table's rows whose by is one of n values, ending in
// lock ("" for none).
func KeysIn(col, table, by string, n int, lock string) string {
	return "SELECT " + col + " FROM " + table + " WHERE " + by + " IN (" + placeholders(n) + ")" + lock
}

// ExistingKeys reads which rows (by key columns cols) are in table;
// widths[i] is the number of values row i names.
func ExistingKeys(table string, cols []string, widths []int) string {
	var b strings.Builder
	for i, w := range widths {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(" + placeholders(w) + ")")
	}
	colList := strings.Join(cols, ", ")
	if len(cols) == 1 {
		q := "SELECT " + colList + " FROM " + table + " WHERE " + colList + " IN " + b.String()
		return strings.Replace(q, " IN (", " IN ((", 1) + ")"
	}
	return "SELECT " + colList + " FROM " + table + " WHERE (" + colList + ") IN (VALUES " + b.String() + ")"
}

// placeholders is n comma-separated ? placeholders.
func placeholders(n int) string { return repeated("?", n) }
