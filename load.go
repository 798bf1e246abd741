package offlinelock

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"github.com/offlinelock/offlinelock/internal/sqlscan"
	"github.com/offlinelock/offlinelock/internal/telemetry"
)

// maxRereads bounds how often a load re-reads because rows it had not
// foreseen turned up; each round locks them first.
const maxRereads = 3

// beforeQuery locks, before gorm:query reads anything, the rows the query
// will return: the keys its WHERE names, or those a key-only SELECT with
// the same FROM, JOINs, WHERE, ORDER and LIMIT finds. Locks are taken before
// the read, so a write committed before the lock was granted is in what the
// caller gets; and when a lock is refused nothing is read at all.
func (b *binding) beforeQuery(db *gorm.DB) {
	p := b.p
	if _, otel := db.Config.Plugins[telemetry.OtelGORM]; otel && p.spans {
		p.tel.TraceStatement(db)
	}
	if db.Error != nil || db.DryRun {
		return
	}
	if ctx := db.Statement.Context; ctx != nil && ctx.Value(bypassKey{}) != nil && p.bypassed(db, opLoad) {
		return
	}
	b.freshCatalog(db)
	if db.Statement.SQL.Len() > 0 {
		b.beforeRawQuery(db)
		return
	}
	// isCount only for a destination that is a number at all
	if k := db.Statement.ReflectValue.Kind(); k >= reflect.Int && k <= reflect.Float64 && isCount(db.Statement) {
		return // a count reveals no row
	}
	if db.Statement.TableExpr != nil && b.fromSubquery(db) {
		return
	}
	st := b.enterRead(db, opLoad)
	if db.Error != nil {
		return
	}
	// no SQL text of the caller's, and no joined member: reads only what the plugin locks
	gormOnly := generated(db.Statement) && (len(db.Statement.Joins) == 0 || !p.joinsMember(db))
	if st == nil {
		if !gormOnly {
			if err := p.checkReadsOf(db, p.querySQL(db), nil); err != nil {
				db.AddError(err)
				return
			}
		}
		p.guardPreloads(db)
		return
	}
	if refuseVolatileLimit(db, st) || st.m.Root != nil && p.refuseMemberJoins(db, st) {
		return
	}
	if st.caps.Guard != nil { // else no guard governs (SQLite): checkGuarded has nothing to ask
		if err := b.guard.Check(db, st.m.LockResource()); err != nil {
			st.fail(db, err) // no guard, no grant (coverage.go)
			return
		}
	}
	st.restore = snapshot(db.Statement.ReflectValue)
	st.locked, st.newly = map[key]bool{}, map[key]bool{}
	if !gormOnly {
		if err := p.checkReadsOf(db, p.querySQL(db), st.m); err != nil {
			st.fail(db, err)
			return
		}
	}
	if !p.loadByKey(db, st) {
		callbacks.BuildQuerySQL(db)
	}
	if db.Error != nil {
		return
	}
	if st.fast == fastNone {
		p.lockInTx(db, st, false)
	}
}

// enterRead starts a read's state, on the primary when a read router chose
// a replica (primary.go): for the statement's model, or for a lockable
// model it joins. It is nil for a read of nothing lockable, or when the
// statement failed (db.Error says which).
func (b *binding) enterRead(db *gorm.DB, op opKind) *state {
	if db.Statement.ConnPool != db.Config.ConnPool {
		b.p.loadOnPrimary(db, b.p.statementModel(db))
	}
	st := b.enter(db, op, true)
	if st == nil && db.Error == nil {
		if st = b.enterJoins(db, op); st != nil {
			routeToPrimary(db)
		}
	}
	return st
}

