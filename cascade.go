package offlinelock

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/offlinelock/offlinelock/internal/sqlscan"
)

// Writes the database cascades: a foreign key declared with GORM's
// constraint:OnDelete:CASCADE (or SET NULL, SET DEFAULT) makes a delete of
// a parent row change rows of the child table too, and OnUpdate does the
// same for an update of the parent's key. When the child table is
// lockable, those rows need the session's Write locks like any other row
// the write changes. Constraints the models do not declare are the
// schema's business: see docs/fail-closed.md.

// cascadeRef is a child table whose rows change when rows of its parent
// are deleted (onDelete) or have their key changed (onUpdate): column
// holds the parent's key, parentColumn ("" where unknown). keepsOnDelete
// says the delete action sets the column (SET NULL, SET DEFAULT) rather
// than deleting the child rows, so the child's own children are not
// reached; childKey is the child's one-column primary key ("" where
// unknown), through which the walk goes on to the next level.
type cascadeRef struct {
	table, column, parentColumn string
	childKey                    string
	onDelete, onUpdate          bool
	keepsOnDelete               bool
	// from is the table of the model whose relationships declared it
	// (noteCascades), "" for the catalog's: a model parsed again under
	// that table's name (another type, a changed struct) replaces what
	// the earlier one declared.
	from string
}

// changesChildren says whether a foreign key's action changes the child
// rows.
func changesChildren(action string) bool {
	return strings.EqualFold(strings.TrimSpace(action), "CASCADE") || setsChildren(action)
}

// setsChildren says whether a foreign key's action rewrites the child
// rows' column rather than deleting them.
func setsChildren(action string) bool {
	a := strings.ToUpper(strings.TrimSpace(action))
	return a == "SET NULL" || a == "SET DEFAULT"
}

// noteCascades records the cascading foreign keys s's relationships
// declare: of one column, on the parent's primary key.
func (r *registry) noteCascades(s *schema.Schema) {
	var parents []string
	var refs []cascadeRef
	for _, rel := range s.Relationships.Relations {
		c := rel.ParseConstraint()
		if c == nil || c.Schema == nil || c.ReferenceSchema == nil || len(c.ForeignKeys) != 1 {
			continue
		}
		ref := cascadeRef{table: c.Schema.Table, column: c.ForeignKeys[0].DBName, onDelete: changesChildren(c.OnDelete),
			onUpdate:      changesChildren(c.OnUpdate) && len(c.References) == 1 && c.References[0].PrimaryKey,
			keepsOnDelete: setsChildren(c.OnDelete)}
		if len(c.References) == 1 {
			ref.parentColumn = c.References[0].DBName
		}
		if len(c.Schema.PrimaryFields) == 1 {
			ref.childKey = c.Schema.PrimaryFields[0].DBName
		}
		if ref.onDelete || ref.onUpdate {
			ref.from = strings.ToLower(s.Table)
			parents, refs = append(parents, c.ReferenceSchema.Table), append(refs, ref)
		}
	}
	for _, table := range r.replaceCascades(strings.ToLower(s.Table), parents, refs) {
		r.changed(table)
	}
}

// replaceCascades drops the cascades model table from declared before and
// adds refs (each of parents[i]), at once: a reader sees the one set or the
// other. It returns the child tables whose cascades changed.
func (r *registry) replaceCascades(from string, parents []string, refs []cascadeRef) []string {
	r.joinsMu.Lock()
	defer r.joinsMu.Unlock()
	var changed []string
	for parent, list := range r.cascades {
		kept := list[:0:0]
		for _, c := range list {
			if c.from == from && from != "" && !slices.Contains(refs, c) {
				changed = append(changed, c.table)
				continue
			}
			kept = append(kept, c)
		}
		r.cascades[parent] = kept
	}
	for i, ref := range refs {
		if r.addCascadeLocked(parents[i], ref) {
			changed = append(changed, ref.table)
		}
	}
	return changed
}

func (r *registry) addCascade(parent string, ref cascadeRef) bool {
	r.joinsMu.Lock()
	defer r.joinsMu.Unlock()
	return r.addCascadeLocked(parent, ref)
}

// addCascadeLocked is addCascade with joinsMu held.
func (r *registry) addCascadeLocked(parent string, ref cascadeRef) bool {
	name := strings.ToLower(parent)
	for i, c := range r.cascades[name] {
		if strings.EqualFold(c.table, ref.table) && c.column == ref.column {
			merged := cascadeRef{table: c.table, column: c.column, parentColumn: cmp.Or(c.parentColumn, ref.parentColumn),
				childKey: cmp.Or(c.childKey, ref.childKey), onDelete: c.onDelete || ref.onDelete, onUpdate: c.onUpdate || ref.onUpdate,
				keepsOnDelete: keepsBoth(c, ref), from: cmp.Or(c.from, ref.from)}
			r.cascades[name][i] = merged
			return merged != c
		}
	}
	if r.cascades == nil {
		r.cascades = map[string][]cascadeRef{}
	}
	r.cascades[name] = append(r.cascades[name], ref)
	r.anyCascade.Store(true)
	return true
}

