package offlinelock

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/offlinelock/offlinelock/internal/model"
)

// The walk of foreign-key actions: a write of a parent's rows changes the
// rows its declared actions reach, and their deletes (ON DELETE CASCADE)
// or key changes (ON UPDATE CASCADE of a child whose key is the foreign
// key) go on to the next level, through tables that are not lockable too,
// and into many2many join tables, whose rows are the relations of the
// records on their lockable sides. The plugin checks what the database
// will change before the write runs: on SQLite no guard stands behind it.

// cascadeStep is rows of table that a write changes: deleted (opDelete),
// or with their key changed (opUpdate). ids are the values of keyColumn
// of those rows before the write.
type cascadeStep struct {
	table, keyColumn string
	op               opKind
	ids              []any
}

// cascadedKeys lists the lock keys of the lockable rows that from's write
// changes through foreign-key actions, at any depth, row-locked where the
// store locks rows so that they stay the rows the write changes. A row
// reached twice (a cycle of actions, a tree of one table) is followed
// once.
func (p *Plugin) cascadedKeys(db *gorm.DB, from cascadeStep) ([]key, error) {
	seen := map[string]bool{}
	queue := []cascadeStep{from}
	var out []key
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if s.ids = unseenIDs(seen, s); len(s.ids) == 0 {
			continue
		}
		for _, ref := range p.reg.CascadesOf(s.table, s.op == opDelete, s.op == opUpdate) {
			keys, next, err := p.cascadeInto(db, s, ref)
			if err != nil {
				return nil, err
			}
			out = append(out, keys...)
			queue = append(queue, next...)
		}
	}
	return out, nil
}

// unseenIDs keeps the ids of s not followed before, and marks them.
func unseenIDs(seen map[string]bool, s cascadeStep) []any {
	var out []any
	for _, id := range s.ids {
		if b, ok := id.([]byte); ok {
			id = string(b)
		}
		k := fmt.Sprintf("%s\x00%s\x00%v", strings.ToLower(s.table), s.op, id)
		if !seen[k] {
			seen[k] = true
			out = append(out, id)
		}
	}
	return out
}

// cascadeInto reads the rows of ref's child that s changes through ref:
// the lock keys they need (a lockable child's own or its root's, a join
// table's sides'), and the step they take further, if any.
func (p *Plugin) cascadeInto(db *gorm.DB, s cascadeStep, ref model.CascadeRef) ([]key, []cascadeStep, error) {
	parentVals, err := p.referencedValues(db, s, ref)
	if err != nil || len(parentVals) == 0 {
		return nil, nil, err
	}
	child := p.reg.TableModel(ref.Table)
	owners, err := p.joinOwners(ref.Table)
	if err != nil {
		return nil, nil, err
	}
	var groups [][]string // the columns of each set of lock keys: the child's key, each join side's
	if child != nil {
		groups = append(groups, fieldNames(child.PK))
	}
	for _, o := range owners {
		groups = append(groups, fieldNames(o.columns))
	}
	keyAt := -1 // the column of ref.childKey among those read
	cols := concat(groups)
	if child == nil && ref.ChildKey != "" {
		keyAt, cols = len(cols), append(cols, ref.ChildKey)
	} else if child != nil && len(child.PK) == 1 {
		keyAt = 0
	}
	if len(cols) == 0 {
		return nil, nil, nil
	}
	rows, err := p.childRows(db, ref.Table, ref.Column, cols, parentVals)
	if err != nil || len(rows) == 0 {
		return nil, nil, err
	}
	keys, err := p.keysOfGroups(db, child, owners, groups, rows)
	if err != nil || keyAt < 0 {
		return keys, nil, err
	}
	next := cascadeStep{table: ref.Table, keyColumn: cols[keyAt], ids: columnOf(rows, keyAt)}
	switch {
	case s.op == opDelete && !ref.KeepsOnDelete:
		next.op = opDelete // the child's rows are deleted
	case strings.EqualFold(ref.Column, cols[keyAt]):
		next.op = opUpdate // the action rewrote the child's own key
	default:
		return keys, nil, nil // only a column the child's children do not follow changed
	}
	return keys, []cascadeStep{next}, nil
}

// referencedValues are the values of the parent's column ref follows, of
// the rows s changes: s's ids where ref follows s's key column, or else
// read from the parent's rows.
func (p *Plugin) referencedValues(db *gorm.DB, s cascadeStep, ref model.CascadeRef) ([]any, error) {
	if ref.ParentColumn == "" || strings.EqualFold(ref.ParentColumn, s.keyColumn) {
		return s.ids, nil
	}
	rows, err := p.childRows(db, s.table, s.keyColumn, []string{ref.ParentColumn}, s.ids)
	return columnOf(rows, 0), err
}

// keysOfGroups maps the rows read (the columns of each group in turn) to
// the lock keys of the child's records and of the join sides' records.
func (p *Plugin) keysOfGroups(db *gorm.DB, child *model.Model, owners []joinOwner, groups [][]string, rows [][]any) ([]key, error) {
	models := make([]*model.Model, 0, len(groups))
	if child != nil {
		models = append(models, child)
	}
	for _, o := range owners {
		models = append(models, o.m)
	}
	var out []key
	at := 0
	for i, m := range models {
		part := make([][]any, len(rows))
		for j, r := range rows {
			part[j] = r[at : at+len(groups[i])]
		}
		at += len(groups[i])
		ts, err := p.targetsOfRows(db, m, part)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			out = append(out, t.k)
		}
	}
	return out, nil
}

// childRows reads columns of table's rows whose column is one of vals,
// row-locked where the store locks rows. Rows with a NULL are left out:
// a NULL holds no key.
func (p *Plugin) childRows(db *gorm.DB, table, column string, columns []string, vals []any) ([][]any, error) {
	q := &gorm.Statement{DB: db, Table: table, Clauses: map[string]clause.Clause{}}
	sel := make([]clause.Column, len(columns))
	for i, c := range columns {
		sel[i] = clause.Column{Name: c}
	}
	q.AddClause(clause.Select{Columns: sel})
	q.AddClause(clause.From{Tables: []clause.Table{{Name: table}}})
	q.AddClause(clause.Where{Exprs: []clause.Expression{clause.IN{Column: clause.Column{Name: column}, Values: vals}}})
	build := []string{"SELECT", "FROM", "WHERE"}
	if p.lockRows(db) {
		q.AddClause(clause.Locking{Strength: clause.LockingStrengthUpdate})
		build = append(build, "FOR")
	}
	q.Build(build...)
	var out [][]any
	_, err := direct(db).Query(q.SQL.String(), q.Vars, func(r *sql.Rows) error {
		v, err := scanValues(r, len(columns))
		if err == nil && !slices.Contains(v, nil) {
			out = append(out, v)
		}
		return err
	})
	return out, err
}

// fieldNames are the columns of fields.
func fieldNames(fields []*schema.Field) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.DBName
	}
	return out
}

// columnOf is the i-th value of each row.
func columnOf(rows [][]any, i int) []any {
	out := make([]any, len(rows))
	for j, r := range rows {
		out[j] = r[i]
	}
	return out
}

func concat(groups [][]string) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}
