package model

import (
	"fmt"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// CascadeStep is rows of Table that a write deletes (Delete) or changes
// the key of: IDs are their values of KeyColumn before the write.
type CascadeStep struct {
	Table, KeyColumn string
	Delete           bool
	IDs              []any
}

// RowReader reads columns of table's rows whose column is one of vals,
// leaving out rows with a NULL (a NULL holds no key).
type RowReader func(table, column string, columns []string, vals []any) ([][]any, error)

// RowsFound takes the key values, in key order, of m's rows that a walk
// reached: a lockable child's or a join table's lockable side's.
type RowsFound func(m *Model, rows [][]any) error

// WalkCascades follows from's write through the declared foreign-key
// actions, level by level, through tables not lockable too and into join
// tables, reading rows with read and handing the lockable ones to found.
// A row reached twice is followed once. A join table without a side's
// whole key is a *PartialJoin.
func (r *Registry) WalkCascades(from CascadeStep, read RowReader, found RowsFound) error {
	seen := map[string]bool{}
	for queue := []CascadeStep{from}; len(queue) > 0; {
		s := queue[0]
		queue = queue[1:]
		if s.IDs = unseenIDs(seen, s); len(s.IDs) == 0 {
			continue
		}
		for _, ref := range r.CascadesOf(s.Table, s.Delete, !s.Delete) {
			next, err := r.cascadeInto(s, ref, read, found)
			if err != nil {
				return err
			}
			queue = append(queue, next...)
		}
	}
	return nil
}

// unseenIDs keeps the ids of s not followed before, and marks them.
func unseenIDs(seen map[string]bool, s CascadeStep) []any {
	var out []any
	for _, id := range s.IDs {
		if b, ok := id.([]byte); ok {
			id = string(b)
		}
		k := fmt.Sprintf("%s\x00%t\x00%v", strings.ToLower(s.Table), s.Delete, id)
		if !seen[k] {
			seen[k] = true
			out = append(out, id)
		}
	}
	return out
}

// cascadeInto reads the rows of ref's child that s changes through ref,
// hands the lockable ones to found, and returns the walk's next step.
func (r *Registry) cascadeInto(s CascadeStep, ref CascadeRef, read RowReader, found RowsFound) ([]CascadeStep, error) {
	parentVals := s.IDs // the values of the parent's column ref follows
	if ref.ParentColumn != "" && !strings.EqualFold(ref.ParentColumn, s.KeyColumn) {
		rows, err := read(s.Table, s.KeyColumn, []string{ref.ParentColumn}, s.IDs)
		if err != nil || len(rows) == 0 {
			return nil, err
		}
		parentVals = columnOf(rows, 0)
	}
	owners, err := r.JoinOwners(ref.Table)
	if err != nil {
		return nil, err
	}
	child := r.TableModel(ref.Table)
	if child != nil {
		owners = append([]JoinOwner{{Model: child, Columns: fieldNames(child)}}, owners...)
	}
	var cols []string
	for _, o := range owners {
		cols = append(cols, o.Columns...)
	}
	keyAt := -1 // the column of the child's key among those read
	if child == nil && ref.ChildKey != "" {
		keyAt, cols = len(cols), append(cols, ref.ChildKey)
	} else if child != nil && len(child.PK) == 1 {
		keyAt = 0
	}
	if len(cols) == 0 {
		return nil, nil
	}
	rows, err := read(ref.Table, ref.Column, cols, parentVals)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	at := 0
	for _, o := range owners {
		part := make([][]any, len(rows))
		for j, row := range rows {
			part[j] = row[at : at+len(o.Columns)]
		}
		at += len(o.Columns)
		if err := found(o.Model, part); err != nil {
			return nil, err
		}
	}
	if keyAt < 0 {
		return nil, nil
	}
	next := CascadeStep{Table: ref.Table, KeyColumn: cols[keyAt], IDs: columnOf(rows, keyAt)}
	if s.Delete && !ref.KeepsOnDelete {
		next.Delete = true // the child's rows are deleted
	} else if !strings.EqualFold(ref.Column, cols[keyAt]) {
		return nil, nil // only a column the child's children do not follow changed
	} // else the action rewrote the child's own key
	return []CascadeStep{next}, nil
}

// fieldNames are the columns of m's key.
func fieldNames(m *Model) []string {
	out := make([]string, len(m.PK))
	for i, f := range m.PK {
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

// SelectIn builds, for a RowReader, the read of columns of table's rows
// whose column is one of vals, FOR UPDATE with lock.
func SelectIn(db *gorm.DB, table, column string, columns []string, vals []any, lock bool) *gorm.Statement {
	q := &gorm.Statement{DB: db, Table: table, Clauses: map[string]clause.Clause{}}
	sel := make([]clause.Column, len(columns))
	for i, c := range columns {
		sel[i] = clause.Column{Name: c}
	}
	q.AddClause(clause.Select{Columns: sel})
	q.AddClause(clause.From{Tables: []clause.Table{{Name: table}}})
	q.AddClause(clause.Where{Exprs: []clause.Expression{clause.IN{Column: clause.Column{Name: column}, Values: vals}}})
	build := []string{"SELECT", "FROM", "WHERE"}
	if lock {
		q.AddClause(clause.Locking{Strength: clause.LockingStrengthUpdate})
		build = append(build, "FOR")
	}
	q.Build(build...)
	return q
}
