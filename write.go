package offlinelock

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

const (
	opCreate = "create"
	opUpdate = "update"
	opDelete = "delete"
)

// beforeWrite checks, inside the write's transaction and before any hook
// or SQL of the write runs, that every existing row it will change is
// covered by a Write lock of the session: else ErrNotLocked (nobody holds
// it) or *LockedError (someone else does), and nothing is written. Writes
// are never locked implicitly: a Write lock is taken with Acquire when the
// edit starts, so a user learns of a conflict before the work, not after.
func (p *Plugin) beforeWrite(op string) func(*gorm.DB) {
	return func(db *gorm.DB) {
		st := p.enter(db, op, false)
		if st == nil {
			return
		}
		// In the caller's transaction, a savepoint undoes the write when the
		// fence refuses it, even if the caller then commits.
		if err := st.begin(db, true); err != nil {
			st.fail(db, err)
			return
		}
		if op == opCreate && replaces(db.Statement) {
			st.fail(db, fmt.Errorf("%w: INSERT OR REPLACE into lockable table %s is refused; use Save", ErrInvalid, db.Statement.Table))
			return
		}
		if op == opCreate && upserts(db.Statement) && !conflictOnKey(db.Statement, st.m) {
			st.fail(db, fmt.Errorf("%w: an upsert of lockable table %s must conflict on its primary key; the plugin cannot see which rows another unique key would overwrite",
				ErrInvalid, db.Statement.Table))
			return
		}
		if st.m.root != nil {
			p.checkMemberWrite(db, st, op)
			return
		}
		rows, byKey, err := p.writeRows(db, st, op)
		if err != nil {
			st.fail(db, err)
			return
		}
		if len(rows) == 0 {
			if op != opCreate {
				st.bulk = 0 // the WHERE matched nothing: so must the write
			}
			return
		}
		if op != opCreate {
			// Never more rows than were checked: an Or(…) added to a write
			// by key must not reach rows of other records.
			st.bulk = int64(len(rows))
		}
		keys := make([]key, len(rows))
		for i, r := range rows {
			keys[i] = r.k
		}
		if byKey && len(keys) == 1 && op != opCreate {
			// One row by its key (Save, Update, Delete of a loaded record):
			// checked once, by the fence, if the write changed it. A
			// refusal rolls the write back; it saves a round trip on the
			// commonest write.
			st.required, st.ifChanged = keys, true
			return
		}
		mine, free, err := st.t.writeHolds(direct(db), keys, st.owner, false)
		if err != nil {
			st.fail(db, err)
			return
		}
		st.required = mine
		if len(free) == 0 {
			return
		}
		if op == opCreate && !upserts(db.Statement) {
			return // a plain INSERT changes no existing row
		}
		if byKey { // rows that do not exist yet need no lock
			var freeRows []pkRow
			isFree := map[key]bool{}
			for _, k := range free {
				isFree[k] = true
			}
			for _, r := range rows {
				if isFree[r.k] {
					freeRows = append(freeRows, r)
				}
			}
			exists, err := p.existing(db, st.m, db.Statement.Table, freeRows)
			if err != nil {
				st.fail(db, err)
				return
			}
			free = free[:0]
			for _, r := range freeRows {
				if exists[r.k] {
					free = append(free, r.k)
				}
			}
		}
		if len(free) > 0 {
			st.fail(db, notLockedForWrite(op, free))
		}
	}
}

func notLockedForWrite(op string, keys []key) error {
	k := sortKeys(keys)[0]
	more := ""
	if len(keys) > 1 {
		more = fmt.Sprintf(" and %d more", len(keys)-1)
	}
	return fmt.Errorf("%w: %s of %s %s%s needs a Write lock; take it with Acquire when the edit starts", ErrNotLocked, op, k.resource, k.id, more)
}

