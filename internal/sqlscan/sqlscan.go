// Package sqlscan reads raw SQL as the servers a GORM application may talk
// to read it: the tables a statement names, whether it may touch rows, DDL
// that gives a table another name, SQL that builds SQL (docs/fail-closed.md).
package sqlscan

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Not knowing which server the SQL is for, the scanner lexes it once per
// plausible dialect and takes the union, so no dialect's comment or literal
// hides another's code.

// sqlTokenKind classifies a token of raw SQL.
type sqlTokenKind uint8

const (
	sqlWord   sqlTokenKind = iota // unquoted identifier or keyword, as written
	sqlQuoted                     // quoted identifier, unquoted
	sqlString                     // string or dollar-quoted literal, decoded
	sqlNumber
	sqlParam // ?, $1, :name, @var
	sqlPunct // any other single byte
)

// sqlToken is one token; q is the opening quote of a quoted token.
type sqlToken struct {
	kind sqlTokenKind
	text string
	q    byte
}

// sqlDialect is one lexical convention: what tells one server's reading
// from another's.
type sqlDialect struct {
	name string
	// comments
	hashComments      bool // '#' starts a line comment
	dashNeedsSpace    bool // "--" starts a comment only before a space or a control byte
	crEndsLineComment bool // a line comment also ends at '\r'
	nestedComments    bool // /* /* */ */ nests
	execComments      bool // /*! … */ and /*M! … */ hold SQL that runs
	hintsRun          bool // /*+ … */ holds SQL that runs (with execComments); else a plain comment
	openCommentOK     bool // a block comment left open at the end of the text is a comment, not an error
	// literals and quoted names
	stringBackslash  bool // '…' takes backslash escapes
	quotedBackslash  bool // "…" takes backslash escapes
	escapeStrings    bool // E'…' takes backslash escapes
	unicodeEscapes   bool // U&'…' and U&"…", with UESCAPE
	dollarQuotes     bool // $tag$ … $tag$ quotes a literal
	bracketNames     bool // [name] quotes a name
	stringTableNames bool // a '…' where a table name is expected is a name
	// names and parameters
	dollarInNames bool // '$' may start and continue a name
	dollarParams  bool // $name is a parameter
}

// The servers' conventions; MySQL's are its defaults.
var (
	sqlPostgres = sqlDialect{name: "postgres", crEndsLineComment: true, nestedComments: true,
		escapeStrings: true, unicodeEscapes: true, dollarQuotes: true}
	sqlSQLite = sqlDialect{name: "sqlite", openCommentOK: true, bracketNames: true, stringTableNames: true, dollarParams: true}
	sqlMySQL  = sqlDialect{name: "mysql", hashComments: true, dashNeedsSpace: true, execComments: true, hintsRun: true,
		stringBackslash: true, quotedBackslash: true, dollarInNames: true}
)

// with returns d changed by f, named after the change.
func (d sqlDialect) with(name string, f func(*sqlDialect)) sqlDialect {
	d.name += "/" + name
	f(&d)
	return d
}

// sqlDialectsFor lists the conventions sql may be written in, skipping those
// that cannot differ on it.
func sqlDialectsFor(sql string) []sqlDialect {
	ds := []sqlDialect{sqlPostgres, sqlSQLite, sqlMySQL}
	if strings.Contains(sql, "/*+") {
		ds = append(ds, sqlMySQL.with("mariadb", func(d *sqlDialect) { d.hintsRun = false }))
	}
	if strings.IndexByte(sql, '\\') >= 0 {
		ds = append(ds,
			sqlPostgres.with("standard_conforming_strings=off", func(d *sqlDialect) { d.stringBackslash = true }),
			sqlMySQL.with("NO_BACKSLASH_ESCAPES", func(d *sqlDialect) { d.stringBackslash, d.quotedBackslash = false, false }),
			sqlMySQL.with("ANSI_QUOTES", func(d *sqlDialect) { d.quotedBackslash = false }),
		)
	}
	return ds
}

// sqlPass is sql as one dialect lexes it, split into statements.
type sqlPass struct {
	stmts [][]sqlToken
	bad   bool // an unterminated literal or comment
}

// sqlPasses lexes sql in every dialect it may be written in.
func sqlPasses(sql string) []sqlPass {
	var ps []sqlPass
	for _, d := range sqlDialectsFor(sql) {
		toks, bad := lexSQL(sql, d)
		ps = append(ps, sqlPass{stmts: sqlSplit(toks, ';'), bad: bad})
	}
	return ps
}

