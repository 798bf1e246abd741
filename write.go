package offlinelock

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/offlinelock/offlinelock/internal/gormstmt"
	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"github.com/offlinelock/offlinelock/internal/sqlscan"
	"github.com/offlinelock/offlinelock/internal/telemetry"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// beforeWrite checks, in the write's transaction and before any hook runs,
// that the session holds a Write lock on every existing row the write will
// change (else ErrNotLocked or *LockedError). Writes never lock implicitly:
// Acquire at the edit's start tells a conflict before the work.
func (b *binding) beforeWrite(op opKind) func(*gorm.DB) {
	p := b.p
	return func(db *gorm.DB) {
		if _, otel := db.Config.Plugins[telemetry.OtelGORM]; otel && p.spans {
			p.tel.TraceStatement(db)
		}
		b.freshCatalog(db)
		if len(db.Statement.Clauses) > 0 && b.refuseRetarget(db, op) {
			return
		}
		st := b.enter(db, op, false)
		if db.Error != nil || db.DryRun {
			return
		}
		if st == nil {
			b.checkOtherWrite(db, op)
			return
		}
		if _, limited := db.Statement.Clauses["LIMIT"]; limited && gormstmt.VolatileLimit(db) && refuseVolatileLimit(db, st) {
			return
		}
		if err := b.checkWriteShape(db, st, op); err != nil {
			st.fail(db, err)
			return
		}
		if st.m.Root != nil {
			b.checkMemberWrite(db, st, op)
		} else if err := b.checkRowsWritten(db, st, op); err != nil {
			st.fail(db, err)
		}
		if !st.folded { // folded: no hook, association or other callback can change its keys (canFold)
			p.noteKeys(db, st, op)
		}
	}
}

// refuseRetarget refuses a write whose clause retargets it to a lockable
// table other than its model's, whose rows the plugin cannot check. It
// reports whether it refused.
func (b *binding) refuseRetarget(db *gorm.DB, op opKind) bool {
	p := b.p
	if db.Error != nil || len(db.Statement.Clauses) == 0 {
		return false
	}
	var via string // the clause that names the table op writes
	switch op {
	case opCreate:
		via = "INSERT"
	case opUpdate:
		via = "UPDATE"
	case opDelete:
		via = "FROM"
	}
	name := gormstmt.Retargeted(db.Statement, via)
	if name == "" {
		return false
	}
	m := p.reg.TableModel(name)
	if m == nil || !m.Lockable || p.bypassed(db, op) {
		return false
	}
	db.AddError(unenforceable(m.Table, "a clause ("+string(op)+" into another table) retargets the write to lockable table"))
	return true
}

// checkOtherWrite checks a write to a table that is not lockable: it may
// read a locked table, or write a lockable record's join table.
func (b *binding) checkOtherWrite(db *gorm.DB, op opKind) {
	p := b.p
	if _, bypass := bypassFrom(db.Statement.Context); bypass {
		return
	}
	if err := p.checkWriteSQL(db, nil, op); err != nil {
		db.AddError(err)
		return
	}
	if op == opDelete || op == opUpdate {
		if b.checkParentWrite(db, op); db.Error != nil {
			return
		}
	}
	b.beforeJoinWrite(db, op)
}

// checkWriteSQL refuses a write through a table expression naming a
// lockable table, and one whose clauses or values read another table
// locked on load (a subquery).
func (p *Plugin) checkWriteSQL(db *gorm.DB, own *model.Model, op opKind) error {
	stmt := db.Statement
	if te := stmt.TableExpr; te != nil && own == nil {
		if named := p.namedModels(gormstmt.ExprSQL(db, te)); len(named) > 0 && !p.fromMigrator() {
			return unenforceable(named[0].Table, "a "+string(op)+" through a table expression that is not a plain table names lockable table")
		}
	}
	locked := p.reg.LockedOnLoad()
	if len(locked) == 0 {
		return nil
	}
	var parts []clause.Expression // every clause, and every SQL value it writes
	for _, c := range stmt.Clauses {
		if c.Expression != nil {
			parts = append(parts, c.Expression)
		}
	}
	seen := map[uintptr]bool{}
	for _, v := range []any{stmt.Dest, stmt.Model} {
		gormstmt.EachSQLExpr(db, reflect.ValueOf(v), func(e clause.Expression) { parts = append(parts, e) }, seen, 0)
	}
	for _, e := range parts {
		text := gormstmt.ExprSQL(db, e)
		if !gormstmt.ContainsAny(strings.ToLower(text), locked) {
			continue // names no table locked on load: nothing to tokenise
		}
		for table := range sqlscan.TableRefs(text, p.lockableName) {
			if bad := p.readsLocked([]*model.Model{p.reg.TableModel(table)}, nil); bad != nil {
				return unenforceable(bad.Table, "a "+string(op)+" reads, in a subquery or a FROM, lockable table")
			}
		}
	}
	return nil
}

