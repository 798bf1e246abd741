package guard

import (
	"fmt"
	"strings"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
)

// builder spells the records of rows from the catalog and the column
// types the database reports, in the SQL of g's database.
type builder struct {
	c      lockstore.Conn
	g      lockstore.Guard
	tables map[string]model.Spec
	types  map[string]map[string]string
}

// columnTypes are table's column types, read once per plan; nil when the
// table does not exist.
func (b *builder) columnTypes(table string) (map[string]string, error) {
	name := strings.ToLower(table)
	if t, ok := b.types[name]; ok {
		return t, nil
	}
	t, err := b.g.ColumnTypes(b.c, table)
	if err != nil {
		return nil, err
	}
	b.types[name] = t
	return t, nil
}

// record is how a row of t's table (aliased by the trigger) belongs to its
// record; nil when the table does not exist.
func (b *builder) record(t model.Spec, table string) (*lockstore.GuardRecord, error) {
	types, err := b.columnTypes(table)
	if err != nil || types == nil {
		return nil, err
	}
	if t.Root == nil {
		return b.keyRecord(t.Table, t.Key, types), nil
	}
	return b.memberRecord(t, t.Root.Column, types, 0)
}

// keyRecord is the record of resource whose key cols a row holds.
func (b *builder) keyRecord(resource string, cols []model.SpecColumn, types map[string]string) *lockstore.GuardRecord {
	g := b.g
	rec := &lockstore.GuardRecord{Resource: resource, Key: func(row string) string {
		parts := make([]string, len(cols))
		for i, col := range cols {
			parts[i] = g.Spell(col.Kind, row+"."+g.Quote(col.Name), types[strings.ToLower(col.Name)])
		}
		return encodeKey(parts, g.Backslash())
	}}
	if len(cols) == 1 {
		rec.Match = b.match(cols[0], types)
	}
	return rec
}

// match is a record's Match where its key is one column whose kind the
// store can compare through an index (Equal), else nil.
func (b *builder) match(col model.SpecColumn, types map[string]string) func(row, id string) (string, string) {
	if _, ok := b.g.Equal(col.Kind, "", "", ""); !ok {
		return nil
	}
	g := b.g
	return func(row, id string) (string, string) {
		cond, _ := g.Equal(col.Kind, row+"."+g.Quote(col.Name), id, types[strings.ToLower(col.Name)])
		return "", cond
	}
}

// through is the record of a row whose column col holds the key pk of a
// row of from (aliased alias) that belongs to up: read by a subquery,
// with a locking read (ShareRow), and matched by up's match first.
func (b *builder) through(up *lockstore.GuardRecord, col, from, alias, pk string) *lockstore.GuardRecord {
	g := b.g
	rec := &lockstore.GuardRecord{Resource: up.Resource, Key: func(row string) string {
		return "(SELECT " + up.Key(alias) + " FROM " + from + " " + alias +
			" WHERE " + alias + "." + g.Quote(pk) + " = " + row + "." + g.Quote(col) + g.ShareRow() + ")"
	}}
	if up.Match != nil {
		rec.Match = func(row, id string) (string, string) {
			joins, cond := up.Match(alias, id)
			return joins + from + " " + alias + " STRAIGHT_JOIN ", cond + " AND " + row + "." + g.Quote(col) + " = " + alias + "." + g.Quote(pk)
		}
	}
	return rec
}

// memberRecord is the record of a row of member t whose column holds its
// parent's key: the root's key, or the parent row's record read by a
// subquery per level, each a locking read (ShareRow) so that a parent's
// move and the write are ordered, never decided by a snapshot.
func (b *builder) memberRecord(t model.Spec, column string, types map[string]string, depth int) (*lockstore.GuardRecord, error) {
	parent, ok := b.tables[strings.ToLower(t.Root.Table)]
	if !ok || len(parent.Key) != 1 || depth > 8 {
		return nil, fmt.Errorf("offlinelock: guarding %s: its root %s is not a lockable table of the catalog with a one-column key", t.Table, t.Root.Table)
	}
	if parent.Root == nil {
		return b.keyRecord(parent.Table, []model.SpecColumn{{Name: column, Kind: parent.Key[0].Kind}}, types), nil
	}
	ptypes, err := b.columnTypes(parent.Table)
	if err != nil || ptypes == nil {
		return nil, err
	}
	up, err := b.memberRecord(parent, parent.Root.Column, ptypes, depth+1)
	if err != nil || up == nil {
		return nil, err // a table up the chain does not exist yet: guarded when it does
	}
	from, err := b.g.QualifiedName(b.c, parent.Table)
	if err != nil {
		return nil, err
	}
	return b.through(up, column, from, fmt.Sprintf("offlinelock_p%d", depth), parent.Key[0].Name), nil
}

// joinRecord is how a row of join table join belongs to side t's record.
func (b *builder) joinRecord(t model.Spec, join string, links []model.SpecColumn) (*lockstore.GuardRecord, error) {
	types, err := b.columnTypes(join)
	if err != nil || types == nil {
		return nil, err
	}
	if t.Root == nil {
		var cols []model.SpecColumn
		for _, k := range t.Key {
			for _, l := range links {
				if l.Key == k.Name || l.Key == "" && len(t.Key) == 1 {
					cols = append(cols, model.SpecColumn{Name: l.Column, Kind: k.Kind})
					break
				}
			}
		}
		if len(cols) != len(t.Key) {
			return nil, fmt.Errorf("offlinelock: guarding join table %s: it does not hold the whole key of %s", join, t.Table)
		}
		return b.keyRecord(t.Table, cols, types), nil
	}
	if len(t.Key) != 1 || len(links) != 1 {
		return nil, fmt.Errorf("offlinelock: guarding join table %s: member %s must have a one-column key", join, t.Table)
	}
	mtypes, err := b.columnTypes(t.Table)
	if err != nil || mtypes == nil {
		return nil, err
	}
	up, err := b.memberRecord(t, t.Root.Column, mtypes, 1)
	if err != nil || up == nil {
		return nil, err
	}
	from, err := b.g.QualifiedName(b.c, t.Table)
	if err != nil {
		return nil, err
	}
	return b.through(up, links[0].Column, from, "offlinelock_m", t.Key[0].Name), nil
}

// encodeKey is model.EncodeKey in SQL, of text expressions; bs is a
// backslash as the store spells it.
func encodeKey(parts []string, bs string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	esc := make([]string, len(parts))
	for i, p := range parts {
		esc[i] = "REPLACE(REPLACE(" + p + ", " + bs + ", CONCAT(" + bs + ", " + bs + ")), ',', CONCAT(" + bs + ", ','))"
	}
	return "CONCAT(" + strings.Join(esc, ", ',', ") + ")"
}