// writeRows finds the rows a write will change: by the primary keys of its
// model value when they are set, else by running its WHERE as a key-only
// SELECT in the write's transaction (row-locked on PostgreSQL, so they stay
// the rows it changes). byKey says the rows came from the model value and
// may not exist yet.
func (p *Plugin) writeRows(db *gorm.DB, st *state, op string) (rows []pkRow, byKey bool, err error) {
	stmt := db.Statement
	m := st.m
	complete := true
	if m.typ != nil {
		structsOf(stmt.ReflectValue, m.typ, func(v reflect.Value) {
			if r, ok := m.pkRow(stmt.Context, stmt.Table, v); ok {
				rows = append(rows, r)
			} else {
				complete = false
			}
		})
	}
	if op == opCreate {
		if v := stmt.ReflectValue; v.Kind() == reflect.Map {
			if r, ok := mapRow(m, stmt.Table, v); ok {
				rows = append(rows, r)
			}
		}
		return rows, true, nil // new rows without a key need no lock
	}
	if len(rows) > 0 && complete {
		return rows, true, nil
	}
	where, ok := stmt.Clauses["WHERE"].Expression.(clause.Where)
	if !ok || len(where.Exprs) == 0 {
		return nil, false, fmt.Errorf("%w: a global %s of lockable table %s is refused; add a WHERE", ErrInvalid, op, stmt.Table)
	}
	targets, err := p.preselect(db, m, true)
	if err != nil {
		return nil, false, err
	}
	for _, tg := range targets {
		rows = append(rows, pkRow{k: tg.k})
	}
	return rows, false, nil
}

// mapRow reads the key of a row given as a map (Create(map…)).
func mapRow(m *model, table string, v reflect.Value) (pkRow, bool) {
	vals := make([]any, len(m.pk))
	parts := make([]string, len(m.pk))
	for i, f := range m.pk {
		var e reflect.Value
		for _, name := range []string{f.DBName, f.Name} {
			if e = v.MapIndex(reflect.ValueOf(name)); e.IsValid() {
				break
			}
		}
		if !e.IsValid() || e.IsZero() {
			return pkRow{}, false
		}
		vals[i], parts[i] = e.Interface(), keyText(e.Interface())
	}
	return pkRow{key{table, encodeKey(parts)}, vals}, true
}

// conflictOnKey says whether an upsert's conflict target is the primary
// key (GORM's Save and association saves use it, or name no columns).
func conflictOnKey(stmt *gorm.Statement, m *model) bool {
	c, _ := stmt.Clauses["ON CONFLICT"].Expression.(clause.OnConflict)
	if len(c.Columns) == 0 {
		// GORM fills in the primary key for UpdateAll only; elsewhere
		// SQLite would take any unique index.
		return c.OnConstraint == "" && c.UpdateAll
	}
	if len(c.Columns) != len(m.pk) {
		return false
	}
	for i, col := range c.Columns {
		if col.Name != m.pk[i].DBName && col.Name != m.pk[i].Name {
			return false
		}
	}
	return true
}

// replaces says whether an INSERT carries a REPLACE modifier (SQLite's
// INSERT OR REPLACE), which deletes whatever row it conflicts with.
func replaces(stmt *gorm.Statement) bool {
	ins, ok := stmt.Clauses["INSERT"].Expression.(clause.Insert)
	return ok && strings.Contains(strings.ToUpper(ins.Modifier), "REPLACE")
}

// upserts says whether an INSERT overwrites rows that exist (Save, and
// association saves with FullSaveAssociations).
func upserts(stmt *gorm.Statement) bool {
	c, ok := stmt.Clauses["ON CONFLICT"].Expression.(clause.OnConflict)
	return ok && !c.DoNothing && (c.UpdateAll || len(c.DoUpdates) > 0)
}

// fence is the last check before the write commits: the session must still
// hold a valid Write lock on every row it changed. On PostgreSQL the key
// rows are row-locked until commit, so a takeover of an expired lock either
// committed before this check (and the write fails) or waits for the commit.
func (p *Plugin) fence(db *gorm.DB) {
	st := stateOf(db)
	if st == nil || db.Error != nil {
		return
	}
	if st.bulk >= 0 && db.Statement.RowsAffected > st.bulk {
		st.fail(db, fmt.Errorf("%w: the %s of %s changed %d rows, but only %d were checked; a row began to match during the write",
			ErrNotLocked, st.op, db.Statement.Table, db.Statement.RowsAffected, st.bulk))
		return
	}
	if len(st.required) == 0 || st.ifChanged && db.Statement.RowsAffected == 0 {
		return
	}
	_, free, err := st.t.writeHolds(direct(db), st.required, st.owner, true)
	if err == nil && len(free) > 0 {
		err = notLockedForWrite(st.op, free)
	}
	if err != nil && !st.ifChanged {
		err = fmt.Errorf("%w (the lock was lost before the %s committed)", err, st.op)
	}
	if err != nil {
		st.fail(db, err)
	}
}

