package sqlscan

// UnicodeUnescape decodes PostgreSQL's U& escapes with esc, for the fuzz
// test's invariant.
var UnicodeUnescape = sqlUnicodeUnescape