// sqlTrusted drops the passes that do not lex: a server using that dialect
// would reject the text, so its reading cannot run. If none lexes, all count.
func sqlTrusted(ps []sqlPass) []sqlPass {
	var good []sqlPass
	for _, p := range ps {
		if !p.bad {
			good = append(good, p)
		}
	}
	if len(good) == 0 {
		return ps
	}
	return good
}

// sqlSplit splits tokens at every punctuation token c.
func sqlSplit(toks []sqlToken, c byte) [][]sqlToken {
	var out [][]sqlToken
	start := 0
	for i, t := range toks {
		if sqlIsPunct(t, c) {
			out = append(out, toks[start:i])
			start = i + 1
		}
	}
	return append(out, toks[start:])
}

// Scan is what Read reports.
type Scan struct {
	// Idents: every identifier outside comments and literals, in order, dotted
	// parts apart, unquoted, keywords included, across readings.
	Idents []string
	// RowAccess: some statement may read or write table rows, or the text
	// does not lex in some dialect (fail closed).
	RowAccess bool
}

// Read tokenises sql (one or several statements) and reports what it sees.
func Read(sql string) Scan {
	var sc Scan
	passes := sqlPasses(sql)
	for _, p := range passes {
		sc.RowAccess = sc.RowAccess || p.bad
		for _, st := range p.stmts {
			sc.RowAccess = sc.RowAccess || sqlStmtRowAccess(st)
		}
	}
	seen := map[string]bool{}
	for i, p := range sqlTrusted(passes) {
		for _, st := range p.stmts {
			for _, t := range st {
				if sqlIsIdent(t) && (i == 0 || !seen[t.text]) {
					sc.Idents = append(sc.Idents, t.text)
				}
				seen[t.text] = true
			}
		}
	}
	return sc
}

// sqlBodyDepth bounds the recursion into literals holding SQL.
const sqlBodyDepth = 8

// sqlMentionSearch is the state of one Mentions call.
type sqlMentionSearch struct {
	lockable func(string) (string, bool)
	found    []string
	seen     map[string]bool // canonical names found
	searched map[string]bool // literal bodies already searched
	budget   int             // bytes left to lex: nested bodies must not make a statement's check slow
}

// sqlMentionBudget bounds the bytes one Mentions lexes; past it every word of
// the text counts (a superset).
const sqlMentionBudget = 1 << 20

// FirstWord is the first word of sql, lower case, past comments.
func FirstWord(sql string) string {
	if idents := Read(sql).Idents; len(idents) > 0 {
		return strings.ToLower(idents[0])
	}
	return ""
}

// PlainSelect says whether raw SQL only reads: it starts with SELECT, WITH,
// VALUES or TABLE and names no writing statement anywhere (a data-modifying
// CTE, SELECT … INTO). A raw SELECT … FOR UPDATE is taken as writing too:
// refusing more is the safe side.
func PlainSelect(sql string) bool {
	idents := Read(sql).Idents
	if len(idents) == 0 {
		return false
	}
	switch strings.ToLower(idents[0]) {
	case "select", "with", "values", "table":
	default:
		return false
	}
	for _, id := range idents {
		switch strings.ToLower(id) {
		case "insert", "update", "delete", "merge", "truncate", "replace", "upsert", "into", "copy", "call", "do", "execute":
			return false
		}
	}
	return true
}

// Mentions returns the canonical names lockable accepts among sql's
// identifiers, first seen first, once each; literals count as SQL inside
// DO, EXECUTE, PREPARE and CREATE FUNCTION and the like.
func Mentions(sql string, lockable func(ident string) (canonical string, ok bool)) []string {
	m := &sqlMentionSearch{lockable: lockable, seen: map[string]bool{}, searched: map[string]bool{}, budget: sqlMentionBudget}
	m.search(sql, 0)
	if m.budget < 0 {
		for _, w := range strings.FieldsFunc(sql, func(r rune) bool {
			return !(r == '_' || r == '$' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127)
		}) {
			m.check(w)
		}
	}
	return m.found
}

func (m *sqlMentionSearch) search(sql string, depth int) {
	if m.budget -= len(sql) * len(sqlDialectsFor(sql)); m.budget < 0 {
		return
	}
	for _, p := range sqlTrusted(sqlPasses(sql)) {
		for _, st := range p.stmts {
			body := depth > 0 || sqlIsBodyStmt(st)
			for _, t := range st {
				if sqlIsIdent(t) {
					m.check(t.text)
				}
				lit := t.kind == sqlString || t.kind == sqlQuoted && t.q == '"' // "…" is a string in MySQL
				if body && lit && depth < sqlBodyDepth && !m.searched[t.text] {
					m.searched[t.text] = true
					m.search(t.text, depth+1)
				}
			}
		}
	}
}