// writeHolds sorts keys into those the session holds a valid Write lock
// on and those nobody holds; a key someone else holds (or reads) is a
// *LockedError. share row-locks the key rows until the transaction ends
// (PostgreSQL), so no takeover can commit in between.
func (t *lockTable) writeHolds(c conn, keys []key, o Owner, share bool) (mine, free []key, err error) {
	keys = sortKeys(keys)
	for _, batch := range chunks(keys) {
		krs, now, err := t.keyRows(c, batch, share)
		if err != nil {
			return nil, nil, err
		}
		var reading []key
		for _, k := range batch {
			kr, ok := krs[k]
			switch {
			case !ok || !kr.live(now) || kr.Access == accessFree:
				free = append(free, k)
			case kr.Access == Write && kr.Owner.Session == o.Session:
				mine = append(mine, k)
			case kr.Access == Write:
				return nil, nil, refused(k, Write, []Lock{kr.Lock})
			default:
				reading = append(reading, k)
			}
		}
		readers, err := t.readersOf(c, reading)
		if err != nil {
			return nil, nil, err
		}
		for _, k := range reading {
			var live []Lock
			for _, r := range readers[k] {
				if r.live(now) {
					live = append(live, r.Lock)
				}
			}
			var others []Lock
			for _, l := range live {
				if l.Owner.Session != o.Session {
					others = append(others, l)
				}
			}
			if len(others) > 0 {
				return nil, nil, refused(k, Write, others)
			}
			free = append(free, k) // read by the session alone: it holds no Write lock
		}
	}
	return mine, free, nil
}

// keyRows reads the key rows of keys with the database's clock.
func (t *lockTable) keyRows(c conn, keys []key, share bool) (map[key]row, time.Time, error) {
	list, args := keyList(keys)
	q := `SELECT ` + lockColumns + `, ` + t.d.now + ` FROM ` + t.table + ` WHERE holder = '' AND (resource, lock_id) IN (VALUES ` + list + `)`
	q += ` ORDER BY resource, lock_id` // the one order every batch takes key rows in
	if share && t.d.dollar {
		q += ` FOR SHARE`
	}
	return queryKeyRows(c, t.d.bind(q), args)
}

// checkMemberWrite checks a write to aggregate members against their
// roots' Write locks: the roots the rows belong to now (read in the write's
// transaction) and, for new members and members moved to another root, the
// roots they will belong to, which must exist.
func (p *Plugin) checkMemberWrite(db *gorm.DB, st *state, op string) {
	roots, err := p.memberWriteRoots(db, st, op)
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
	mine, free, err := st.t.writeHolds(direct(db), keys, st.owner, false)
	if err == nil && len(free) > 0 {
		err = notLockedForWrite(op, free)
	}
	if err != nil {
		st.fail(db, err)
		return
	}
	st.required = mine
}

func (p *Plugin) memberWriteRoots(db *gorm.DB, st *state, op string) ([]target, error) {
	stmt, m := db.Statement, st.m
	// Where the rows will belong: the foreign keys the write sets.
	var next []any
	if op != opDelete {
		if links, _ := memberLinks(stmt.Context, m, stmt.ReflectValue); op == opCreate || stmt.Dest == stmt.Model || isStruct(stmt.Dest) {
			next = append(next, links...)
		}
		next = append(next, mapLinks(m, stmt.ReflectValue)...)
		next = append(next, mapLinks(m, reflect.ValueOf(stmt.Dest))...)
	}
	// Where they belong now.
	var now []any
	if op != opCreate {
		var pks [][]any
		complete := true
		structsOf(stmt.ReflectValue, m.typ, func(v reflect.Value) {
			if r, ok := m.pkRow(stmt.Context, m.table, v); ok {
				pks = append(pks, r.vals)
			} else {
				complete = false
			}
		})
		var err error
		switch {
		case len(pks) > 0 && complete:
			now, err = p.linksOfRows(db, m, pks)
			st.bulk = int64(len(pks))
		default:
			where, ok := stmt.Clauses["WHERE"].Expression.(clause.Where)
			if !ok || len(where.Exprs) == 0 {
				return nil, fmt.Errorf("%w: a global %s of lockable table %s is refused; add a WHERE", ErrInvalid, op, stmt.Table)
			}
			now, err = p.preselectLinks(db, m, true)
			st.bulk = int64(len(now))
		}
		if err != nil {
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

func isStruct(v any) bool {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	return rv.Kind() == reflect.Struct
}

// mapLinks reads a member's foreign key from a map of values (Updates(map),
// Update("order_id", …), Create(map)).
func mapLinks(m *model, v reflect.Value) []any {
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Map || v.Type().Key().Kind() != reflect.String {
		return nil
	}
	for _, name := range []string{m.root.field.DBName, m.root.field.Name} {
		if e := v.MapIndex(reflect.ValueOf(name)); e.IsValid() && !e.IsZero() {
			return []any{e.Interface()}
		}
	}
	return nil
}