// checkWriteShape refuses the writes whose rows the plugin cannot tell,
// and begins the write's transaction (a savepoint in the caller's).
func (b *binding) checkWriteShape(db *gorm.DB, st *state, op opKind) error {
	p := b.p
	if err := p.checkWriteSQL(db, st.m, op); err != nil {
		return err
	}
	if err := st.begin(db, true); err != nil {
		return err
	}
	switch {
	case op == opCreate && gormstmt.Replaces(db.Statement):
		return fmt.Errorf("%w: INSERT OR REPLACE into lockable table %s is refused; use Save", ErrInvalid, st.m.Table)
	case op == opCreate && gormstmt.Upserts(db.Statement) && !gormstmt.ConflictOnKey(db.Statement, st.m):
		return fmt.Errorf("%w: an upsert of lockable table %s must conflict on its primary key; the plugin cannot see which rows another unique key would overwrite",
			ErrInvalid, st.m.Table)
	case op == opCreate && gormstmt.Upserts(db.Statement) && st.caps.UpsertsOnAnyUnique && gormstmt.MayCollideBeyondKey(db, st.m):
		return fmt.Errorf("%w: an upsert (Save of new or unchanged rows, OnConflict) of lockable table %s is refused here: "+
			"this database's upsert overwrites the row of any unique key, not only the primary key's, and %s has another unique key; "+
			"use Create for new rows and Updates for existing ones (with clientFoundRows=true in the DSN, "+
			"Save of an unchanged row stays an UPDATE)", ErrInvalid, st.m.Table, st.m.Table)
	case op == opUpdate:
		return b.checkNewKeys(db, st)
	}
	return nil
}

// checkRowsWritten requires the session's Write lock on every existing row
// the write changes or cascades to.
func (b *binding) checkRowsWritten(db *gorm.DB, st *state, op opKind) error {
	p := b.p
	rows, byKey, err := b.writeRows(db, st, op)
	if err != nil || len(rows) == 0 {
		if err == nil && op != opCreate {
			st.bulk = 0 // the WHERE matched nothing: so must the write
		}
		return err
	}
	if op != opCreate {
		st.bulk = int64(len(rows)) // never more than checked: an Or(…) reaches no other row
	}
	if (op == opDelete || op == opUpdate) && p.reg.AnyCascade.Load() {
		if err := b.checkCascades(db, st, rows, op); err != nil {
			return err
		}
	}
	keys := make([]key, len(rows))
	for i, r := range rows {
		keys[i] = r.k
	}
	if byKey && len(keys) == 1 && len(st.required) == 0 && (op != opCreate || gormstmt.Upserts(db.Statement)) {
		// The hint path (docs/callbacks.md): checked once, by the fence. An
		// upsert takes it only with both fences folded (foldUpsert).
		before, after, _ := hooksOf(db, op)
		if !before && !after && p.hints.fresh(st.owner.Session, keys[0], time.Second) && b.foldHintPath(db, st, op, keys[0]) {
			st.ifChanged = true
			st.required = append(st.required, keys...)
			return nil
		}
	}
	mine, free, err := st.t.check(st.t.direct(db), keys, st.owner, false)
	if err != nil {
		return err
	}
	st.required = append(st.required, mine...)
	if len(free) == 0 || op == opCreate && !gormstmt.Upserts(db.Statement) {
		return nil // a plain INSERT changes no existing row
	}
	if byKey { // rows that do not exist yet need no lock
		if free, err = b.existingOf(db, st.m, rows, free); err != nil {
			return err
		}
	}
	if len(free) > 0 {
		return b.notLocked(db, st, op, free)
	}
	return nil
}