func (m *sqlMentionSearch) check(ident string) {
	if name, ok := m.lockable(ident); ok && !m.seen[name] {
		m.seen[name] = true
		m.found = append(m.found, name)
	}
}

// SimpleTable parses a plain, optionally qualified table with an optional
// alias; ok is false for anything else, and callers scan in full.
func SimpleTable(expr string) (table, alias string, ok bool) {
	if strings.ContainsAny(expr, "'$;\\&#") || strings.Contains(expr, "--") || strings.Contains(expr, "/*") {
		return "", "", false
	}
	toks, bad := lexSQL(expr, sqlSQLite)
	if bad {
		return "", "", false
	}
	i, parts := 0, 0
	for {
		if i >= len(toks) || !sqlPlainName(toks[i]) {
			return "", "", false
		}
		table, i, parts = toks[i].text, i+1, parts+1
		if i >= len(toks) || !sqlIsPunct(toks[i], '.') {
			break
		}
		i++
	}
	if i < len(toks) && sqlKeyword(toks[i]) == "AS" {
		i++
		if i >= len(toks) {
			return "", "", false
		}
	}
	if i < len(toks) {
		if !sqlPlainName(toks[i]) {
			return "", "", false
		}
		alias, i = toks[i].text, i+1
	}
	if parts > 3 || i != len(toks) {
		return "", "", false
	}
	return table, alias, true
}

// sqlPlainName says whether t can name a table or alias in SimpleTable.
func sqlPlainName(t sqlToken) bool {
	switch t.kind {
	case sqlWord:
		return !sqlClauseWords[sqlKeyword(t)]
	case sqlQuoted:
		return t.text != ""
	}
	return false
}

// sqlClauseWords are keywords that cannot be a bare table name or alias.
var sqlClauseWords = sqlWordSet(`AS ONLY LATERAL JOIN ON USING WHERE LEFT RIGHT INNER OUTER FULL CROSS
	NATURAL SELECT FROM VALUES TABLE WITH GROUP ORDER LIMIT OFFSET HAVING UNION INTERSECT EXCEPT
	WINDOW FOR FETCH TABLESAMPLE STRAIGHT_JOIN NULL TRUE FALSE NOT AND OR IN IS DISTINCT ALL CASE
	WHEN THEN ELSE END INTO SET DELETE UPDATE INSERT RETURNING LIKE BETWEEN EXISTS USE FORCE
	IGNORE INDEXED PARTITION`)

func sqlWordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

func sqlIsIdent(t sqlToken) bool { return t.kind == sqlWord || t.kind == sqlQuoted }

func sqlIsPunct(t sqlToken, c byte) bool {
	return t.kind == sqlPunct && t.text[0] == c
}

// sqlKeyword is t upper-cased if it is an unquoted word, else "". Only ASCII
// is folded, as servers do for keywords.
func sqlKeyword(t sqlToken) string {
	if t.kind != sqlWord {
		return ""
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}, t.text)
}

func sqlIsDigit(c byte) bool { return c >= '0' && c <= '9' }

// sqlIsIdentStart reports ASCII identifier starts and any non-ASCII byte.
func sqlIsIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= utf8.RuneSelf
}

// sqlIdentEnd returns where the identifier characters from i end. Unicode
// spaces end it; other non-ASCII characters (and invalid bytes) belong to it.
func sqlIdentEnd(s string, i int) int {
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if !sqlIsIdentStart(c) && !sqlIsDigit(c) && c != '$' {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			break
		}
		i += n
	}
	return i
}

// sqlLexer tokenises one string in one dialect.
type sqlLexer struct {
	s    string
	d    sqlDialect
	i    int
	exec int  // open MySQL /*! … */ comments, whose content is SQL
	bad  bool // an unterminated literal or comment
	toks []sqlToken
}

// lexSQL tokenises s in dialect d, dropping comments. An unterminated
// literal or comment runs to the end and makes bad true.
func lexSQL(s string, d sqlDialect) (toks []sqlToken, bad bool) {
	l := &sqlLexer{s: s, d: d}
	for l.i < len(s) {
		l.step()
	}
	if d.stringTableNames {
		sqliteStringNames(l.toks)
	}
	return l.toks, l.bad || l.exec > 0
}

// sqliteTableWords are the words after which SQLite takes a string as a table name.
var sqliteTableWords = sqlWordSet(`FROM JOIN INTO UPDATE TABLE`)

