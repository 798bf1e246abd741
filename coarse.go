package offlinelock

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/offlinelock/offlinelock/internal/gormstmt"
	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// rootsOf maps member rows, given by the raw values of their foreign key,
// to their root's lock targets (model.RootKeys).
func (p *Plugin) rootsOf(db *gorm.DB, m *model.Model, links []any) ([]target, error) {
	root, ids, err := p.reg.RootKeys(m, links, func(parent *model.Model, pks []any) ([]any, error) {
		return p.linksOf(db, parent, pks)
	})
	if err != nil || root == nil {
		return nil, err
	}
	out := make([]target, len(ids))
	for i, id := range ids {
		out[i] = target{key{Resource: root.Table, ID: id}, root}
	}
	return out, nil
}

// linksOf reads the foreign keys of m's rows whose primary keys are pks.
func (p *Plugin) linksOf(db *gorm.DB, m *model.Model, pks []any) ([]any, error) {
	var out []any
	for start := 0; start < len(pks); start += batchSize {
		batch := pks[start:min(start+batchSize, len(pks))]
		// A parent cannot move to another root until the lock is taken:
		// a locking read where the database has row locks.
		q := lockstore.KeysIn(db.Statement.Quote(m.Root.Field.DBName), db.Statement.Quote(m.Table),
			db.Statement.Quote(m.PK[0].DBName), len(batch), p.rowLocking(db).ShareLock)
		q, args := gormstmt.Bind(db, q, batch)
		rows, err := rowsOf(db, q, args, 1)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			out = append(out, r[0])
		}
	}
	return out, nil
}

// memberRootOf finds the existing root of one member value: by its
// foreign key when set, else by the one stored in its row.
func (p *Plugin) memberRootOf(db *gorm.DB, m *model.Model, v reflect.Value) (target, error) {
	links, _ := m.RootLinks(db.Statement.Context, v)
	if len(links) == 0 {
		k, vals, ok := m.RowKey(db.Statement.Context, v)
		if !ok {
			return target{}, invalid("%s has neither its root key %s nor its primary key set", m.Name, m.Root.Field.Name)
		}
		var err error
		if links, err = p.linksOfRows(db, m, [][]any{vals}); err != nil {
			return target{}, err
		}
		if len(links) == 0 {
			return target{}, invalid("%s %s does not exist, so it has no root", m.Table, k.ID)
		}
	}
	roots, err := p.rootsOf(db, m, links)
	if err != nil {
		return target{}, err
	}
	if err := p.rootsExist(db, roots); err != nil {
		return target{}, err
	}
	return roots[0], nil
}

// linksOfRows reads the foreign keys of m's rows given by primary key
// values, in any spelling.
func (p *Plugin) linksOfRows(db *gorm.DB, m *model.Model, rows [][]any) ([]any, error) {
	if len(m.PK) != 1 {
		return nil, invalid("member %s needs a single-column primary key", m.Name)
	}
	pks := make([]any, len(rows))
	for i, r := range rows {
		pks[i] = m.KeyArgs(r)[0]
	}
	return p.linksOf(db, m, pks)
}

// rootsExist checks that every root row exists.
func (p *Plugin) rootsExist(db *gorm.DB, roots []target) error {
	byModel := map[*model.Model][]pkRow{}
	for _, r := range roots {
		byModel[r.m] = append(byModel[r.m], pkRow{k: r.k, vals: []any{r.k.ID}})
	}
	for m, rows := range byModel {
		found, err := p.existing(db, m, m.Table, rows)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if !found[r.k] {
				return fmt.Errorf("%w: root %s %s does not exist", ErrInvalid, r.k.Resource, r.k.ID)
			}
		}
	}
	return nil
}

// checkCascades requires the session's Write locks on the lockable rows a
// delete, or an update of the key, cascades to (model.CascadeRef;
// undeclared constraints: docs/fail-closed.md), before the write runs.
func (b *binding) checkCascades(db *gorm.DB, st *state, rows []pkRow, op opKind) error {
	if !b.p.reg.Cascades(db, st.m, op == opDelete) {
		return nil
	}
	keys, err := b.p.cascadedKeys(db, st.m, op, rows)
	if err != nil || len(keys) == 0 {
		return err
	}
	return b.requireCascaded(db, st, op, keys)
}

// requireCascaded requires the session's Write locks on keys, the
// lockable rows op cascades to.
func (b *binding) requireCascaded(db *gorm.DB, st *state, op opKind, keys []key) error {
	mine, err := b.requireWriteLocks(db, st, op+" (cascaded)", keys)
	if err != nil {
		return err
	}
	st.required = append(st.required, mine...)
	st.ifChanged = false
	return nil
}