// foldHintPath says whether a write of one record by key takes the hint
// path (an upsert only with its fences folded), folding where it can.
func (b *binding) foldHintPath(db *gorm.DB, st *state, op opKind, k key) bool {
	switch {
	case op == opUpdate || op == opDelete:
		if b.canFold(db, st, op) {
			b.foldFence(db, st, k)
		}
		return true
	case op == opCreate && gormstmt.Upserts(db.Statement):
		return b.foldUpsert(db, st, k)
	}
	return false
}

// existingOf keeps, of free, the keys whose rows exist.
func (b *binding) existingOf(db *gorm.DB, m *model.Model, rows []pkRow, free []key) ([]key, error) {
	p := b.p
	isFree := map[key]bool{}
	for _, k := range free {
		isFree[k] = true
	}
	var freeRows []pkRow
	for _, r := range rows {
		if isFree[r.k] {
			freeRows = append(freeRows, r)
		}
	}
	exists, err := p.existing(db, m, m.Table, freeRows)
	if err != nil {
		return nil, err
	}
	var out []key
	for _, r := range freeRows {
		if exists[r.k] {
			out = append(out, r.k)
		}
	}
	return out, nil
}

// requireWriteLocks checks that st's session holds a Write lock on every
// one of keys: the keys it holds, or the refusal.
func (b *binding) requireWriteLocks(db *gorm.DB, st *state, op opKind, keys []key) ([]key, error) {
	mine, free, err := st.t.check(st.t.direct(db), keys, st.owner, false)
	if err == nil && len(free) > 0 {
		err = b.notLocked(db, st, op, free)
	}
	return mine, err
}

// notLocked is notLockedForWrite, or an *ExpiredError when the session's
// own lock on the first key expired. Only a refusal pays the lookup.
func (b *binding) notLocked(db *gorm.DB, st *state, op opKind, free []key) error {
	err := notLockedForWrite(op, free)
	k := lockstore.SortKeys(free)[0]
	locks, lerr := st.t.list(st.t.direct(db), Filter{Resource: k.Resource, ID: k.ID, Session: st.owner.Session, Expired: true, Limit: 1})
	if lerr != nil || len(locks) == 0 {
		return err
	}
	return &ExpiredError{Resource: k.Resource, ID: k.ID, Op: string(op), ExpiredAt: locks[0].ExpiresAt}
}

// writeRows finds the rows a write will change: by its value's primary
// keys when set, else by its WHERE as a key-only SELECT, row-locked in the
// write's transaction. byKey: from the value, and may not exist yet.
func (b *binding) writeRows(db *gorm.DB, st *state, op opKind) (rows []pkRow, byKey bool, err error) {
	p := b.p
	stmt := db.Statement
	m := st.m
	v := stmt.ReflectValue
	if op != opCreate && v.Kind() == reflect.Map {
		v = reflect.Value{} // an update's map is what it sets, not which rows
	}
	vals, complete, known := model.ValueRows(db, v, m.PK)
	for _, vs := range vals {
		k, err := keyOf(m, vs)
		if err != nil {
			return nil, false, err
		}
		rows = append(rows, pkRow{k, m.KeyArgs(vs)})
	}
	if op == opCreate {
		// A generated key may be one another session reserved (fence).
		st.keyless = !complete || len(rows) == 0
		return rows, true, nil
	}
	if known && len(rows) > 0 && complete && !callerWhere(stmt) {
		return rows, true, nil
	}
	where, ok := stmt.Clauses["WHERE"].Expression.(clause.Where)
	if !ok || len(where.Exprs) == 0 {
		return nil, false, fmt.Errorf("%w: a global %s of lockable table %s is refused; add a WHERE", ErrInvalid, op, m.Table)
	}
	var targets []target
	find := func() (err error) { targets, err = p.preselect(db, m, true); return err }
	if known && len(rows) > 0 && complete {
		// The keys and the caller's WHERE together, as the database reads
		// them (an OR of the caller's reaches other rows).
		vals := make([][]any, len(rows))
		for i, r := range rows {
			vals[i] = r.vals
		}
		err = gormstmt.WithKeyCondition(stmt, m, vals, find)
	} else {
		err = find()
	}
	if err != nil {
		return nil, false, err
	}
	rows = rows[:0]
	for _, tg := range targets {
		rows = append(rows, pkRow{k: tg.k})
	}
	return rows, false, nil
}

