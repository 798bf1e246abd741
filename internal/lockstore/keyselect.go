package lockstore

import "strings"

// The plugin's reads of the application's keys: SQL on the application's
// tables, not the lock table's, but SQL all the same, kept here with the
// rest. Names come quoted by the caller's dialect; values are ?
// placeholders, bound as GORM binds its own.

// DistinctKeys reads each value of the column col (quoted) that the
// key-only SELECT inner finds, once: many members share few roots.
func DistinctKeys(col, inner string) string {
	return "SELECT DISTINCT " + col + " FROM (" + inner + ") offlinelock_links"
}

// KeysIn reads the column col of table's rows whose column by is one of n
// values (all quoted), ending in lock, a locking read's clause ("" for
// none).
func KeysIn(col, table, by string, n int, lock string) string {
	return "SELECT " + col + " FROM " + table + " WHERE " + by + " IN (" + placeholders(n) + ")" + lock
}

// ExistingKeys reads which of the rows, by key columns cols (quoted), are
// in table (quoted); widths[i] is the number of values row i names.
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
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