// fromSubquery takes the load GORM's generics Preload with LimitPerRecord
// makes of a model locked on load: Table("(?) t", inner), where inner
// selects the model's own rows (all columns, or columns of its own) with
// ROW_NUMBER() OVER (PARTITION BY …) and the outer WHERE keeps the first n.
// Its rows cannot be read ahead, so it is read as the same statement in
// raw SQL would be (beforeRawQuery): the rows it returns locked once read,
// and read again; a WHERE or ORDER BY naming another table locked on load,
// or the model's table again, is refused there. Any other subquery as the
// table stays refused (a computed key column would lock other rows than
// the ones it shows).
func (b *binding) fromSubquery(db *gorm.DB) bool {
	p := b.p
	stmt := db.Statement
	if !limitPerRecord(stmt) {
		return false
	}
	if m := p.reg.ModelOf(stmt.Schema, db.NamingStrategy); !locksRows(m) {
		return false
	}
	callbacks.BuildQuerySQL(db)
	stmt.TableExpr = nil // built: the model is the destination's own (statementModel)
	if db.Error == nil {
		b.rawQuery(db, true)
	}
	return true
}

// modelType is the struct type of a model value: *T, []T, *[]*T, ….
func modelType(v any) reflect.Type {
	t := reflect.TypeOf(v)
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		t = t.Elem()
	}
	return t
}

// limitPerRecord says whether stmt is exactly the load LimitPerRecord
// builds (gorm's generics.go).
func limitPerRecord(stmt *gorm.Statement) bool {
	te := stmt.TableExpr
	if te == nil || te.SQL != "(?) t" || len(te.Vars) != 1 || stmt.Schema == nil || len(stmt.Selects) > 0 || len(stmt.Joins) > 0 || len(stmt.Clauses) != 1 {
		return false
	}
	inner, ok := te.Vars[0].(*gorm.DB)
	if !ok || inner.Statement.SQL.Len() > 0 || inner.Statement.TableExpr != nil || len(inner.Statement.Joins) > 0 ||
		modelType(inner.Statement.Model) != stmt.Schema.ModelType || inner.Statement.Table != "" && inner.Statement.Table != stmt.Schema.Table {
		return false
	}
	for _, c := range inner.Statement.Selects {
		if stmt.Schema.LookUpField(c) == nil {
			return false // a column of its own, or nothing
		}
	}
	sel, ok := inner.Statement.Clauses["SELECT"].Expression.(clause.CommaExpression)
	if !ok || len(sel.Exprs) < 2 {
		return false
	}
	rnn, ok := sel.Exprs[len(sel.Exprs)-1].(clause.Expr)
	if !ok || rnn.SQL != "ROW_NUMBER() OVER (PARTITION BY ? ?) AS ?" {
		return false
	}
	for _, e := range sel.Exprs[:len(sel.Exprs)-1] {
		if x, ok := e.(clause.Expr); !ok || x.SQL != "*" && x.SQL != "?" {
			return false
		}
	}
	for name := range inner.Statement.Clauses {
		if name != "SELECT" && name != "WHERE" && name != "ORDER BY" {
			return false
		}
	}
	where, ok := stmt.Clauses["WHERE"].Expression.(clause.Where)
	return ok && len(where.Exprs) == 1
}

// beforeRawQuery is beforeQuery for Raw(…).Find/Scan/First. Rows of the
// destination's own lockable model are locked once read, and read again;
// any other read of a table locked on load, and any raw write to a
// lockable table, is refused: the plugin cannot see its rows.
func (b *binding) beforeRawQuery(db *gorm.DB) { b.rawQuery(db, false) }

