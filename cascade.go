package offlinelock

import (
	"fmt"
	"reflect"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock/internal/sqlscan"

	"github.com/offlinelock/offlinelock/internal/model"
)

// Writes the database cascades: a foreign key declared with GORM's
// constraint:OnDelete:CASCADE (or SET NULL, SET DEFAULT) makes a delete of
// a parent row change rows of the child table too, and OnUpdate does the
// same for an update of the parent's key. When the child table is
// lockable, those rows need the session's Write locks like any other row
// the write changes. Constraints the models do not declare are the
// schema's business: see docs/fail-closed.md.

// checkCascades requires the session's Write locks on the lockable rows
// op (a delete, or an update of the key) of rows cascades to, before the
// write runs.
func (b *binding) checkCascades(db *gorm.DB, st *state, rows []pkRow, op opKind) error {
	p := b.p
	if len(st.m.PK) != 1 || len(p.reg.CascadesOf(st.m.Table, op == opDelete, op == opUpdate)) == 0 || op == opUpdate && !setsKey(db, st.m) {
		return nil
	}
	ids := make([]any, len(rows))
	for i, r := range rows {
		ids[i] = st.m.KeyArgs([]any{r.k.ID})[0]
	}
	keys, err := p.cascadedKeys(db, cascadeStep{table: st.m.Table, keyColumn: st.m.PK[0].DBName, op: op, ids: ids})
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

// setsKey says whether the update writes m's key column: what a parent's
// ON UPDATE actions follow.
func setsKey(db *gorm.DB, m *model.Model) bool {
	stmt := db.Statement
	if set, ok := stmt.Clauses["SET"].Expression.(clause.Set); ok {
		for _, a := range set {
			if model.NamesField(stmt.Schema, a.Column.Name, m.PK[0]) {
				return true
			}
		}
	}
	if samePointer(stmt.Dest, stmt.Model) {
		return false // Save and Updates of the model itself: its key is the WHERE
	}
	dest := reflect.Indirect(reflect.ValueOf(stmt.Dest))
	switch {
	case dest.Kind() == reflect.Map && dest.Type().Key().Kind() == reflect.String:
		return len(model.MapKeysNaming(stmt.Schema, dest, m.PK[0])) > 0
	case dest.Kind() == reflect.Struct:
		vals, _, _ := model.ValueRows(db, reflect.ValueOf(stmt.Dest), m.PK)
		return len(vals) > 0
	}
	return false
}

// checkParentWrite is checkCascades for a delete, or an update of the key,
// of a table that is not lockable (an untagged parent) whose declared
// foreign-key actions reach lockable rows: those rows need the session's
// Write locks, checked before the write's hooks, as for a lockable
// parent. Without such rows the write goes on as the plugin never saw it
// (no owner needed).
func (b *binding) checkParentWrite(db *gorm.DB, op opKind) {
	p := b.p
	stmt := db.Statement
	if db.DryRun || stmt.Schema != nil && op == opDelete && len(stmt.Schema.DeleteClauses) > 0 && !stmt.Unscoped {
		return // a soft delete deletes no row: nothing cascades
	}
	if stmt.Schema == nil || stmt.TableExpr != nil && !namesOnly(stmt.TableExpr, stmt.Schema.Table) {
		p.refuseParentByTable(db, op) // Table("…") alone, or over another model
		return
	}
	m := p.reg.ModelOf(stmt.Schema, db.NamingStrategy)
	if m.Lockable || len(m.PK) != 1 || len(p.reg.CascadesOf(m.Table, op == opDelete, op == opUpdate)) == 0 || op == opUpdate && !setsKey(db, m) || p.bypassed(db, op) {
		return
	}
	t, err := p.storeFor(db)
	if err != nil {
		db.AddError(err)
		return
	}
	probe := &state{m: m, op: op, bulk: -1, t: t, caps: t.caps}
	rows, _, err := b.writeRows(db, probe, op)
	if err != nil || len(rows) == 0 {
		db.AddError(err)
		return
	}
	ids := make([]any, len(rows))
	for i, r := range rows {
		ids[i] = m.KeyArgs([]any{r.k.ID})[0]
	}
	keys, err := p.cascadedKeys(db, cascadeStep{table: m.Table, keyColumn: m.PK[0].DBName, op: op, ids: ids})
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

// refuseParentByTable refuses a delete, or an update of the key, of a
// table named alone (Table("…") with no model) whose declared foreign-key
// actions reach lockable rows: without the parent's model the plugin
// cannot read which rows the write changes (the database guard stands
// behind it on PostgreSQL and MariaDB; SQLite has none).
func (p *Plugin) refuseParentByTable(db *gorm.DB, op opKind) {
	stmt := db.Statement
	names := []string{stmt.Table}
	if stmt.TableExpr != nil { // "schema.table", a quoted name, an alias, a join
		names = sqlscan.Mentions(stmt.TableExpr.SQL, func(ident string) (string, bool) {
			return strings.ToLower(ident), len(p.reg.CascadesOf(ident, op == opDelete, op == opUpdate)) > 0
		})
	}
	for _, name := range names {
		refs := p.reg.CascadesOf(name, op == opDelete, op == opUpdate)
		if len(refs) == 0 || op == opUpdate && !setsParentKey(stmt, refs) {
			continue
		}
		if !p.bypassed(db, op) {
			db.AddError(unenforceable(name, fmt.Sprintf("a %s by table name whose foreign-key actions reach lockable table %s changes rows the plugin cannot see, of", op, refs[0].Table)))
		}
		return
	}
}

// namesOnly says whether a table expression is table itself, plainly
// (Table("folders") over the Folder model): the model's own write.
func namesOnly(expr *clause.Expr, table string) bool {
	name, _, ok := sqlscan.SimpleTable(expr.SQL)
	return ok && len(expr.Vars) == 0 && strings.EqualFold(name, table)
}

// setsParentKey says whether an update by table name may write the
// parent's key that refs follow: a map's or SET's column naming it, or any
// column where refs do not say which it is.
func setsParentKey(stmt *gorm.Statement, refs []model.CascadeRef) bool {
	var cols []string
	if set, ok := stmt.Clauses["SET"].Expression.(clause.Set); ok {
		for _, a := range set {
			cols = append(cols, a.Column.Name)
		}
	}
	if dest := reflect.Indirect(reflect.ValueOf(stmt.Dest)); dest.Kind() == reflect.Map && dest.Type().Key().Kind() == reflect.String {
		for _, k := range dest.MapKeys() {
			cols = append(cols, k.String())
		}
	} else if dest.IsValid() && len(cols) == 0 {
		return true // a struct or anything else: its columns are not read here
	}
	for _, r := range refs {
		for _, c := range cols {
			if r.ParentColumn == "" || strings.EqualFold(c, r.ParentColumn) {
				return true
			}
		}
	}
	return false
}