// sqliteStringNames makes such strings identifiers, as SQLite reads them.
func sqliteStringNames(toks []sqlToken) {
	for i := 1; i < len(toks); i++ {
		if toks[i].kind == sqlString && toks[i].q == '\'' && sqliteTableWords[sqlKeyword(toks[i-1])] {
			toks[i].kind = sqlQuoted
		}
	}
}

func (l *sqlLexer) at(i int) byte {
	if i < len(l.s) {
		return l.s[i]
	}
	return 0
}

func (l *sqlLexer) emit(kind sqlTokenKind, text string, q byte) {
	l.toks = append(l.toks, sqlToken{kind: kind, text: text, q: q})
}

// step lexes the token (or skips the space or comment) at l.i.
func (l *sqlLexer) step() {
	s, i := l.s, l.i
	c := s[i]
	switch {
	case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
		l.i++
	case c >= utf8.RuneSelf:
		if r, n := utf8.DecodeRuneInString(s[i:]); unicode.IsSpace(r) {
			l.i += n
		} else {
			l.word()
		}
	case c == '-' && l.at(i+1) == '-' && (!l.d.dashNeedsSpace || i+2 >= len(s) || s[i+2] <= ' '):
		l.lineComment()
	case c == '#' && l.d.hashComments:
		l.lineComment()
	case c == '/' && l.at(i+1) == '*':
		l.blockComment()
	case c == '*' && l.at(i+1) == '/' && l.exec > 0:
		l.exec--
		l.i += 2
	case (c == 'U' || c == 'u') && l.d.unicodeEscapes && l.at(i+1) == '&' && (l.at(i+2) == '"' || l.at(i+2) == '\''):
		l.unicodeQuoted()
	case c == '\'':
		l.quoted(sqlString, '\'', l.d.stringBackslash)
	case c == '"':
		l.quoted(sqlQuoted, '"', l.d.quotedBackslash)
	case c == '`':
		l.quoted(sqlQuoted, '`', false)
	case c == '[' && l.d.bracketNames:
		l.bracket()
	case c == '$' && l.d.dollarQuotes:
		l.dollar()
	case sqlIsIdentStart(c) || c == '$' && l.d.dollarInNames:
		l.word()
	case sqlIsDigit(c) || c == '.' && sqlIsDigit(l.at(i+1)):
		l.number()
	default:
		l.other()
	}
}

// other lexes parameters and punctuation.
func (l *sqlLexer) other() {
	s, i := l.s, l.i
	j := i + 1
	switch s[i] {
	case '?':
		for j < len(s) && sqlIsDigit(s[j]) {
			j++
		}
		l.emit(sqlParam, s[i:j], 0)
		l.i = j
		return
	case ':':
		if sqlIsIdentStart(l.at(j)) && (i == 0 || s[i-1] != ':') {
			j = sqlIdentEnd(s, j)
		}
	case '@':
		if l.at(j) == '@' {
			j++
		}
		if k := sqlIdentEnd(s, j); k > j {
			j = k
		} else {
			j = i + 1
		}
	case '$':
		if l.d.dollarParams {
			j = sqlIdentEnd(s, j)
		}
	}
	kind := sqlParam
	if j == i+1 {
		kind = sqlPunct
	}
	l.emit(kind, s[i:j], 0)
	l.i = j
}

// lineComment skips to the end of the line (PostgreSQL also ends it at \r).
func (l *sqlLexer) lineComment() {
	eols := "\n"
	if l.d.crEndsLineComment {
		eols = "\r\n"
	}
	if n := strings.IndexAny(l.s[l.i:], eols); n >= 0 {
		l.i += n + 1
	} else {
		l.i = len(l.s)
	}
}

// blockComment skips a comment, nested in PostgreSQL. In MySQL, /*! … */,
// /*M! … */ and /*+ … */ hold SQL: only the markers are skipped.
func (l *sqlLexer) blockComment() {
	s, i := l.s, l.i
	if l.d.execComments {
		j := i + 2
		if l.at(j) == 'M' && l.at(j+1) == '!' {
			j++
		}
		if c := l.at(j); c == '!' || c == '+' && l.d.hintsRun {
			for j++; j < len(s) && sqlIsDigit(s[j]); j++ { // version
			}
			l.exec++
			l.i = j
			return
		}
	}
	depth := 0
	for j := i; j+1 < len(s); {
		switch {
		case s[j] == '/' && s[j+1] == '*' && (depth == 0 || l.d.nestedComments):
			depth++
			j += 2
		case s[j] == '*' && s[j+1] == '/':
			depth--
			j += 2
			if depth == 0 {
				l.i = j
				return
			}
		default:
			j++
		}
	}
	// SQLite takes a block comment left open at the end of the text as
	// a comment; the other servers reject the text.
	l.bad = l.bad || !l.d.openCommentOK
	l.i = len(s)
}