// keepsBoth says whether two records of one foreign key agree that its
// delete action keeps the child rows: where they differ, the delete is
// taken to delete them, which reaches further.
func keepsBoth(a, b cascadeRef) bool {
	switch {
	case a.onDelete && b.onDelete:
		return a.keepsOnDelete && b.keepsOnDelete
	case a.onDelete:
		return a.keepsOnDelete
	}
	return b.keepsOnDelete
}

// cascadesFrom lists the foreign keys of table that cascade deletes or
// updates of the parent's key, by parent, for the catalog, so that a node
// that never parsed the models follows them too.
func (r *registry) cascadesFrom(table string) []columnSpec {
	r.joinsMu.RLock()
	defer r.joinsMu.RUnlock()
	var out []columnSpec
	for parent, refs := range r.cascades {
		for _, c := range refs {
			if (c.onDelete || c.onUpdate) && strings.EqualFold(c.table, table) {
				out = append(out, columnSpec{Name: parent, Column: c.column, Key: c.parentColumn, OnUpdate: c.onUpdate, NoDelete: !c.onDelete,
					KeepsOnDelete: c.onDelete && c.keepsOnDelete})
			}
		}
	}
	return out
}

// cascadesOf lists the foreign keys that cascade op (a delete, or an
// update of the key) of parent's rows into other tables.
func (r *registry) cascadesOf(parent string, op opKind) []cascadeRef {
	r.joinsMu.RLock()
	defer r.joinsMu.RUnlock()
	var out []cascadeRef
	for _, c := range r.cascades[strings.ToLower(parent)] {
		if op == opDelete && c.onDelete || op == opUpdate && c.onUpdate {
			out = append(out, c)
		}
	}
	return out
}

// checkCascades requires the session's Write locks on the lockable rows
// op (a delete, or an update of the key) of rows cascades to, before the
// write runs.
func (b *binding) checkCascades(db *gorm.DB, st *state, rows []pkRow, op opKind) error {
	p := b.p
	if len(st.m.pk) != 1 || len(p.reg.cascadesOf(st.m.table, op)) == 0 || op == opUpdate && !setsKey(db, st.m) {
		return nil
	}
	ids := make([]any, len(rows))
	for i, r := range rows {
		ids[i] = st.m.keyArgs([]any{r.k.ID})[0]
	}
	keys, err := p.cascadedKeys(db, cascadeStep{table: st.m.table, keyColumn: st.m.pk[0].DBName, op: op, ids: ids})
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
func setsKey(db *gorm.DB, m *model) bool {
	stmt := db.Statement
	if set, ok := stmt.Clauses["SET"].Expression.(clause.Set); ok {
		for _, a := range set {
			if namesField(stmt.Schema, a.Column.Name, m.pk[0]) {
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
		return len(mapKeysNaming(stmt.Schema, dest, m.pk[0])) > 0
	case dest.Kind() == reflect.Struct:
		vals, _, _ := valueRows(db, reflect.ValueOf(stmt.Dest), m.pk)
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
	m := p.reg.modelOf(stmt.Schema, db.NamingStrategy)
	if m.lockable || len(m.pk) != 1 || len(p.reg.cascadesOf(m.table, op)) == 0 || op == opUpdate && !setsKey(db, m) || p.bypassed(db, op) {
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
		ids[i] = m.keyArgs([]any{r.k.ID})[0]
	}
	keys, err := p.cascadedKeys(db, cascadeStep{table: m.table, keyColumn: m.pk[0].DBName, op: op, ids: ids})
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
			return strings.ToLower(ident), len(p.reg.cascadesOf(ident, op)) > 0
		})
	}
	for _, name := range names {
		refs := p.reg.cascadesOf(name, op)
		if len(refs) == 0 || op == opUpdate && !setsParentKey(stmt, refs) {
			continue
		}
		if !p.bypassed(db, op) {
			db.AddError(unenforceable(name, fmt.Sprintf("a %s by table name whose foreign-key actions reach lockable table %s changes rows the plugin cannot see, of", op, refs[0].table)))
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
func setsParentKey(stmt *gorm.Statement, refs []cascadeRef) bool {
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
			if r.parentColumn == "" || strings.EqualFold(c, r.parentColumn) {
				return true
			}
		}
	}
	return false
}