// checkGeneratedKeys refuses a create whose rows got from the database a
// key another session reserved with Acquire.
func (b *binding) checkGeneratedKeys(db *gorm.DB, st *state) error {
	vals, _, _ := model.ValueRows(db, db.Statement.ReflectValue, st.m.PK)
	keys := make([]key, 0, len(vals))
	for _, vs := range vals {
		k, err := keyOf(st.m, vs)
		if err != nil {
			return err
		}
		keys = append(keys, k)
	}
	return refuseOthers(db, st, keys)
}

// fence is the last check before the write commits: the session must still
// hold a valid Write lock on every row it changed (docs/callbacks.md).
func (b *binding) fence(db *gorm.DB) {
	p := b.p
	st := statementState(db.Statement)
	if p.spans && (st == nil || !st.noSpans) {
		telemetry.AdoptSpan(db)
	}
	if st == nil {
		return
	}
	if db.Error != nil {
		b.refusedAtFence(db, st)
		return
	}
	if st.keyless && st.op == opCreate {
		if err := b.checkGeneratedKeys(db, st); err != nil {
			st.fail(db, err)
			return
		}
	}
	if st.bulk >= 0 && db.Statement.RowsAffected > st.bulk {
		st.fail(db, fmt.Errorf("%w: the %s of %s changed %d rows, but only %d were checked; a row began to match during the write",
			ErrNotLocked, st.op, db.Statement.Table, db.Statement.RowsAffected, st.bulk))
		return
	}
	if len(st.required) == 0 || st.ifChanged && db.Statement.RowsAffected == 0 && !st.folded {
		return
	}
	if st.upsertFence != nil && st.upsertFolds != lockstore.UpsertFoldedValues|lockstore.UpsertFoldedUpdate {
		// The key omitted from VALUES, or another's clause builder replaced ours.
		st.fenceFailed = true
		st.fail(db, fmt.Errorf("%w: the fence of the upsert of %s could not be written into its statement (its primary key omitted, or a clause builder replaced); "+
			"write the record with Updates, or Create it", ErrNotLocked, st.m.Table))
		return
	}
	var err error
	if !st.folded || db.Statement.RowsAffected == 0 && !st.foldRefuses {
		// Folded, the write itself found the lock valid; a refusing fold's
		// 0 rows is a missing or unchanged row, never a lost lock.
		var free []key
		_, free, err = st.t.check(st.t.direct(db), st.required, st.owner, true)
		if err == nil && len(free) > 0 {
			err = b.notLocked(db, st, st.op, free)
		}
	}
	if c := st.caps.Certifier; c != nil && err == nil && c.Certifies() {
		err = c.Certify(st.t.direct(db), st.required, st.owner.Session)
	}
	if err != nil && !st.ifChanged {
		err = fmt.Errorf("%w (the lock was lost before the %s committed)", err, st.op)
	}
	if err != nil {
		st.fenceFailed = true
		p.tel.FenceFailed(ctxOf(db), db, st.m.LockResource(), string(st.op))
		st.fail(db, err)
	}
}

// checkMemberWrite checks a write of members against the Write locks of
// the roots they belong to now and will belong to (which must exist).
func (b *binding) checkMemberWrite(db *gorm.DB, st *state, op opKind) {
	roots, err := b.memberWriteRoots(db, st, op)
	if err != nil {
		st.fail(db, err)
		return
	}
	if len(roots) == 0 {
		return
	}
	keys := make([]key, len(roots))
	for i, r := range roots {
		keys[i] = r.k
	}
	mine, err := b.requireWriteLocks(db, st, op, keys)
	if err != nil {
		st.fail(db, err)
		return
	}
	st.required = mine
}