// checkParentWrite is checkCascades for a parent that is not lockable;
// a write that reaches no lockable row goes on unseen (no owner needed).
func (b *binding) checkParentWrite(db *gorm.DB, op opKind) {
	p := b.p
	stmt := db.Statement
	if db.DryRun || stmt.Schema != nil && op == opDelete && len(stmt.Schema.DeleteClauses) > 0 && !stmt.Unscoped {
		return // a soft delete deletes no row: nothing cascades
	}
	if stmt.Schema == nil || stmt.TableExpr != nil && !model.NamesOnly(stmt.TableExpr, stmt.Schema.Table) {
		// Table("…") alone, or over another model: without the parent's
		// model the plugin cannot read which rows the write changes.
		name, refs := p.reg.ParentNamed(stmt, op == opDelete, op == opUpdate)
		if refs != nil && !p.bypassed(db, op) {
			db.AddError(unenforceable(name, fmt.Sprintf("a %s by table name whose foreign-key actions reach lockable table %s changes rows the plugin cannot see, of", op, refs[0].Table)))
		}
		return
	}
	m := p.reg.ModelOf(stmt.Schema, db.NamingStrategy)
	if m.Lockable || !p.reg.Cascades(db, m, op == opDelete) || p.bypassed(db, op) {
		return
	}
	t, err := p.storeFor(db)
	if err != nil {
		db.AddError(err)
		return
	}
	probe := &state{m: m, op: op, bulk: -1, t: t, caps: t.caps}
	rows, _, err := b.writeRows(db, probe, op)
	var keys []key
	if err == nil {
		keys, err = p.cascadedKeys(db, m, op, rows) // no rows: no keys
	}
	if err != nil || len(keys) == 0 {
		db.AddError(err)
		return
	}
	if st := b.start(db, m, op); st != nil {
		if err := b.requireCascaded(db, st, op, keys); err != nil {
			st.fail(db, err)
		}
	}
}

// cascadedKeys lists the lock keys of the lockable rows a write of m's
// rows changes through foreign-key actions, at any depth, row-locked
// where the store locks rows.
func (p *Plugin) cascadedKeys(db *gorm.DB, m *model.Model, op opKind, rows []pkRow) ([]key, error) {
	ids := make([]any, len(rows))
	for i, r := range rows {
		ids[i] = m.KeyArgs([]any{r.k.ID})[0]
	}
	var out []key
	err := p.reg.WalkCascades(model.CascadeStep{Table: m.Table, KeyColumn: m.PK[0].DBName, Delete: op == opDelete, IDs: ids}, p.childRows(db),
		func(m *model.Model, rows [][]any) error {
			keys, err := p.keysOfRows(db, m, rows)
			out = append(out, keys...)
			return err
		})
	return out, joinRefusal(err)
}

// childRows reads, for the walk, columns of table's rows whose column is
// one of vals, row-locked where the store locks rows.
func (p *Plugin) childRows(db *gorm.DB) model.RowReader {
	return func(table, column string, columns []string, vals []any) ([][]any, error) {
		q := model.SelectIn(db, table, column, columns, vals, p.lockRows(db))
		return rowsOf(db, q.SQL.String(), q.Vars, len(columns))
	}
}

// A join table's row is part of the records it relates: writing it needs
// the Write lock of the record on each lockable side.

// joinRefusal is a model.PartialJoin as the refusal the application sees.
func joinRefusal(err error) error {
	var pj *model.PartialJoin
	if errors.As(err, &pj) {
		return unenforceable(pj.Side.Table, "join table "+pj.Join+" does not hold the whole key of lockable table")
	}
	return err
}

// beforeJoinWrite checks a write to a join table against the Write locks
// of the records its rows relate, before the write's hooks run.
func (b *binding) beforeJoinWrite(db *gorm.DB, op opKind) {
	p := b.p
	owners, err := p.reg.JoinOwners(db.Statement.Table)
	if (len(owners) == 0 && err == nil) || p.bypassed(db, op) {
		return
	}
	if err != nil {
		db.AddError(joinRefusal(err))
		return
	}
	st := b.start(db, owners[0].Model, op)
	if st == nil {
		return
	}
	if err := st.begin(db, true); err != nil {
		st.fail(db, err)
		return
	}
	var keys []key
	for _, o := range owners {
		rows, err := p.joinRows(db, o, op)
		if err == nil && len(rows) > 0 {
			var ks []key
			ks, err = p.keysOfRows(db, o.Model, rows)
			keys = append(keys, ks...)
		}
		if err != nil {
			st.fail(db, err)
			return
		}
	}
	if len(keys) == 0 {
		return
	}
	mine, err := b.requireWriteLocks(db, st, op, keys)
	if err != nil {
		st.fail(db, err)
		return
	}
	st.required = mine
}

// joinRows reads the keys of o's records that the write's rows relate:
// from the rows a Create inserts, or the rows an Update or Delete matches.
func (p *Plugin) joinRows(db *gorm.DB, o model.JoinOwner, op opKind) ([][]any, error) {
	if op == opCreate {
		if rows, ok := o.InsertedRows(db); ok {
			return rows, nil
		}
		return nil, unenforceable(o.Model.Table, "a join-table row without the whole key relates a record of")
	}
	where, ok := db.Statement.Clauses["WHERE"].Expression.(clause.Where)
	if !ok || len(where.Exprs) == 0 {
		return nil, fmt.Errorf("%w: a global %s of join table %s is refused; add a WHERE", ErrInvalid, op, db.Statement.Table)
	}
	cols := make([]clause.Column, len(o.Columns))
	for i, c := range o.Columns {
		cols[i] = clause.Column{Table: clause.CurrentTable, Name: c}
	}
	q := p.keySelect(db, cols, true)
	return rowsOf(db, q.SQL.String(), q.Vars, len(cols))
}

// keysOfRows maps m's rows' key values to their lock keys (a member's:
// its root's).
func (p *Plugin) keysOfRows(db *gorm.DB, m *model.Model, rows [][]any) ([]key, error) {
	out := make([]key, 0, len(rows))
	if m.Root != nil {
		links, err := p.linksOfRows(db, m, rows)
		if err != nil {
			return nil, err
		}
		ts, err := p.rootsOf(db, m, links)
		for _, t := range ts {
			out = append(out, t.k)
		}
		return out, err
	}
	for _, r := range rows {
		k, err := keyOf(m, r)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}
