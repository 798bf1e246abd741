package offlinelock

import (
	"database/sql"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// Relationships are part of the record: appending, replacing or clearing a
// many2many association of a lockable record writes rows of the join table,
// and that changes the record. A write to a join table therefore needs the
// Write lock of the record on each lockable side of every row it touches.

// joinOwner is a lockable side of a join table.
type joinOwner struct {
	m      *model
	column *schema.Field // the join table's column that holds m's keys
}

// joinOwners lists the lockable sides of the join table named table.
func (p *Plugin) joinOwners(table string) []joinOwner {
	var out []joinOwner
	for _, side := range p.reg.joinSides(table) {
		m := p.reg.tableModel(side.table)
		if m == nil || len(m.kinds) != 1 {
			continue
		}
		out = append(out, joinOwner{m: m, column: specField(side.column, m.kinds[0])})
	}
	return out
}

// beforeJoinWrite checks a write to a join table against the Write locks
// of the records its rows relate, before the write's hooks run.
func (p *Plugin) beforeJoinWrite(db *gorm.DB, op string) {
	owners := p.joinOwners(db.Statement.Table)
	if len(owners) == 0 || p.bypassed(db, op) {
		return
	}
	st := p.start(db, owners[0].m, op)
	if st == nil {
		return
	}
	if err := st.begin(db, true); err != nil {
		st.fail(db, err)
		return
	}
	var keys []key
	for _, o := range owners {
		links, err := p.joinLinks(db, o, op)
		if err == nil && len(links) > 0 {
			var ts []target
			ts, err = p.targetsOfLinks(db, o.m, links)
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
	mine, free, err := st.t.check(direct(db), keys, st.owner, false)
	if err == nil && len(free) > 0 {
		err = notLockedForWrite(op, free)
	}
	if err != nil {
		st.fail(db, err)
		return
	}
	st.required = mine
}

// joinLinks reads the keys of o's records that the write's rows relate:
// from the rows a Create inserts, or the rows an Update or Delete matches.
func (p *Plugin) joinLinks(db *gorm.DB, o joinOwner, op string) ([]any, error) {
	if op == opCreate {
		rows, complete, known := valueRows(db, db.Statement.ReflectValue, []*schema.Field{o.column})
		if !complete || !known {
			return nil, unenforceable(o.m.table, "a join-table row without its "+o.column.DBName+" relates a record of")
		}
		links := make([]any, len(rows))
		for i, r := range rows {
			links[i] = r[0]
		}
		return links, nil
	}
	where, ok := db.Statement.Clauses["WHERE"].Expression.(clause.Where)
	if !ok || len(where.Exprs) == 0 {
		return nil, fmt.Errorf("%w: a global %s of join table %s is refused; add a WHERE", ErrInvalid, op, db.Statement.Table)
	}
	return p.columnValues(db, o.column.DBName, true)
}

// targetsOfLinks maps keys of m's rows to the locks that cover them: their
// own, or, for a member, its root's.
func (p *Plugin) targetsOfLinks(db *gorm.DB, m *model, links []any) ([]target, error) {
	if m.root != nil {
		return p.rootsOf(db, m, links)
	}
	out := make([]target, 0, len(links))
	for _, l := range links {
		k, err := m.keyOf([]any{l})
		if err != nil {
			return nil, err
		}
		out = append(out, target{k, m})
	}
	return out, nil
}

// columnValues runs the statement's FROM and WHERE selecting one column,
// row-locked on PostgreSQL when forUpdate.
func (p *Plugin) columnValues(db *gorm.DB, column string, forUpdate bool) ([]any, error) {
	q := p.keySelect(db, []clause.Column{{Table: clause.CurrentTable, Name: column}}, forUpdate)
	var out []any
	_, err := direct(db).query(q.SQL.String(), q.Vars, func(r *sql.Rows) error {
		var v any
		if err := r.Scan(&v); err != nil {
			return err
		}
		if v != nil {
			out = append(out, v)
		}
		return nil
	})
	return out, err
}
