package offlinelock

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/offlinelock/offlinelock/internal/gormstmt"
	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"github.com/offlinelock/offlinelock/internal/sqlscan"
	"github.com/offlinelock/offlinelock/internal/telemetry"
)

// maxRereads bounds how often a load re-reads because rows it had not
// foreseen turned up; each round locks them first.
const maxRereads = 3

// beforeQuery locks, before gorm:query reads, the rows the query will
// return (docs/callbacks.md): what the caller gets is never older than its
// lock, and a refused lock reads nothing.
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
	if k := db.Statement.ReflectValue.Kind(); k >= reflect.Int && k <= reflect.Float64 && gormstmt.IsCount(db.Statement) {
		return // a count reveals no row
	}
	if db.Statement.TableExpr != nil && b.fromSubquery(db) {
		return
	}
	st, gormOnly := b.enterRead(db, opLoad)
	if st == nil {
		p.guardPreloads(db)
		return
	}
	st.restore = snapshot(db.Statement.ReflectValue)
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

// enterRead starts a read's state (on the primary, topology.go) for the
// statement's model or a lockable model it joins, refusing what it cannot
// lock. It is nil for a read of nothing lockable (its SQL checked) or a
// failed one. gormOnly: no SQL text of the caller's, no joined member.
func (b *binding) enterRead(db *gorm.DB, op opKind) (st *state, gormOnly bool) {
	p := b.p
	if db.Statement.ConnPool != db.Config.ConnPool {
		p.loadOnPrimary(db, p.statementModel(db))
	}
	st = b.enter(db, op, true)
	if st == nil && db.Error == nil {
		if st = b.enterJoins(db, op); st != nil {
			routeToPrimary(db)
		}
	}
	if db.Error != nil {
		return nil, false
	}
	gormOnly = gormstmt.Generated(db.Statement) && (len(db.Statement.Joins) == 0 || !p.joinsMember(db))
	if st == nil {
		if !gormOnly {
			if err := p.checkReadsOf(db, p.querySQL(db), nil); err != nil {
				db.AddError(err)
			}
		}
		return nil, gormOnly
	}
	if gormstmt.VolatileLimit(db) && refuseVolatileLimit(db, st) || st.m.Root != nil && p.refuseMemberJoins(db, st) {
		return nil, false
	}
	if st.caps.Guard != nil { // else no guard governs (SQLite): checkGuarded has nothing to ask
		if err := b.guard.Check(db, st.m.LockResource()); err != nil {
			st.fail(db, err) // no guard, no grant (internal/guard)
			return nil, false
		}
	}
	st.locked, st.newly = map[key]bool{}, map[key]bool{}
	return st, gormOnly
}

