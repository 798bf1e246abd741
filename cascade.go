package offlinelock

import (
	"database/sql"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// Deletes the database cascades: a foreign key declared with GORM's
// constraint:OnDelete:CASCADE (or SET NULL, SET DEFAULT) makes a delete of
// a parent row change rows of the child table too. When the child table is
// lockable, those rows need the session's Write locks like any other row
// the delete changes. Constraints the models do not declare are the
// schema's business: see docs/fail-closed.md.

// cascadeRef is a child table whose rows change when rows of its parent
// are deleted: column holds the parent's key.
type cascadeRef struct {
	table, column string
}

// cascadeDeletes says whether an ON DELETE action changes the child rows.
func cascadeDeletes(action string) bool {
	a := strings.ToUpper(strings.TrimSpace(action))
	return a == "CASCADE" || a == "SET NULL" || a == "SET DEFAULT"
}

// noteCascades records the cascading foreign keys s's relationships declare.
func (r *registry) noteCascades(s *schema.Schema) {
	for _, rel := range s.Relationships.Relations {
		c := rel.ParseConstraint()
		if c == nil || c.Schema == nil || c.ReferenceSchema == nil || len(c.ForeignKeys) != 1 || !cascadeDeletes(c.OnDelete) {
			continue
		}
		if r.addCascade(c.ReferenceSchema.Table, cascadeRef{table: c.Schema.Table, column: c.ForeignKeys[0].DBName}) {
			r.changed(c.Schema.Table)
		}
	}
}

func (r *registry) addCascade(parent string, ref cascadeRef) bool {
	name := strings.ToLower(parent)
	r.joinsMu.Lock()
	defer r.joinsMu.Unlock()
	for _, c := range r.cascades[name] {
		if strings.EqualFold(c.table, ref.table) && c.column == ref.column {
			return false
		}
	}
	if r.cascades == nil {
		r.cascades = map[string][]cascadeRef{}
	}
	r.cascades[name] = append(r.cascades[name], ref)
	return true
}

// cascadesFrom lists the cascading foreign keys of table, by parent.
func (r *registry) cascadesFrom(table string) []columnSpec {
	r.joinsMu.RLock()
	defer r.joinsMu.RUnlock()
	var out []columnSpec
	for parent, refs := range r.cascades {
		for _, c := range refs {
			if strings.EqualFold(c.table, table) {
				out = append(out, columnSpec{Name: parent, Column: c.column})
			}
		}
	}
	return out
}

func (r *registry) cascadesOf(parent string) []cascadeRef {
	r.joinsMu.RLock()
	defer r.joinsMu.RUnlock()
	return r.cascades[strings.ToLower(parent)]
}

// cascadedKeys lists the lock keys of the lockable rows a delete of m's
// rows with the key values ids cascades to, at any depth, row-locked on
// PostgreSQL so that they stay the rows the delete changes.
func (p *Plugin) cascadedKeys(db *gorm.DB, m *model, ids []any, depth int) ([]key, error) {
	if len(ids) == 0 || depth > 8 {
		return nil, nil
	}
	var out []key
	for _, ref := range p.reg.cascadesOf(m.table) {
		child := p.reg.tableModel(ref.table)
		if child == nil || len(child.pk) != 1 {
			continue
		}
		vals, err := p.childKeys(db, child, ref.column, ids)
		if err != nil {
			return nil, err
		}
		rows := make([][]any, len(vals))
		for i, v := range vals {
			rows[i] = []any{v}
		}
		ts, err := p.targetsOfRows(db, child, rows)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			out = append(out, t.k)
		}
		deeper, err := p.cascadedKeys(db, child, vals, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, deeper...)
	}
	return out, nil
}

// childKeys reads the keys of child's rows whose column is one of ids.
func (p *Plugin) childKeys(db *gorm.DB, child *model, column string, ids []any) ([]any, error) {
	q := &gorm.Statement{DB: db, Table: child.table, Clauses: map[string]clause.Clause{}}
	q.AddClause(clause.Select{Columns: []clause.Column{{Name: child.pk[0].DBName}}})
	q.AddClause(clause.From{Tables: []clause.Table{{Name: child.table}}})
	q.AddClause(clause.Where{Exprs: []clause.Expression{clause.IN{Column: clause.Column{Name: column}, Values: ids}}})
	build := []string{"SELECT", "FROM", "WHERE"}
	if p.lockRows(db) {
		q.AddClause(clause.Locking{Strength: clause.LockingStrengthUpdate})
		build = append(build, "FOR")
	}
	q.Build(build...)
	var out []any
	_, err := direct(db).Query(q.SQL.String(), q.Vars, func(r *sql.Rows) error {
		var v any
		if err := r.Scan(&v); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// checkCascades requires the session's Write locks on the lockable rows a
// delete of rows cascades to, before the delete runs.
func (p *Plugin) checkCascades(db *gorm.DB, st *state, rows []pkRow) error {
	if len(st.m.pk) != 1 || len(p.reg.cascadesOf(st.m.table)) == 0 {
		return nil
	}
	ids := make([]any, len(rows))
	for i, r := range rows {
		ids[i] = st.m.sqlValues([]any{r.k.ID})[0]
	}
	keys, err := p.cascadedKeys(db, st.m, ids, 0)
	if err != nil || len(keys) == 0 {
		return err
	}
	return p.requireCascaded(db, st, keys)
}

// requireCascaded requires the session's Write locks on keys, the
// lockable rows a delete cascades to.
func (p *Plugin) requireCascaded(db *gorm.DB, st *state, keys []key) error {
	mine, err := p.requireWriteLocks(db, st, "delete (cascaded)", keys)
	if err != nil {
		return err
	}
	st.required = append(st.required, mine...)
	st.ifChanged = false
	return nil
}

// checkParentDelete is checkCascades for a delete of a table that is not
// lockable (an untagged parent) whose declared foreign-key actions reach
// lockable rows: those rows need the session's Write locks, checked
// before the delete's hooks, as for a lockable parent. Without such rows
// the delete goes on as the plugin never saw it (no owner needed).
func (p *Plugin) checkParentDelete(db *gorm.DB) {
	stmt := db.Statement
	if stmt.Schema == nil || stmt.TableExpr != nil || db.DryRun || (len(stmt.Schema.DeleteClauses) > 0 && !stmt.Unscoped) {
		return // a soft delete deletes no row: nothing cascades
	}
	m := p.reg.modelOf(stmt.Schema, db.NamingStrategy)
	if m.lockable || len(m.pk) != 1 || len(p.reg.cascadesOf(m.table)) == 0 || p.bypassed(db, opDelete) {
		return
	}
	t, err := p.storeFor(db)
	if err != nil {
		db.AddError(err)
		return
	}
	probe := &state{m: m, op: opDelete, bulk: -1, t: t}
	rows, _, err := p.writeRows(db, probe, opDelete)
	if err != nil || len(rows) == 0 {
		db.AddError(err)
		return
	}
	ids := make([]any, len(rows))
	for i, r := range rows {
		ids[i] = m.sqlValues([]any{r.k.ID})[0]
	}
	keys, err := p.cascadedKeys(db, m, ids, 0)
	if err != nil || len(keys) == 0 {
		db.AddError(err)
		return
	}
	if st := p.start(db, m, opDelete); st != nil {
		if err := p.requireCascaded(db, st, keys); err != nil {
			st.fail(db, err)
		}
	}
}