// quoted lexes a literal or identifier quoted by q at l.i, where a doubled
// q stands for q and, if bs, a backslash escapes the next byte.
func (l *sqlLexer) quoted(kind sqlTokenKind, q byte, bs bool) {
	s := l.s
	start := l.i + 1
	for j := start; j < len(s); j++ {
		switch {
		case bs && s[j] == '\\':
			j++
		case s[j] == q && l.at(j+1) == q:
			j++
		case s[j] == q:
			l.emit(kind, sqlUnquote(s[start:j], q, bs), q)
			l.i = j + 1
			return
		}
	}
	l.bad = true
	l.emit(kind, sqlUnquote(s[start:], q, bs), q)
	l.i = len(s)
}

// unicodeQuoted lexes PostgreSQL's U&"…" or U&'…', decoding its escapes with
// the UESCAPE character after it, if any.
func (l *sqlLexer) unicodeQuoted() {
	q := l.s[l.i+2]
	kind := sqlQuoted
	if q == '\'' {
		kind = sqlString
	}
	l.i += 2
	l.quoted(kind, q, false)
	esc := byte('\\')
	blank := func(j int) int {
		for j < len(l.s) && strings.IndexByte(" \t\n\r", l.s[j]) >= 0 {
			j++
		}
		return j
	}
	j := blank(l.i)
	if k := sqlIdentEnd(l.s, j); k == j+7 && strings.EqualFold(l.s[j:k], "UESCAPE") {
		if m := blank(k); m+2 < len(l.s) && l.s[m] == '\'' && l.s[m+2] == '\'' {
			esc, l.i = l.s[m+1], m+3
		}
	}
	t := &l.toks[len(l.toks)-1]
	t.text = sqlUnicodeUnescape(t.text, esc)
}

