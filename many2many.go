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

// Relationships are part of the record: appending, replacing or clearing a
// many2many association of a lockable record writes rows of the join table,
// and that changes the record. A write to a join table therefore needs the
// Write lock of the record on each lockable side of every row it touches.

// joinOwner is a lockable side of a join table.
type joinOwner struct {
	m       *model.Model
	columns []*schema.Field // the join table's columns that hold m's key, in key order
}

// joinOwners lists the lockable sides of the join table named table. A
// side whose key the join table does not hold whole cannot be told apart:
// its writes are refused.
func (p *Plugin) joinOwners(table string) ([]joinOwner, error) {
	byTable := map[string][]model.JoinSide{}
	var order []string
	for _, side := range p.reg.JoinSides(table) {
		name := strings.ToLower(side.Table)
		if _, ok := byTable[name]; !ok {
			order = append(order, name)
		}
		byTable[name] = append(byTable[name], side)
	}
	var out []joinOwner
	for _, name := range order {
		m := p.reg.TableModel(name)
		if m == nil {
			continue
		}
		o := joinOwner{m: m}
		for i, f := range m.PK {
			for _, side := range byTable[name] {
				if side.Key == f.DBName || side.Key == "" && len(m.PK) == 1 {
					o.columns = append(o.columns, model.SpecField(side.Column, m.Kinds[i]))
					break
				}
			}
		}
		if len(o.columns) != len(m.PK) {
			return nil, unenforceable(m.Table, "join table "+table+" does not hold the whole key of lockable table")
		}
		out = append(out, o)
	}
	return out, nil
}

// beforeJoinWrite checks a write to a join table against the Write locks
// of the records its rows relate, before the write's hooks run.
func (b *binding) beforeJoinWrite(db *gorm.DB, op opKind) {
	p := b.p
	owners, err := p.joinOwners(db.Statement.Table)
	if (len(owners) == 0 && err == nil) || p.bypassed(db, op) {
		return
	}
	if err != nil {
		db.AddError(err)
		return
	}
	st := b.start(db, owners[0].m, op)
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
			var ts []target
			ts, err = p.targetsOfRows(db, o.m, rows)
			for _, t := range ts {
				keys = append(keys, t.k)
			}
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
func (p *Plugin) joinRows(db *gorm.DB, o joinOwner, op opKind) ([][]any, error) {
	if op == opCreate {
		rows, complete, known := model.ValueRows(db, db.Statement.ReflectValue, o.columns)
		if !complete || !known {
			return nil, unenforceable(o.m.Table, "a join-table row without the whole key relates a record of")
		}
		return rows, nil
	}
	where, ok := db.Statement.Clauses["WHERE"].Expression.(clause.Where)
	if !ok || len(where.Exprs) == 0 {
		return nil, fmt.Errorf("%w: a global %s of join table %s is refused; add a WHERE", ErrInvalid, op, db.Statement.Table)
	}
	cols := make([]string, len(o.columns))
	for i, c := range o.columns {
		cols[i] = c.DBName
	}
	return p.columnValues(db, cols, true)
}

// targetsOfRows maps the key values of m's rows to the locks that cover
// them: their own, or, for a member, its root's.
func (p *Plugin) targetsOfRows(db *gorm.DB, m *model.Model, rows [][]any) ([]target, error) {
	if m.Root != nil {
		pks := make([]any, len(rows))
		for i, r := range rows {
			pks[i] = m.KeyArgs(r)[0]
		}
		links, err := p.linksOf(db, m, pks)
		if err != nil {
			return nil, err
		}
		return p.rootsOf(db, m, links)
	}
	out := make([]target, 0, len(rows))
	for _, r := range rows {
		k, err := keyOf(m, r)
		if err != nil {
			return nil, err
		}
		out = append(out, target{k, m})
	}
	return out, nil
}

// columnValues runs the statement's FROM and WHERE selecting columns,
// row-locked where the store needs it when forUpdate.
func (p *Plugin) columnValues(db *gorm.DB, columns []string, forUpdate bool) ([][]any, error) {
	cols := make([]clause.Column, len(columns))
	for i, c := range columns {
		cols[i] = clause.Column{Table: clause.CurrentTable, Name: c}
	}
	q := p.keySelect(db, cols, forUpdate)
	var out [][]any
	_, err := direct(db).Query(q.SQL.String(), q.Vars, func(r *sql.Rows) error {
		vals, err := scanValues(r, len(cols))
		if err == nil && !slices.Contains(vals, nil) {
			out = append(out, vals)
		}
		return err
	})
	return out, err
}