// memberWriteRoots are the roots a write of members touches.
func (b *binding) memberWriteRoots(db *gorm.DB, st *state, op opKind) ([]target, error) {
	p := b.p
	stmt, m := db.Statement, st.m
	var next, now []any
	if op != opDelete {
		var err error
		if next, err = nextLinks(db, m, op); err != nil {
			return nil, err
		}
	}
	if op != opCreate || gormstmt.Upserts(stmt) {
		// Where they belong now: an upsert may move an existing member.
		var err error
		if now, err = b.currentLinks(db, st, op); err != nil {
			return nil, err
		}
	}
	var roots []target
	if len(next) > 0 {
		r, err := p.rootsOf(db, m, next)
		if err != nil {
			return nil, err
		}
		if err := p.rootsExist(db, r); err != nil {
			return nil, err
		}
		roots = append(roots, r...)
	}
	if len(now) > 0 {
		r, err := p.rootsOf(db, m, now)
		if err != nil {
			return nil, err
		}
		roots = append(roots, r...)
	}
	return roots, nil
}

// currentLinks are the root links of the rows a write of members touches,
// read by key, or with the WHERE (a global write is refused).
func (b *binding) currentLinks(db *gorm.DB, st *state, op opKind) (now []any, err error) {
	p := b.p
	stmt, m := db.Statement, st.m
	v := stmt.ReflectValue
	if op != opCreate && v.Kind() == reflect.Map {
		v = reflect.Value{}
	}
	pks, complete, known := model.ValueRows(db, v, m.PK)
	switch {
	case known && len(pks) > 0 && complete && op != opCreate && callerWhere(stmt):
		for i := range pks {
			pks[i] = m.KeyArgs(pks[i])
		}
		// The keys and the caller's WHERE together (writeRows).
		err = gormstmt.WithKeyCondition(stmt, m, pks, func() (err error) { now, err = p.preselectLinks(db, m, true); return err })
		st.bulk = int64(len(now))
	case known && len(pks) > 0 && (complete || op == opCreate):
		now, err = p.linksOfRows(db, m, pks)
		if op != opCreate {
			st.bulk = int64(len(pks))
		}
	case op == opCreate: // new members without keys: none moves
	default:
		where, ok := stmt.Clauses["WHERE"].Expression.(clause.Where)
		if !ok || len(where.Exprs) == 0 {
			return nil, fmt.Errorf("%w: a global %s of lockable table %s is refused; add a WHERE", ErrInvalid, op, m.Table)
		}
		now, err = p.preselectLinks(db, m, true)
		st.bulk = int64(len(now))
	}
	return now, err
}

// nextLinks reads the root links a write sets (gormstmt.NextLinks),
// refusing one set by an expression.
func nextLinks(db *gorm.DB, m *model.Model, op opKind) ([]any, error) {
	links := gormstmt.NextLinks(db, m, op == opCreate, op == opDelete)
	for _, l := range links {
		if gormstmt.IsSQL(l) {
			return nil, unenforceable(m.Table, "an expression sets the link to the aggregate root of member table")
		}
	}
	return links, nil
}

// keyOf is the lock key of m's row whose key column values are vals, in
// the lock table's spelling of each.
func keyOf(m *model.Model, vals []any) (key, error) {
	parts := make([]string, len(vals))
	for i, v := range vals {
		switch v.(type) {
		case clause.Expression, *gorm.DB, gorm.Valuer: // gormstmt.IsSQL
			// A GormValue key: the database gets the SQL it builds, not v.
			return key{}, unenforceable(m.Table, "a key value that GORM builds as SQL (an expression, a subquery, a GormValue) names no record the plugin can tell, on lockable table")
		}
		id, err := model.Canonical(m.Kinds[i], v)
		if err != nil {
			return key{}, fmt.Errorf("table %s column %s: %w", m.Table, m.PK[i].DBName, err)
		}
		parts[i] = id
	}
	k := key{Resource: m.Table}
	if len(parts) == 1 { // EncodeKey keeps one part as it is
		k.ID = parts[0]
	} else {
		k.ID = model.EncodeKey(parts)
	}
	return k, model.ValidateKey(k)
}