// sqlUnicodeUnescape decodes PostgreSQL's Unicode escapes with escape
// character esc; a malformed escape is kept as written.
func sqlUnicodeUnescape(s string, esc byte) string {
	if strings.IndexByte(s, esc) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != esc {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == esc {
			b.WriteByte(esc)
			i++
			continue
		}
		n, start := 4, i+1
		if i+1 < len(s) && s[i+1] == '+' {
			n, start = 6, i+2
		}
		if start+n <= len(s) {
			if r, err := strconv.ParseUint(s[start:start+n], 16, 32); err == nil {
				b.WriteRune(rune(r))
				i = start + n - 1
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// sqlUnquote decodes the inside of a quoted token. Single-character
// backslash escapes are decoded; octal, hex and Unicode ones are not.
func sqlUnquote(raw string, q byte, bs bool) string {
	if strings.IndexByte(raw, q) < 0 && (!bs || strings.IndexByte(raw, '\\') < 0) {
		return raw
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case bs && c == '\\' && i+1 < len(raw):
			i++
			c = raw[i]
			if k := strings.IndexByte("ntrbfZ0", c); k >= 0 {
				c = "\n\t\r\b\f\x1a\x00"[k]
			}
		case c == q && i+1 < len(raw) && raw[i+1] == q:
			i++
		}
		b.WriteByte(c)
	}
	return b.String()
}

// bracket lexes a SQLite [identifier], which has no escapes.
func (l *sqlLexer) bracket() { l.closed(sqlQuoted, l.i+1, "]", '[') }

// closed emits the text from start up to end as one token and steps past
// end; without an end the rest of the text is the token, and bad.
func (l *sqlLexer) closed(kind sqlTokenKind, start int, end string, q byte) {
	n := strings.Index(l.s[start:], end)
	if n < 0 {
		l.bad = true
		l.emit(kind, l.s[start:], q)
		l.i = len(l.s)
		return
	}
	l.emit(kind, l.s[start:start+n], q)
	l.i = start + n + len(end)
}

// dollar lexes PostgreSQL's $1 parameters and $tag$ … $tag$ literals; any
// other $ is punctuation.
func (l *sqlLexer) dollar() {
	s, i := l.s, l.i
	j := i + 1
	if sqlIsDigit(l.at(j)) {
		for j < len(s) && sqlIsDigit(s[j]) {
			j++
		}
		l.emit(sqlParam, s[i:j], 0)
		l.i = j
		return
	}
	for j < len(s) && (sqlIsIdentStart(s[j]) || j > i+1 && sqlIsDigit(s[j])) {
		j++
	}
	if l.at(j) != '$' {
		l.emit(sqlPunct, "$", 0)
		l.i = i + 1
		return
	}
	l.closed(sqlString, j+1, s[i:j+1], '$')
}

// word lexes an unquoted identifier, or a literal prefix (E'…', N'…',
// X'…', B'…') with its literal; step lexes U&'…' and U&"…".
func (l *sqlLexer) word() {
	start := l.i
	l.i = sqlIdentEnd(l.s, l.i)
	w := l.s[start:l.i]
	next := l.at(l.i)
	switch {
	case next == '\'' && (w == "E" || w == "e") && l.d.escapeStrings:
		l.quoted(sqlString, '\'', true)
	case next == '\'' && len(w) == 1 && strings.Contains("NnXxBb", w):
		l.quoted(sqlString, '\'', l.d.stringBackslash)
	default:
		l.emit(sqlWord, w, 0)
	}
}

// number lexes digits with an optional fraction and exponent; letters
// after it start a new token.
func (l *sqlLexer) number() {
	s, j := l.s, l.i
	for j < len(s) && (sqlIsDigit(s[j]) || s[j] == '.') {
		j++
	}
	if j < len(s) && s[j]|0x20 == 'e' {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && sqlIsDigit(s[k]) {
			for j = k; j < len(s) && sqlIsDigit(s[j]); j++ {
			}
		}
	}
	l.emit(sqlNumber, s[l.i:j], 0)
	l.i = j
}

// Statement classes by first keyword; see sqlStmtRowAccess.
var (
	// sqlQuietStmts never touch rows, whatever words follow.
	sqlQuietStmts = sqlWordSet(`DROP COMMENT GRANT REVOKE LOCK PRAGMA`)
	// sqlGuardedStmts touch no rows unless they embed a query (MySQL's
	// SET @x = (SELECT …), DESCRIBE SELECT, which is EXPLAIN).
	sqlGuardedStmts = sqlWordSet(`ANALYZE VACUUM REINDEX CLUSTER COMMIT END ROLLBACK SAVEPOINT
		RELEASE SET RESET SHOW LISTEN NOTIFY DISCARD DEALLOCATE USE DESCRIBE DESC`)
	sqlQueryWords = sqlWordSet(`SELECT INSERT UPDATE DELETE MERGE TRUNCATE CALL EXECUTE`)
	// sqlTxnWords may follow BEGIN or START; anything else (MariaDB's
	// BEGIN NOT ATOMIC …) is a block that may run statements.
	sqlTxnWords = sqlWordSet(`TRANSACTION WORK DEFERRED IMMEDIATE EXCLUSIVE ISOLATION LEVEL READ
		WRITE ONLY COMMITTED UNCOMMITTED REPEATABLE SERIALIZABLE DEFERRABLE NOT WITH CONSISTENT SNAPSHOT`)
	// sqlPlainCreates create objects without reading rows unless a query
	// is embedded.
	sqlPlainCreates = sqlWordSet(`TABLE INDEX SEQUENCE VIEW SCHEMA TYPE EXTENSION DATABASE DOMAIN
		ROLE USER COLLATION TABLESPACE STATISTICS PUBLICATION`)
	// sqlBodyCreates create code that later runs on rows.
	sqlBodyCreates = sqlWordSet(`FUNCTION PROCEDURE TRIGGER RULE EVENT`)
	// sqlCreateKinds are the words naming what CREATE creates.
	sqlCreateKinds = sqlWordSet(`TABLE INDEX SEQUENCE VIEW SCHEMA TYPE EXTENSION DATABASE DOMAIN
		ROLE USER COLLATION TABLESPACE STATISTICS PUBLICATION FUNCTION PROCEDURE TRIGGER RULE EVENT
		MATERIALIZED SUBSCRIPTION POLICY`)
	sqlQueryStarts = sqlWordSet(`SELECT WITH VALUES TABLE EXECUTE`)
	sqlBodyStmts   = sqlWordSet(`DO EXECUTE EXEC PREPARE`)
	sqlDoWord      = sqlWordSet(`DO`)
	sqlSelectWord  = sqlWordSet(`SELECT`)
)

// sqlHead is the upper-cased first keyword of a statement and the tokens
// after it: "" for none, "?" for no word.
func sqlHead(st []sqlToken) (kw string, rest []sqlToken) {
	k := 0
	for k < len(st) && sqlIsPunct(st[k], '(') {
		k++
	}
	switch {
	case k == len(st) && k == 0:
		return "", nil
	case k == len(st) || st[k].kind != sqlWord:
		return "?", nil
	}
	return sqlKeyword(st[k]), st[k+1:]
}

// sqlStmtRowAccess says whether one statement may read or write rows:
// anything not known to be DDL, session or transaction control does.
func sqlStmtRowAccess(st []sqlToken) bool {
	kw, rest := sqlHead(st)
	switch {
	case kw == "":
		return false
	case kw == "CREATE":
		return sqlCreateRowAccess(rest)
	case kw == "BEGIN" || kw == "START":
		return !sqlOnly(rest, sqlTxnWords)
	case kw == "ALTER":
		return sqlHasAny(rest, sqlDoWord) // MySQL ALTER EVENT … DO <statement>
	case sqlQuietStmts[kw]:
		return false
	case sqlGuardedStmts[kw]:
		return sqlHasAny(rest, sqlQueryWords)
	}
	return true
}

// sqlCreateRowAccess says whether a CREATE (rest follows it) may touch rows:
// a table filled by a query, or code run later; a view does not.
func sqlCreateRowAccess(rest []sqlToken) bool {
	kind := sqlCreateKind(rest)
	switch {
	case kind == "VIEW":
		return false
	case kind == "TABLE":
		return sqlAsQuery(rest) || sqlHasAny(rest, sqlSelectWord)
	case sqlPlainCreates[kind]:
		return sqlHasAny(rest, sqlSelectWord)
	}
	return true
}

// sqlCreateKind is the first word naming an object kind, skipping
// modifiers (OR REPLACE, TEMP, UNIQUE, DEFINER = …); "" if none.
func sqlCreateKind(rest []sqlToken) string {
	for _, t := range rest {
		if k := sqlKeyword(t); sqlCreateKinds[k] {
			return k
		}
	}
	return ""
}

// sqlAsQuery reports an AS followed by a query outside parentheses, as in
// CREATE TABLE … AS SELECT, but not a generated column's AS (…).
func sqlAsQuery(toks []sqlToken) bool {
	depth := 0
	for i, t := range toks {
		switch {
		case sqlIsPunct(t, '('):
			depth++
		case sqlIsPunct(t, ')'):
			depth--
		case depth == 0 && sqlKeyword(t) == "AS" && i+1 < len(toks):
			if n := toks[i+1]; sqlIsPunct(n, '(') || sqlQueryStarts[sqlKeyword(n)] {
				return true
			}
		}
	}
	return false
}

// sqlHasAny reports an unquoted word of set among toks.
func sqlHasAny(toks []sqlToken, set map[string]bool) bool {
	for _, t := range toks {
		if set[sqlKeyword(t)] {
			return true
		}
	}
	return false
}

// sqlOnly reports that toks are words of set and commas.
func sqlOnly(toks []sqlToken, set map[string]bool) bool {
	for _, t := range toks {
		if !set[sqlKeyword(t)] && !sqlIsPunct(t, ',') {
			return false
		}
	}
	return true
}

// sqlIsBodyStmt reports statements whose literals may hold SQL that runs:
// DO, EXECUTE, PREPARE, CREATE FUNCTION and the like.
func sqlIsBodyStmt(st []sqlToken) bool {
	kw, rest := sqlHead(st)
	if kw == "CREATE" {
		return sqlBodyCreates[sqlCreateKind(rest)]
	}
	return sqlBodyStmts[kw]
}

// TableRefs counts, per canonical name, identifiers of sql that may name the
// table itself (not followed by '.', not in FOR UPDATE OF), the largest
// count of the readings: more than one is a further read.
func TableRefs(sql string, lockable func(ident string) (canonical string, ok bool)) map[string]int {
	out := map[string]int{}
	for _, p := range sqlTrusted(sqlPasses(sql)) {
		counts := map[string]int{}
		for _, st := range p.stmts {
			inOf := false
			for i, t := range st {
				if sqlKeyword(t) == "OF" {
					inOf = true
					continue
				}
				if !sqlIsIdent(t) {
					if !sqlIsPunct(t, ',') {
						inOf = false
					}
					continue
				}
				if inOf || i+1 < len(st) && sqlIsPunct(st[i+1], '.') {
					continue
				}
				if name, ok := lockable(t.text); ok {
					counts[name]++
				}
			}
		}
		for name, n := range counts {
			out[name] = max(out[name], n)
		}
	}
	return out
}

// sqlFaceKinds are what CREATE makes that reaches a table's rows under
// another name, or runs code on them later.
var sqlFaceKinds = sqlWordSet(`VIEW MATERIALIZED RULE TRIGGER FUNCTION PROCEDURE EVENT`)

// FaceDDL reports a statement in any reading of sql that gives a table
// another face (CREATE VIEW, RULE, TRIGGER, FUNCTION, …).
func FaceDDL(sql string) bool {
	return sqlAnyStatement(sql, func(st []sqlToken) bool {
		kw, rest := sqlHead(st)
		return kw == "CREATE" && sqlFaceKinds[sqlCreateKind(rest)]
	})
}

// RenameDDL reports ALTER TABLE … RENAME, RENAME TABLE, and
// PostgreSQL's ALTER TABLE … INHERIT, in any reading of sql that lexes.
func RenameDDL(sql string) bool {
	return sqlAnyStatement(sql, func(st []sqlToken) bool {
		kw, rest := sqlHead(st)
		return kw == "RENAME" || kw == "ALTER" && sqlHasAny(rest, sqlRenameWords)
	})
}

var sqlRenameWords = sqlWordSet(`RENAME INHERIT`)

// sqlAnyStatement reports whether some statement of some trusted reading
// of sql satisfies is.
func sqlAnyStatement(sql string, is func(st []sqlToken) bool) bool {
	for _, p := range sqlTrusted(sqlPasses(sql)) {
		for _, st := range p.stmts {
			if is(st) {
				return true
			}
		}
	}
	return false
}

// sqlDynamicFuncs read tables named in strings or run SQL built at run time.
var sqlDynamicFuncs = sqlWordSet(`QUERY_TO_XML QUERY_TO_XMLSCHEMA QUERY_TO_XML_AND_XMLSCHEMA
	TABLE_TO_XML TABLE_TO_XMLSCHEMA TABLE_TO_XML_AND_XMLSCHEMA
	SCHEMA_TO_XML SCHEMA_TO_XMLSCHEMA SCHEMA_TO_XML_AND_XMLSCHEMA
	DATABASE_TO_XML DATABASE_TO_XMLSCHEMA DATABASE_TO_XML_AND_XMLSCHEMA CURSOR_TO_XML
	DBLINK DBLINK_EXEC DBLINK_SEND_QUERY XPATH_TABLE CROSSTAB CROSSTAB2 CROSSTAB3 CROSSTAB4 CONNECTBY`)

// sqlBuildsSQL are the words that run SQL text: inside a PL/pgSQL body or a
// MySQL routine, EXECUTE and PREPARE run what they are given.
var sqlBuildsSQL = sqlWordSet(`EXECUTE PREPARE`)

// Dynamic reports SQL a static reading cannot bound, in any reading: a call
// of sqlDynamicFuncs, EXECUTE IMMEDIATE or PREPARE … FROM of anything but a
// literal, or a body (DO, CREATE FUNCTION…) that runs EXECUTE or PREPARE.
func Dynamic(sql string) bool { return sqlAnyStatement(sql, sqlDynamicStmt) }

func sqlDynamicStmt(st []sqlToken) bool {
	for i, t := range st {
		if sqlDynamicFuncs[sqlKeyword(t)] && i+1 < len(st) && sqlIsPunct(st[i+1], '(') {
			return true
		}
	}
	kw, rest := sqlHead(st)
	switch {
	case kw == "EXECUTE" && len(rest) > 0 && sqlKeyword(rest[0]) == "IMMEDIATE":
		return !(len(rest) == 2 && rest[1].kind == sqlString)
	case kw == "PREPARE":
		for i, t := range rest {
			if sqlKeyword(t) == "FROM" {
				return !(len(rest) == i+2 && rest[i+1].kind == sqlString)
			}
		}
		return true
	case kw == "DO" || kw == "CREATE" && sqlBodyCreates[sqlCreateKind(rest)]:
		return sqlBodyRunsSQL(rest)
	}
	return false
}

// sqlBodyRunsSQL reports EXECUTE or PREPARE among toks, or inside a string
// literal of them (a PL/pgSQL body is one), read in every dialect.
func sqlBodyRunsSQL(toks []sqlToken) bool {
	for _, t := range toks {
		if sqlBuildsSQL[sqlKeyword(t)] {
			return true
		}
		if t.kind == sqlString {
			for _, p := range sqlPasses(t.text) {
				for _, st := range p.stmts {
					if sqlHasAny(st, sqlBuildsSQL) {
						return true
					}
				}
			}
		}
	}
	return false
}
