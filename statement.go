package offlinelock

import (
	"database/sql"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"

	"github.com/offlinelock/offlinelock/internal/gormstmt"
	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"github.com/offlinelock/offlinelock/internal/sqlscan"
	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// target is one row the plugin must lock, and its model.
type target struct {
	k key
	m *model.Model
}

// joinPath is a Joins path (nested ones too: Joins("Seat.Desk")) that
// fills a struct of a model locked on load.
type joinPath struct {
	alias  string          // the joined table's alias in the query: Seat__Desk
	fields []*schema.Field // the relation fields from the loaded model down to it
	m      *model.Model
	table  string // the joined model's table: the resource of its locks
}

// lockableJoins are the statement's Joins paths that fill structs of models
// locked on load, at any depth, whatever the loaded model is.
func (p *Plugin) lockableJoins(db *gorm.DB) []joinPath {
	var out []joinPath
	gormstmt.EachJoin(db.Statement, func(alias string, fields []*schema.Field, s *schema.Schema) bool {
		if m := p.reg.ModelOf(s, db.NamingStrategy); m.Lockable && m.Root == nil && m.Err == nil && m.LocksOnLoad() {
			out = append(out, joinPath{alias: alias, fields: slices.Clone(fields), m: m, table: s.Table})
		}
		return true
	})
	return out
}

// joinsMember says whether a Joins path fills a struct of an aggregate
// member, whose SQL is then checked as the caller's (checkReadsOf).
func (p *Plugin) joinsMember(db *gorm.DB) bool {
	member := false
	gormstmt.EachJoin(db.Statement, func(_ string, _ []*schema.Field, s *schema.Schema) bool {
		member = p.reg.ModelOf(s, db.NamingStrategy).Root != nil
		return !member
	})
	return member
}

// locksRows says whether the statement's own rows are locked on load (its
// model may be there only for the lockable models it joins).
func locksRows(m *model.Model) bool { return m.Lockable && m.Root == nil && m.LocksOnLoad() }

// loadedTargets lists the rows a query put into its destination (its own
// and lockable Joins'; a member's roots not seen ahead); false when it
// holds something other than the model.
func (p *Plugin) loadedTargets(db *gorm.DB, m *model.Model, seen map[string]bool) ([]target, bool, error) {
	stmt := db.Statement
	if m.Root != nil {
		all, ok := m.RootLinks(stmt.Context, stmt.ReflectValue)
		var links []any
		for _, l := range all {
			if !seen[model.TextKey(l)] {
				links = append(links, l)
			}
		}
		if !ok || len(links) == 0 {
			return nil, ok, nil
		}
		roots, err := p.rootsOf(db, m, links)
		return roots, true, err
	}
	joins := p.lockableJoins(db)
	var out []target
	keyless := false
	ok := model.StructsOf(stmt.ReflectValue, m.Type, func(v reflect.Value) {
		if locksRows(m) {
			if k, _, ok := m.RowKey(stmt.Context, v); ok {
				out = append(out, target{k, m})
			} else {
				keyless = true // Select without the key: the rows cannot be told apart
			}
		}
		for _, jp := range joins {
			e, ok := v, true
			for _, f := range jp.fields { // ReflectValueOf follows embedded pointers
				if e = f.ReflectValueOf(stmt.Context, e); e.Kind() == reflect.Pointer {
					if e.IsNil() {
						ok = false
						break
					}
					e = e.Elem()
				}
			}
			if ok {
				model.StructsOf(e, jp.m.Type, func(e reflect.Value) {
					if k, _, ok := jp.m.RowKey(stmt.Context, e); ok {
						out = append(out, target{k, jp.m})
					}
				})
			}
		}
	})
	if keyless && db.RowsAffected > 0 {
		return nil, false, nil
	}
	return out, ok, nil
}

// preselect finds the keys of the rows the statement will read or write
// (its own and lockable Joins'); forUpdate row-locks them for a write.
func (p *Plugin) preselect(db *gorm.DB, m *model.Model, forUpdate bool) ([]target, error) {
	type part struct {
		m     *model.Model
		table string // the table's name in the query (a join's alias)
		res   string // the resource of its keys
	}
	var parts []part
	if forUpdate || locksRows(m) { // a write checks its own rows whatever the mode
		parts = append(parts, part{m, clause.CurrentTable, m.Table})
	}
	if !forUpdate {
		for _, jp := range p.lockableJoins(db) {
			parts = append(parts, part{jp.m, jp.alias, jp.table})
		}
	}
	if len(parts) == 0 {
		return nil, nil
	}
	var cols []clause.Column
	for _, pt := range parts {
		for _, f := range pt.m.PK {
			cols = append(cols, clause.Column{Table: pt.table, Name: f.DBName})
		}
	}
	q := p.keySelect(db, cols, forUpdate)
	var out []target
	// One row's values and texts, reused from row to row.
	vals, ptrs := make([]any, len(cols)), make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var texts []string
	_, err := direct(db).Query(q.SQL.String(), q.Vars, func(r *sql.Rows) error {
		clear(vals)
		if err := r.Scan(ptrs...); err != nil {
			return err
		}
		i := 0
		for _, pt := range parts {
			texts = slices.Grow(texts[:0], len(pt.m.PK))[:len(pt.m.PK)]
			null := false
			for j := range pt.m.PK {
				if vals[i] == nil {
					null = true
				} else {
					texts[j] = pt.m.IDText(j, vals[i])
				}
				i++
			}
			if !null { // a LEFT JOIN that found nothing
				out = append(out, target{key{Resource: pt.res, ID: model.EncodeKey(texts)}, pt.m})
			}
		}
		return nil
	})
	return out, err
}

// preselectLinks is preselect for a member: the links to its rows' roots.
func (p *Plugin) preselectLinks(db *gorm.DB, m *model.Model, forUpdate bool) ([]any, error) {
	q := p.keySelect(db, []clause.Column{{Table: clause.CurrentTable, Name: m.Root.Field.DBName}}, forUpdate)
	sqlText := q.SQL.String()
	if !forUpdate {
		// Many members share few roots: send each root key once.
		sqlText = lockstore.DistinctKeys(db.Statement.Quote(m.Root.Field.DBName), sqlText)
	}
	rows, err := rowsOf(db, sqlText, q.Vars, 1)
	var out []any
	for _, r := range rows {
		out = append(out, r[0])
	}
	return out, err
}

// keySelect builds SELECT cols with the statement's FROM, JOINs, WHERE,
// ORDER and LIMIT; forUpdate makes it a write's locking SELECT.
func (p *Plugin) keySelect(db *gorm.DB, cols []clause.Column, forUpdate bool) *gorm.Statement {
	if !forUpdate {
		return gormstmt.KeySelect(db, cols, nil)
	}
	caps := p.rowLocking(db)
	return gormstmt.KeySelect(db, cols, &caps)
}

// existing returns which of rows exist in table.
func (p *Plugin) existing(db *gorm.DB, m *model.Model, table string, rows []pkRow) (map[key]bool, error) {
	out := map[key]bool{}
	if len(rows) == 0 {
		return out, nil
	}
	stmt := db.Statement
	cols := make([]string, len(m.PK))
	for i, f := range m.PK {
		cols[i] = stmt.Quote(f.DBName)
	}
	byText := map[string]key{}
	widths := make([]int, len(rows))
	var args []any
	for i, r := range rows {
		widths[i] = len(r.vals)
		args = append(args, r.vals...)
		byText[r.k.ID] = r.k
	}
	q, args := gormstmt.Bind(db, lockstore.ExistingKeys(stmt.Quote(table), cols, widths), args)
	_, err := direct(db).Query(q, args, func(r *sql.Rows) error {
		vals, err := scanValues(r, len(cols))
		if err != nil {
			return err
		}
		texts := make([]string, len(vals))
		for i, v := range vals {
			texts[i] = m.IDText(i, v)
		}
		if k, ok := byText[model.EncodeKey(texts)]; ok {
			out[k] = true
		}
		return nil
	})
	return out, err
}

// rowsOf runs the query q, leaving out rows with a NULL (no key).
func rowsOf(db *gorm.DB, q string, vars []any, n int) ([][]any, error) {
	var out [][]any
	_, err := direct(db).Query(q, vars, func(r *sql.Rows) error {
		vals, err := scanValues(r, n)
		if err == nil && !slices.Contains(vals, nil) {
			out = append(out, vals)
		}
		return err
	})
	return out, err
}

// scanValues reads the n columns of the current row as driver values.
func scanValues(r *sql.Rows, n int) ([]any, error) {
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	return vals, r.Scan(ptrs...)
}

// lockRows says whether the plugin's reads of the application's rows must
// lock them until the transaction ends (lockStore.rowLocks).
func (p *Plugin) lockRows(db *gorm.DB) bool {
	t, err := p.storeFor(db)
	return err == nil && t.RowLocks()
}

// rowLocking is what db's database can do with row locks.
func (p *Plugin) rowLocking(db *gorm.DB) lockstore.Traits {
	t, err := p.storeFor(db)
	if err != nil {
		return lockstore.Traits{}
	}
	return t.caps
}

// lockableName is the lockable model named ident, for mentions (the
// refusals: docs/fail-closed.md).
func (p *Plugin) lockableName(ident string) (string, bool) {
	if m := p.reg.TableModel(ident); m != nil {
		return m.Table, true
	}
	if len(ident) >= pgNameLen { // PostgreSQL truncates identifiers to 63 bytes
		for _, m := range p.reg.Lockable() {
			if len(m.Table) >= pgNameLen && strings.EqualFold(m.Table[:pgNameLen], ident[:pgNameLen]) {
				return m.Table, true
			}
		}
	}
	return "", false
}

// pgNameLen is PostgreSQL's identifier length (NAMEDATALEN - 1 bytes).
const pgNameLen = 63

// namedModels are the lockable models whose tables sql names as
// identifiers (not in literals or comments).
func (p *Plugin) namedModels(sql string) []*model.Model {
	var out []*model.Model
	for _, name := range sqlscan.Mentions(sql, p.lockableName) {
		if m := p.reg.TableModel(name); m != nil {
			out = append(out, m)
		}
	}
	return out
}

// readsLocked returns the first model in ms whose rows need a lock to be
// read (its mode, or its root's, locks on load), other than those covered.
func (p *Plugin) readsLocked(ms []*model.Model, covered func(*model.Model) bool) *model.Model {
	for _, m := range ms {
		if covered != nil && covered(m) {
			continue
		}
		if err := p.reg.Resolve(m); err != nil || m.LocksOnLoad() {
			return m
		}
	}
	return nil
}

// readsDynamically refuses a raw read of dynamic SQL while some lockable
// table is locked on load. It reports whether it did.
func (p *Plugin) readsDynamically(db *gorm.DB, sql string) bool {
	for _, m := range p.reg.Lockable() {
		if p.reg.Resolve(m) != nil || m.LocksOnLoad() {
			if !sqlscan.Dynamic(sql) || p.bypassed(db, opRawQuery) {
				return false
			}
			db.AddError(unenforceable(m.Table, "a raw read of dynamic SQL (EXECUTE of built text, a function that reads a table named in a string) may read, without its locks, lockable table"))
			return true
		}
	}
	return false
}

// querySQL is the SQL the statement will send, built on a copy; "" when it
// cannot name a table locked on load.
func (p *Plugin) querySQL(db *gorm.DB) string {
	if !gormstmt.MayName(db.Statement, p.reg.LockedOnLoad()) && !p.joinsMember(db) { // a Joins names its association, not its table
		return ""
	}
	if db.Statement.SQL.Len() > 0 {
		return db.Statement.SQL.String()
	}
	tx := db.Session(&gorm.Session{Context: db.Statement.Context})
	tx.Statement.DB = tx
	tx.Statement.BuildClauses = db.Statement.BuildClauses
	tx.Statement.SQL.Reset()
	tx.Statement.Vars = nil
	callbacks.BuildQuerySQL(tx)
	return tx.Statement.SQL.String()
}

// checkReadsOf refuses a load whose SQL reads a table locked on load
// beyond own and the lockable Joins, which the plugin locks.
func (p *Plugin) checkReadsOf(db *gorm.DB, sql string, own *model.Model) error {
	if sql == "" {
		return nil
	}
	covered := map[string]int{} // by table: two Go types may share one
	if own != nil {
		covered[strings.ToLower(own.Table)]++
		for _, jp := range p.lockableJoins(db) {
			covered[strings.ToLower(jp.table)]++
		}
	}
	refs := sqlscan.TableRefs(sql, p.lockableName)
	bad := p.readsLocked(p.namedModels(sql), func(m *model.Model) bool {
		name := strings.ToLower(m.Table)
		return covered[name] > 0 && refs[m.Table] <= covered[name]
	})
	if bad == nil || p.fromMigrator() {
		return nil
	}
	if bad.Root != nil && p.joinsMember(db) {
		return unenforceable(bad.Table, "a Joins of an aggregate member would read it without its root's lock (Preload loads members through their own model, which locks the root), lockable table")
	}
	return unenforceable(bad.Table, "the statement reads, beyond the rows the plugin locks (a raw JOIN, a self-join, a subquery, a joined member), lockable table")
}

// fromMigrator says whether GORM's migrator sent the statement:
// introspection, or a SQLite table rebuild copying rows unchanged.
func (p *Plugin) fromMigrator() bool {
	var pcs [48]uintptr
	n := runtime.Callers(3, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "gorm.io/") &&
			(strings.Contains(f.Function, "/migrator.") || strings.Contains(f.Function, ".Migrator.")) {
			return true
		}
		if !more {
			return false
		}
	}
}

// refuseViews refuses, Strict or not, DDL that makes a view, rule, trigger
// or function over a lockable table (its rows under another name), and
// under Strict a rename or INHERIT of one. Bypass lets it through.

func (p *Plugin) refuseViews(db *gorm.DB) {
	sql := db.Statement.SQL.String()
	face := sqlscan.FaceDDL(sql)
	rename := !face && p.cfg.Strict && !p.fromMigrator() && sqlscan.RenameDDL(sql)
	if !face && !rename {
		return
	}
	if named := p.namedModels(sql); len(named) > 0 && !p.bypassed(db, opExec) {
		if face {
			db.AddError(unenforceable(named[0].Table, "a view, rule, trigger or function would reach the rows of lockable table"))
		} else {
			db.AddError(fmt.Errorf("%w: exec renames or re-parents lockable table %s (ALTER TABLE … RENAME, RENAME TABLE, INHERIT); run it as a migration or under offlinelock.Bypass", ErrStrict, named[0].Table))
		}
	}
}