// checkNewKeys checks an update that changes primary keys as a Create of
// the new keys; a key set by an expression is refused.
func (b *binding) checkNewKeys(db *gorm.DB, st *state) error {
	stmt, m := db.Statement, st.m
	var vals [][]any
	if !gormstmt.SamePointer(stmt.Dest, stmt.Model) {
		// What Updates writes: a map, or a struct other than the model.
		dest := reflect.Indirect(reflect.ValueOf(stmt.Dest))
		switch {
		case dest.Kind() == reflect.Map && dest.Type().Key().Kind() == reflect.String && len(m.PK) == 1:
			for _, k := range model.MapKeysNaming(stmt.Schema, dest, m.PK[0]) { // every spelling: the last one wins
				if v := dest.MapIndex(k); v.IsValid() && !(v.Kind() == reflect.Interface && v.IsNil()) {
					vals = append(vals, []any{v.Interface()})
				}
			}
		case dest.Kind() == reflect.Map || dest.Kind() == reflect.Struct:
			vals, _, _ = model.ValueRows(db, reflect.ValueOf(stmt.Dest), m.PK)
		}
	}
	if set, ok := stmt.Clauses["SET"].Expression.(clause.Set); ok && len(m.PK) == 1 {
		for _, a := range set {
			if model.NamesField(stmt.Schema, a.Column.Name, m.PK[0]) {
				vals = append(vals, []any{a.Value})
			}
		}
	}
	if len(vals) == 0 {
		return nil // the update sets no key: it moves no row
	}
	var keys []key
	for _, v := range vals {
		for _, x := range v {
			if gormstmt.IsSQL(x) {
				return unenforceable(m.Table, "an expression sets the primary key of lockable table")
			}
		}
		k, err := keyOf(m, v)
		if err != nil {
			return err
		}
		keys = append(keys, k)
	}
	return refuseOthers(db, st, keys)
}

// refuseOthers returns the *LockedError of the first of keys another
// session holds, or nil: a key nobody holds, or the session's, is fine.
func refuseOthers(db *gorm.DB, st *state, keys []key) error {
	if len(keys) == 0 {
		return nil
	}
	_, _, err := st.t.check(st.t.direct(db), keys, st.owner, false)
	return err
}

// noteKeys remembers the keys and links the check of st's write read when
// a Before hook, a belongs-to save or another's callback could change them
// before the statement is built; rekey checks again if they did.
func (p *Plugin) noteKeys(db *gorm.DB, st *state, op opKind) {
	if db.Error != nil || !p.mayRekey(db, op) {
		return
	}
	st.keysRead, st.rekey = gormstmt.KeySignature(db.Statement, st.m), true
}

// mayRekey: a hook of the model's runs before the write, the model has
// associations GORM saves first, or the chain holds another's callback.
func (p *Plugin) mayRekey(db *gorm.DB, op opKind) bool {
	s := db.Statement.Schema
	if s == nil {
		return false
	}
	before, _, proc := hooksOf(db, op)
	return before || len(s.Relationships.BelongsTo) > 0 && op != opDelete || !p.chains.own(proc)
}

// rekey checks a write again when its keys or links changed since its check.

func (b *binding) rekey(op opKind) func(*gorm.DB) {
	p := b.p
	return func(db *gorm.DB) {
		st := statementState(db.Statement)
		if p.spans && (st == nil || !st.noSpans) {
			telemetry.AdoptSpan(db)
		}
		if st == nil || !st.rekey || db.Error != nil || db.DryRun {
			return
		}
		if gormstmt.KeySignature(db.Statement, st.m) == st.keysRead {
			return
		}
		st.rekey = false
		if op == opUpdate {
			if err := b.checkNewKeys(db, st); err != nil {
				st.fail(db, err)
				return
			}
		}
		if st.m.Root != nil {
			b.checkMemberWrite(db, st, op)
			return
		}
		if err := b.checkRowsWritten(db, st, op); err != nil {
			st.fail(db, err)
		}
	}
}