// rawQuery is beforeRawQuery; vetted says the statement is one the plugin
// has read as returning its model's rows under their own keys
// (limitPerRecord), which the raw SQL check would refuse for its window
// function.
func (b *binding) rawQuery(db *gorm.DB, vetted bool) {
	p := b.p
	sql := db.Statement.SQL.String()
	named := p.namedModels(sql)
	if p.readsDynamically(db, sql) {
		return
	}
	if len(named) == 0 {
		return
	}
	if p.strict(db, opRawQuery) {
		return
	}
	for _, m := range named {
		p.loadOnPrimary(db, m)
	}
	if !plainSelect(sql) {
		db.AddError(unenforceable(named[0].Table, "a raw statement that may write runs through Find/Scan/Rows on lockable table"))
		return
	}
	m := p.statementModel(db)
	own := m != nil && m.Type != nil && locksRows(m) && model.StructsOf(db.Statement.ReflectValue, m.Type, func(reflect.Value) {})
	refs := sqlscan.TableRefs(sql, p.lockableName)
	// Rows of the own table read once are seen in the destination; a
	// second reference (a self-join, a UNION, a subquery) is not.
	if bad := p.readsLocked(named, func(x *model.Model) bool { return own && strings.EqualFold(x.Table, m.Table) && refs[x.Table] <= 1 }); bad != nil {
		db.AddError(unenforceable(bad.Table, "a raw SELECT whose rows the plugin cannot see reads lockable table"))
		return
	}
	if !own {
		return
	}
	// Its rows are locked by the keys they carry: a key computed, renamed
	// or taken from another row would lock one record and show another.
	if !vetted && !sqlscan.KeysAsStored(sql, m.Table, keyColumns(m)) {
		db.AddError(unenforceable(m.Table, "a raw SELECT whose rows may not carry their own primary key (a computed, renamed or aggregated key column, a set operation, or a function or subquery among its columns) reads lockable table"))
		return
	}
	st := b.start(db, m, opLoad)
	if st == nil {
		return
	}
	st.restore = snapshot(db.Statement.ReflectValue)
	st.locked, st.newly, st.raw = map[key]bool{}, map[key]bool{}, true
	p.lockInTx(db, st, true)
}

// lockInTx is the general path of a load: in a transaction (the caller's,
// or the plugin's own until the chain ends) it locks the rows ahead of the
// read. Raw SQL cannot be read ahead: its rows are locked once read, and
// read again. Outside a transaction a load locks by its query
// (loadByQuery).
func (p *Plugin) lockInTx(db *gorm.DB, st *state, raw bool) {
	_, inTx := db.Statement.ConnPool.(gorm.TxCommitter)
	if !raw && !inTx && len(db.Statement.Preloads) == 0 && !p.deepMember(st.m) {
		p.loadByQuery(db, st)
		return
	}
	// In the caller's transaction a savepoint undoes this load's new locks
	// when a later batch (or a preload) is refused.
	if err := st.begin(db, true); err != nil {
		st.fail(db, err)
		return
	}
	if !raw {
		p.lockAhead(db, st)
	}
}

// loadByQuery locks, outside any transaction, the rows a load's query
// will read, in the fewest statements the store allows: found and locked
// in one statement where the store can (Traits.QueryLoad 2, Loader's
// FindAndLock), or found by a key-only SELECT and then granted. A load
// whose rows all belong to one record or root needs no transaction: its
// lock is one atomic statement, committed before the read, which then sees
// everything committed before the lock. (If the read turns up rows it has
// to lock too and one is refused, endStatement gives the new lock back.)
func (p *Plugin) loadByQuery(db *gorm.DB, st *state) {
	if _, known := knownKeys(db.Statement, st.m); !known && st.caps.QueryLoad == 2 && p.findAndLock(db, st) {
		return
	}
	targets, ok := p.aheadTargets(db, st)
	if !ok {
		return
	}
	if oneKey(targets) {
		st.detached = true
		p.lockTargets(db, st, targets)
		return
	}
	if err := st.begin(db, true); err != nil {
		st.fail(db, err)
		return
	}
	p.lockTargets(db, st, targets)
}

// deepMember says whether m is a member more than one level below its
// root: finding its root reads the parents, which must happen in the same
// transaction as the lock (row-locked), so that no parent moves between.
func (p *Plugin) deepMember(m *model.Model) bool {
	if m.Root == nil {
		return false
	}
	return len(m.Chain()) > 1
}

// oneKey says whether targets name one key at most.
func oneKey(targets []target) bool {
	for _, t := range targets {
		if t.k != targets[0].k {
			return false
		}
	}
	return true
}

// refuseMemberJoins refuses a load of aggregate members that joins a
// model locked on load (Joins("Desk") from a line): a member's load locks
// its roots, not what it joins. It reports whether it refused. Preload
// loads the joined model through its own load, which locks it.
func (p *Plugin) refuseMemberJoins(db *gorm.DB, st *state) bool {
	joins := p.lockableJoins(db)
	if len(joins) == 0 {
		return false
	}
	st.fail(db, unenforceable(joins[0].table, "a load of aggregate member "+st.m.Table+" locks its roots, not the rows it joins (use Preload, which locks them), of lockable table"))
	return true
}