// fromSubquery takes the load generics Preload with LimitPerRecord makes
// of a model locked on load (gormstmt.LimitPerRecord): its rows cannot be
// read ahead, so it is read as raw SQL would be (rawQuery). Any other
// subquery as the table stays refused.
func (b *binding) fromSubquery(db *gorm.DB) bool {
	p := b.p
	stmt := db.Statement
	if !gormstmt.LimitPerRecord(stmt) {
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

// refuseVolatileLimit refuses a lockable load or write of a volatile
// LIMIT (gormstmt.VolatileLimit). It reports true.
func refuseVolatileLimit(db *gorm.DB, st *state) bool {
	st.fail(db, unenforceable(st.m.Table, "an ORDER BY of a random or volatile expression with a LIMIT picks rows the lock cannot pin, on lockable table"))
	return true
}

// beforeRawQuery is beforeQuery for Raw(…).Find/Scan/First: the
// destination's own rows are locked once read, and read again; any other
// read of a table locked on load is refused.
func (b *binding) beforeRawQuery(db *gorm.DB) { b.rawQuery(db, false) }

// rawQuery is beforeRawQuery; vetted: rows under their own keys
// (fromSubquery), which the raw SQL check would refuse.
func (b *binding) rawQuery(db *gorm.DB, vetted bool) {
	p := b.p
	sql := db.Statement.SQL.String()
	named := p.rawNamed(db, sql, "Find/Scan/Rows")
	if named == nil {
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
	if !vetted && !sqlscan.KeysAsStored(sql, m.Table, m.KeyColumns().Columns) {
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

// lockInTx is the general path of a load: it locks the rows ahead of the
// read in a transaction (raw SQL: once read); outside one, loadByQuery.
func (p *Plugin) lockInTx(db *gorm.DB, st *state, raw bool) {
	_, inTx := db.Statement.ConnPool.(gorm.TxCommitter)
	if !raw && !inTx && len(db.Statement.Preloads) == 0 && !p.deepMember(st.m) {
		p.loadByQuery(db, st)
		return
	}
	if err := st.begin(db, true); err != nil {
		st.fail(db, err)
		return
	}
	if !raw {
		p.lockAhead(db, st)
	}
}

// loadByQuery locks, outside any transaction, the rows a load's query will
// read: in one statement where the store can (findAndLock), else found by
// a key-only SELECT and granted. One record or root needs no transaction:
// its grant is one atomic statement, committed before the read.
func (p *Plugin) loadByQuery(db *gorm.DB, st *state) {
	if _, known := gormstmt.KnownKeys(db.Statement, st.m); !known && st.caps.QueryLoad == 2 && p.findAndLock(db, st) {
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

// deepMember: m is more than one level below its root, whose parents must
// be read in the lock's transaction so none moves between.
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

// refuseMemberJoins refuses a member's load that joins a model locked on
// load: it locks its roots, not what it joins. It reports whether.
func (p *Plugin) refuseMemberJoins(db *gorm.DB, st *state) bool {
	joins := p.lockableJoins(db)
	if len(joins) == 0 {
		return false
	}
	st.fail(db, unenforceable(joins[0].table, "a load of aggregate member "+st.m.Table+" locks its roots, not the rows it joins (use Preload, which locks them), of lockable table"))
	return true
}

// enterJoins is enter for a load whose own model is not locked on load but
// that joins one that is: the joined rows are locked like any other.
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

// guardPreloads makes a load that preloads a model locked on load all or
// nothing: a refused preload rolls back its siblings' locks.
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

// preloadsLockable: a model along the preload paths is locked on load.
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

// locksOnLoadSchema: loading s's model takes locks (or fails on a bad tag).
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

// aheadTargets finds the rows (or roots) a load will read; false: failed.
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
	} else if keys, ok := gormstmt.KnownKeys(db.Statement, st.m); ok && len(p.lockableJoins(db)) == 0 {
		st.known = keys
		for _, k := range keys {
			targets = append(targets, target{k, st.m})
		}
	} else if !st.raw { // Table("accounts AS a") too: the same FROM
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
			// Fresh too: the fast path's grant, committed before this one.
			st.newly[k] = got[k].Fresh || (st.fastTok != "" && k == st.fastKey && got[k].Hash == lockstore.TokenHash(st.fastTok))
		}
	}
	return true
}

// afterQuery locks the rows that reached the destination unforeseen (raw
// SQL, a row that began to match) and runs the query again.
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
	if st.fast == fastAhead { // a row is its key's; a miss goes on (its phantom lock)
		st.fast = fastNone
		if db.Error == nil && db.RowsAffected > 0 || db.Error != nil && !errors.Is(db.Error, gorm.ErrRecordNotFound) {
			return
		}
	} else if st.fast != fastNone {
		if ok, fellBack := p.fastDone(db, st); !ok || !fellBack {
			return // the row is its key's, which it holds (fastDone)
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

// readTargets are the records the query read, for afterQuery; more is
// false when there is nothing to check (or the statement failed).
func (p *Plugin) readTargets(db *gorm.DB, st *state) (loaded []target, more bool) {
	loaded, ok, err := p.loadedTargets(db, st.m, st.links)
	if err != nil {
		st.fail(db, err)
		return nil, false
	}
	if !ok {
		// Not the model itself (Pluck, a DTO, no key): look again for
		// rows that began to match; keys in the WHERE pin them.
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

// reread runs the query again, as gorm:query does, into the destination
// as it was (GORM appends to some, such as slices of maps).
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

// beforeRow locks the rows Rows, Row or Scan on a model will return,
// before the chain ends (settleAhead).
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
	st, gormOnly := b.enterRead(db, opRows)
	if st == nil {
		return
	}
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

// settleAhead locks the rows before the query runs, which the caller reads
// after the chain: outside a transaction endStatement gives a refusal's
// locks back; inside one, a savepoint undoes them now.
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

// beforeRawRows is beforeRow for Raw(…).Rows/Row/Scan, whose rows the
// plugin never sees: a raw read of a table locked on load is refused.
func (p *Plugin) beforeRawRows(db *gorm.DB) {
	named := p.rawNamed(db, db.Statement.SQL.String(), "Rows/Row/Scan")
	if named == nil {
		return
	}
	if bad := p.readsLocked(named, nil); bad != nil {
		db.AddError(unenforceable(bad.Table, "a raw SELECT whose rows the plugin cannot see reads lockable table"))
	}
}

// rawNamed is the lockable models a raw read names, read on the primary;
// nil when none, or refused (dynamic SQL, Strict, a write through via).
func (p *Plugin) rawNamed(db *gorm.DB, sql, via string) []*model.Model {
	named := p.namedModels(sql)
	if p.readsDynamically(db, sql) || len(named) == 0 || p.strict(db, opRawQuery) {
		return nil
	}
	for _, m := range named {
		p.loadOnPrimary(db, m)
	}
	if !sqlscan.PlainSelect(sql) {
		db.AddError(unenforceable(named[0].Table, "a raw statement that may write runs through "+via+" on lockable table"))
		return nil
	}
	return named
}

// fastPath is the short way a load of one record by its key is taking
// (loadByKey, docs/callbacks.md). The in-read paths check the lock in the
// statement that reads the row; no row sends the load down the general
// path, which decides exactly and names the holders.
type fastPath int

const (
	fastNone  fastPath = iota
	fastHeld           // a hint says the session holds a fresh lock; the WHERE requires it
	fastGrant          // a data-modifying CTE takes the Write lock; the read is FOR SHARE
	fastAhead          // outside a transaction, the store granted the key before the read
)

// loadByKey is the load of one record by its key in the fewest statements
// the store allows (Traits.KeyLoad): Held, Loader or KeyGranter. It
// reports whether it took the load (built, or failed: db.Error).
func (p *Plugin) loadByKey(db *gorm.DB, st *state) bool {
	stmt := db.Statement
	if st.m.Root != nil || len(stmt.Preloads) > 0 || len(stmt.Joins) > 0 {
		return false
	}
	_, inTx := stmt.ConnPool.(gorm.TxCommitter)
	keys, ahead := gormstmt.KnownKeys(stmt, st.m)
	ahead = ahead && !inTx && len(keys) == 1
	inRead := st.caps.Held != nil && st.m.Lockable && st.m.LocksOnLoad() && // locksRows
		stmt.TableExpr == nil && !stmt.Distinct
	for _, name := range []string{"FOR", "GROUP BY"} {
		if _, ok := stmt.Clauses[name]; ok {
			inRead = false
		}
	}
	if inRead && keys == nil {
		keys = gormstmt.ValueKey(stmt, st.m)
	}
	if len(keys) != 1 || !inRead && !ahead {
		return false
	}
	k := keys[0]
	ttl, err := p.ttlFor(db, st.m)
	if err != nil {
		st.fail(db, err)
		return true
	}
	st.where, st.hadWhere = stmt.Clauses["WHERE"]
	kg := st.caps.KeyGranter
	switch {
	case inRead && p.hints.fresh(st.owner.Session, k, ttl/2) && !staleInTx(st.t, stmt):
		rewriteHeld(db, st, st.caps.Held, k, ttl)
	case inRead && st.caps.KeyLoad == 1 && loadAccess(st.m) == Write:
		p.grantInRead(db, st, k, ttl)
		return true
	case !ahead || kg == nil: // the general path grants it (lockTargets)
		return false
	default: // the store's own grant, committed before the read
		if callbacks.BuildQuerySQL(db); db.Error != nil {
			return true
		}
		st.fast, st.fastKey, st.knownOne[0] = fastAhead, k, k
		st.known, st.detached = st.knownOne[:], true
		ctx := stmt.Context // connCtx(db), asked only where the statement keeps spans aside
		if !st.noSpans || ctx == nil {
			ctx = connCtx(db)
		}
		access := Write // loadAccess(st.m), st.m having no root
		if st.m.Mode == model.ReadWrite {
			access = Read
		}
		fresh, err := kg.GrantKey(lockstore.NewConn(db, ctx), k, lockstore.Owner(st.owner), lockstore.Access(access), ttl)
		if err != nil {
			st.fail(db, public(err)) // the store's own error: public only on a refusal
			return true
		}
		p.hints.put(st.owner.Session, k, time.Now().Add(ttl)) // from now, as fastDone's: GrantKey tells no expiry
		st.locked[k], st.newly[k] = true, fresh
		return true
	}
	st.fastKey, st.fastRewrote = k, true
	callbacks.BuildQuerySQL(db)
	return true
}

// grantInRead makes the load of k take k's Write lock in its own
// statement (fastGrant, the store's Loader).
func (p *Plugin) grantInRead(db *gorm.DB, st *state, k key, ttl time.Duration) {
	stmt := db.Statement
	var err error
	if st.fastTok, err = lockstore.NewToken(); err != nil {
		st.fail(db, err)
		return
	}
	st.fast, st.fastKey, st.fastRewrote = fastGrant, k, true
	stmt.AddClause(clause.Where{Exprs: []clause.Expression{st.caps.Loader.GrantCondition()}})
	stmt.AddClause(clause.Locking{Strength: clause.LockingStrengthShare, Table: clause.Table{Name: clause.CurrentTable}})
	callbacks.BuildQuerySQL(db)
	prefix, vars := st.caps.Loader.GrantPrefix(k, lockstore.Owner(st.owner), st.fastTok, ttl, len(stmt.Vars))
	var sql strings.Builder
	sql.Grow(len(prefix) + stmt.SQL.Len())
	sql.WriteString(prefix)
	sql.WriteString(stmt.SQL.String())
	stmt.SQL = sql
	stmt.Vars = append(stmt.Vars, vars...)
}

// rewriteHeld makes stmt the holder's re-read of k (fastHeld), prepared
// where the store keeps statements prepared.
func rewriteHeld(db *gorm.DB, st *state, hs lockstore.Held, k key, ttl time.Duration) {
	stmt := db.Statement
	st.fast = fastHeld
	gormstmt.AndWhere(stmt, hs.HeldCondition(k, st.owner.Session, lockstore.Access(loadAccess(st.m)), ttl/2))
	if pool, ok := lockstore.PreparedPool(db, st.t.Store); ok {
		stmt.ConnPool, st.prepared = pool, true
	}
	stmt.SQL.Grow(fastSQLRoom) // up front: growing costs an allocation per doubling
	if cap(stmt.Vars) == 0 {
		stmt.Vars = make([]any, 0, 8)
	}
}

const fastSQLRoom = 512 // a one-row SELECT by key with the lock check

// staleInTx: a read of the lock table in stmt's transaction could see an
// old snapshot (Traits.SnapshotReads).
func staleInTx(t lockStore, stmt *gorm.Statement) bool {
	if !t.caps.SnapshotReads {
		return false
	}
	_, inTx := stmt.ConnPool.(gorm.TxCommitter)
	return inTx
}

// fastDone finishes fastHeld or fastGrant after gorm:query: a row means
// the lock is held; none sends the load down the general path (fellBack),
// whose rows the usual checks look at. ok: the load may go on.
func (p *Plugin) fastDone(db *gorm.DB, st *state) (ok, fellBack bool) {
	path := st.fast
	st.fast = fastNone
	if db.Error != nil && !errors.Is(db.Error, gorm.ErrRecordNotFound) {
		return false, false
	}
	if db.Error == nil && db.RowsAffected > 0 {
		st.locked[st.fastKey] = true
		st.knownOne[0] = st.fastKey
		st.known = st.knownOne[:] // the WHERE pins the row to its key
		if path == fastGrant {
			ttl, _ := p.ttlFor(db, st.m)
			p.hints.put(st.owner.Session, st.fastKey, time.Now().Add(ttl))
		}
		return true, false
	}
	// No row (not the session's, or no such row): undo the rewrite.
	db.Error, db.RowsAffected = nil, 0
	if st.restore != nil {
		st.restore()
	}
	stmt := db.Statement
	if st.hadWhere {
		stmt.Clauses["WHERE"] = st.where
	} else {
		delete(stmt.Clauses, "WHERE")
	}
	delete(stmt.Clauses, "FOR")
	st.fastRewrote = false
	stmt.SQL.Reset()
	stmt.Vars = nil
	callbacks.BuildQuerySQL(db)
	p.lockInTx(db, st, false)
	if db.Error != nil {
		return false, true
	}
	return reread(db, st), true
}

// releasePhantoms gives back the new locks on keys the WHERE named that
// had no row: a miss leaves no lock behind.
func (p *Plugin) releasePhantoms(db *gorm.DB, st *state, loaded []target) {
	if len(st.known) == 0 {
		return
	}
	got := map[key]bool{}
	for _, tg := range loaded {
		got[tg.k] = true
	}
	var gone []key
	for _, k := range st.known {
		if st.newly[k] && !got[k] {
			gone = append(gone, k)
			st.newly[k] = false
		}
	}
	if len(gone) == 0 {
		return
	}
	for _, k := range gone {
		p.hints.drop(st.owner.Session, k)
	}
	if err := st.t.Drop(direct(db), gone, st.owner.Session); err != nil {
		st.fail(db, err)
	}
}

// findAndLock is the general load's lock-ahead in one statement
// (lockstore.Loader.FindAndLock), for Write locks on a one-column integer
// or text key (its own, or its root's one level up). It reports whether it
// handled the load; on a refusal the general path names the holders.
func (p *Plugin) findAndLock(db *gorm.DB, st *state) bool {
	stmt, m := db.Statement, st.m
	ls := st.caps.Loader
	if ls == nil || !m.Lockable || loadAccess(m) != Write || len(p.lockableJoins(db)) > 0 {
		return false
	}
	if _, grouped := stmt.Clauses["GROUP BY"]; grouped {
		return false
	}
	col, resource := m.PK, m.Table
	if m.Root != nil {
		chain := m.Chain()
		if len(chain) != 1 {
			return false
		}
		col, resource = []*schema.Field{m.Root.Field}, chain[0].Table
	}
	// Only an integer's or a text's CAST AS TEXT is its canonical spelling.
	if len(col) != 1 || !slices.Contains([]lockstore.KeyKind{kindInt, kindText}, model.KindOf(col[0])) {
		return false
	}
	ttl, err := p.ttlFor(db, m)
	if err != nil {
		st.fail(db, err)
		return true
	}
	token, err := lockstore.NewToken()
	if err != nil {
		st.fail(db, err)
		return true
	}
	q := p.keySelect(db, []clause.Column{{Table: clause.CurrentTable, Name: col[0].DBName}}, false)
	grants, refused, err := ls.FindAndLock(direct(db), q.SQL.String(), q.Vars, stmt.Quote(col[0].DBName), resource, lockstore.Owner(st.owner), token, ttl)
	if refused {
		return false // the general path names the holders
	}
	if err != nil {
		st.fail(db, err)
		return true
	}
	st.detached = true
	if m.Root != nil {
		st.links = map[string]bool{}
	}
	for _, g := range grants {
		st.locked[g.Key], st.newly[g.Key] = true, g.Fresh
		if st.links != nil {
			st.links[g.Key.ID] = true
		}
		p.hints.put(st.owner.Session, g.Key, g.Expires)
	}
	return true
}

// unpreparedPool puts back the pool rewriteHeld replaced with prepared
// statements, if it is still there.

func unpreparedPool(db *gorm.DB, st *state) {
	if !st.prepared {
		return
	}
	st.prepared = false
	if pool, ok := lockstore.Unprepared(db.Statement.ConnPool); ok {
		db.Statement.ConnPool = pool
	}
}