// enterJoins is enter for a load whose own model is not locked on load but
// that joins one that is (Joins("Desk"), Joins("Seat.Desk")): the joined
// rows are locked like any other.
func (b *binding) enterJoins(db *gorm.DB, op opKind) *state {
	p := b.p
	if db.Error != nil || db.DryRun || db.Statement.Schema == nil || len(db.Statement.Joins) == 0 ||
		db.Statement.SQL.Len() > 0 || len(p.lockableJoins(db)) == 0 {
		return nil
	}
	m := p.reg.ModelOf(db.Statement.Schema, db.NamingStrategy)
	if m.Root != nil || p.bypassed(db, op) {
		return nil
	}
	return b.start(db, m, op)
}

// guardPreloads makes a load of a model that is not locked on load, but
// preloads one that is, all or nothing: a refused preload rolls back the
// locks its siblings took and leaves the destination as it was.
func (p *Plugin) guardPreloads(db *gorm.DB) {
	if db.Error != nil || db.DryRun || len(db.Statement.Preloads) == 0 || db.Statement.Schema == nil {
		return
	}
	if _, ok := bypassFrom(db.Statement.Context); ok || !p.preloadsLockable(db, db.Statement.Schema, db.Statement.Preloads) {
		return
	}
	st := &state{bulk: -1, restore: snapshot(db.Statement.ReflectValue)}
	if err := st.begin(db, true); err != nil {
		st.fail(db, err)
		return
	}
	setState(db, st)
}

// preloadsLockable says whether any model along the preload paths is
// locked on load.
func (p *Plugin) preloadsLockable(db *gorm.DB, s *schema.Schema, preloads map[string][]any) bool {
	for path := range preloads {
		cur := s
		for _, name := range strings.Split(path, ".") {
			if name == clause.Associations {
				for _, rel := range cur.Relationships.Relations {
					if rel.FieldSchema != nil && p.locksOnLoadSchema(db, rel.FieldSchema) {
						return true
					}
				}
				break
			}
			rel, ok := cur.Relationships.Relations[name]
			if !ok || rel.FieldSchema == nil {
				break
			}
			cur = rel.FieldSchema
			if p.locksOnLoadSchema(db, cur) {
				return true
			}
		}
	}
	return false
}

// locksOnLoadSchema says whether loading s's model takes locks (or fails
// on a bad tag).
func (p *Plugin) locksOnLoadSchema(db *gorm.DB, s *schema.Schema) bool {
	m := p.reg.ModelOf(s, db.NamingStrategy)
	return m.Lockable && (p.reg.Resolve(m) != nil || m.LocksOnLoad())
}

// lockAhead locks the rows the statement will read, before it reads them.
func (p *Plugin) lockAhead(db *gorm.DB, st *state) {
	if targets, ok := p.aheadTargets(db, st); ok {
		p.lockTargets(db, st, targets)
	}
}

// aheadTargets finds the rows (or roots) a load will read, before it reads
// them. It reports false when it failed.
func (p *Plugin) aheadTargets(db *gorm.DB, st *state) ([]target, bool) {
	var targets []target
	if st.m.Root != nil {
		links, err := p.preselectLinks(db, st.m, false)
		if err == nil {
			targets, err = p.rootsOf(db, st.m, links)
		}
		st.links = map[string]bool{}
		for _, l := range links {
			st.links[model.TextKey(l)] = true
		}
		if err != nil {
			st.fail(db, err)
			return nil, false
		}
	} else if keys, ok := knownKeys(db.Statement, st.m); ok && len(p.lockableJoins(db)) == 0 {
		st.known = keys
		for _, k := range keys {
			targets = append(targets, target{k, st.m})
		}
	} else if !st.raw {
		// Table("accounts AS a") too: the key-only SELECT has the same
		// FROM, so the alias names the same rows.
		var err error
		if targets, err = p.preselect(db, st.m, false); err != nil {
			st.fail(db, err)
			return nil, false
		}
	}
	return targets, true
}

// lockTargets locks targets for the statement's owner, each under its
// model's mode and TTL, all or nothing.
func (p *Plugin) lockTargets(db *gorm.DB, st *state, targets []target) bool {
	type group struct {
		access Access
		m      *model.Model
	}
	groups := map[group][]key{}
	for _, tg := range targets {
		if !st.locked[tg.k] {
			g := group{loadAccess(tg.m), tg.m}
			groups[g] = append(groups[g], tg.k)
		}
	}
	order := make([]group, 0, len(groups))
	for g := range groups {
		order = append(order, g)
	}
	if len(st.locked) == 0 && len(targets) > 8 {
		// A large load: the maps grow once, not key by key.
		st.locked, st.newly = make(map[key]bool, len(targets)), make(map[key]bool, len(targets))
	}
	// Groups in table order, keys sorted in each: one order for all.
	slices.SortFunc(order, func(a, b group) int { return strings.Compare(a.m.Table, b.m.Table) })
	for _, g := range order {
		keys := groups[g]
		ttl, err := p.ttlFor(db, g.m)
		var got map[key]granted
		if err == nil {
			got, err = p.acquireMany(db, st.t.direct(db), st.t, keys, st.owner, g.access, ttl)
		}
		if err != nil {
			st.fail(db, err)
			return false
		}
		for _, k := range keys {
			st.locked[k] = true
			// The fast path's grant, committed before this one saw the
			// lock as the session's, is fresh too: the table has its hash.
			st.newly[k] = got[k].Fresh || (st.fastTok != "" && k == st.fastKey && got[k].Hash == lockstore.TokenHash(st.fastTok))
		}
	}
	return true
}

// afterQuery makes sure every row that reached the destination is locked:
// rows the statement did not foresee (Raw SQL, a row that began to match)
// are locked now and the query runs again, so that what the caller gets is
// never older than its lock.
func (b *binding) afterQuery(db *gorm.DB) {
	p := b.p
	st := statementState(db.Statement)
	if p.spans && (st == nil || !st.noSpans) {
		telemetry.AdoptSpan(db)
	}
	if st == nil || st.locked == nil {
		return
	}
	if st.prepared {
		unpreparedPool(db, st)
	}
	if st.fast != fastNone {
		if ok, fellBack := p.fastDone(db, st); !ok || !fellBack {
			// The fast path's row is its key's, which it holds: the
			// statement's WHERE pinned it (fastDone).
			return
		}
	}
	if db.Error != nil && !errors.Is(db.Error, gorm.ErrRecordNotFound) {
		return
	}
	for round := 0; ; round++ {
		loaded, more := p.readTargets(db, st)
		if !more {
			return
		}
		var extra []target
		for _, tg := range loaded {
			if !st.locked[tg.k] {
				extra = append(extra, tg)
			}
		}
		if len(extra) == 0 {
			return
		}
		if round == maxRereads {
			st.fail(db, fmt.Errorf("offlinelock: the rows of %s kept changing while they were being locked; try again", db.Statement.Table))
			return
		}
		if !p.lockTargets(db, st, extra) {
			return
		}
		if !reread(db, st) {
			return
		}
	}
}

// readTargets are the records the query read, for afterQuery to check
// against what it locked; more is false when there is nothing to check
// (or the statement failed).
func (p *Plugin) readTargets(db *gorm.DB, st *state) (loaded []target, more bool) {
	loaded, ok, err := p.loadedTargets(db, st.m, st.links)
	if err != nil {
		st.fail(db, err)
		return nil, false
	}
	if !ok {
		// Not the model itself (Pluck, a DTO, rows without their key):
		// the plugin cannot see what was read, so it looks again for rows
		// that began to match while the first ones were being locked. A
		// WHERE on keys pins the rows. Raw SQL cannot be looked at again.
		if st.raw {
			st.fail(db, unenforceable(st.m.Table, "a raw SELECT read rows without their primary key from lockable table"))
			return nil, false
		}
		if st.known != nil {
			return nil, false
		}
		if loaded, ok = p.aheadTargets(db, st); !ok {
			return nil, false
		}
	} else {
		p.releasePhantoms(db, st, loaded)
	}
	return loaded, true
}

// reread runs the statement's query again into its destination, as
// gorm:query does, from the destination as it was (GORM appends to some
// destinations, such as slices of maps).
func reread(db *gorm.DB, st *state) bool {
	if st.restore != nil {
		st.restore()
	}
	rows, err := db.Statement.ConnPool.QueryContext(db.Statement.Context, db.Statement.SQL.String(), db.Statement.Vars...)
	if err != nil {
		db.AddError(err)
		return false
	}
	defer func() { db.AddError(rows.Close()) }()
	db.RowsAffected = 0
	gorm.Scan(rows, db, 0)
	if db.Statement.Result != nil {
		db.Statement.Result.RowsAffected = db.RowsAffected
	}
	return db.Error == nil || errors.Is(db.Error, gorm.ErrRecordNotFound)
}

// beforeRow locks the rows that Rows, Row or Scan on a model will return.
// The caller reads them after the chain has ended, so the locks are
// committed first (or taken in the caller's transaction).
func (b *binding) beforeRow(db *gorm.DB) {
	p := b.p
	if p.spans {
		p.tel.TraceStatement(db)
	}
	if db.Error != nil || db.DryRun || p.bypassed(db, opRows) {
		return
	}
	b.freshCatalog(db)
	if db.Statement.SQL.Len() > 0 {
		p.beforeRawRows(db)
		return
	}
	if db.Statement.Schema == nil && p.fromMigrator() {
		return // the migrator reads one row of a table for its column types
	}
	st := b.enterRead(db, opRows)
	if db.Error != nil {
		return
	}
	gormOnly := generated(db.Statement) && (len(db.Statement.Joins) == 0 || !p.joinsMember(db))
	if st == nil {
		if !gormOnly {
			if err := p.checkReadsOf(db, p.querySQL(db), nil); err != nil {
				db.AddError(err)
			}
		}
		return
	}
	if refuseVolatileLimit(db, st) || st.m.Root != nil && p.refuseMemberJoins(db, st) {
		return
	}
	if err := b.guard.Check(db, st.m.LockResource()); err != nil {
		st.fail(db, err) // no guard, no grant (coverage.go)
		return
	}
	st.locked, st.newly = map[key]bool{}, map[key]bool{}
	callbacks.BuildQuerySQL(db)
	if db.Error != nil {
		return
	}
	if !gormOnly {
		if err := p.checkReadsOf(db, db.Statement.SQL.String(), st.m); err != nil {
			st.fail(db, err)
			return
		}
	}
	p.settleAhead(db, st)
}

// settleAhead locks the rows before the query runs: the caller reads them
// after the chain, so the locks are settled here. Outside a transaction a
// refusal gives back what this statement took (endStatement); inside one,
// a savepoint undoes it now.
func (p *Plugin) settleAhead(db *gorm.DB, st *state) {
	if _, inTx := db.Statement.ConnPool.(gorm.TxCommitter); !inTx {
		st.detached = true
		p.lockAhead(db, st)
		return
	}
	if err := direct(db).Savepoint(lockstore.SavepointName); err != nil {
		st.fail(db, err)
		return
	}
	p.lockAhead(db, st)
	closeSavepoint(db, lockstore.SavepointName)
}

// beforeRawRows is beforeRow for Raw(…).Rows/Row/Scan: the caller reads
// the rows after the chain, so the plugin can never see them; a raw read of
// a table locked on load is refused, and so is any raw write to a lockable
// table.
func (p *Plugin) beforeRawRows(db *gorm.DB) {
	sql := db.Statement.SQL.String()
	named := p.namedModels(sql)
	if p.readsDynamically(db, sql) {
		return
	}
	if len(named) == 0 || p.strict(db, opRawQuery) {
		return
	}
	for _, m := range named {
		p.loadOnPrimary(db, m)
	}
	if !plainSelect(sql) {
		db.AddError(unenforceable(named[0].Table, "a raw statement that may write runs through Rows/Row/Scan on lockable table"))
		return
	}
	if bad := p.readsLocked(named, nil); bad != nil {
		db.AddError(unenforceable(bad.Table, "a raw SELECT whose rows the plugin cannot see reads lockable table"))
	}
}

// keyColumns are m's primary key columns.
func keyColumns(m *model.Model) []string {
	out := make([]string, len(m.PK))
	for i, f := range m.PK {
		out[i] = f.DBName
	}
	return out
}
