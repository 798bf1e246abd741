package model

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"gorm.io/gorm/schema"
)

// The catalog makes lockability a property of the table, not of the Go
// type a statement uses. The store keeps its rows as bytes: this is what
// they say.

// Spec is one catalog row: what the lock tags of a model say of its table.
type Spec struct {
	Table string       `json:"table"`
	Model string       `json:"model"`
	Mode  Mode         `json:"mode,omitempty"`
	TTL   string       `json:"ttl,omitempty"`
	Key   []SpecColumn `json:"key"`
	Root  *SpecRoot    `json:"root,omitempty"`
	Links []SpecColumn `json:"joins,omitempty"` // many2many join tables: Name is the table, Kind unused, Column the join column
	// Cascades are the cascading foreign keys of this table: Name is the
	// parent table, Column this table's column holding its key.
	Cascades []SpecColumn `json:"cascades,omitempty"`
}

// SpecColumn is a key column, a join table's link or a cascade of a Spec.
type SpecColumn struct {
	Name   string            `json:"name"`
	Column string            `json:"column,omitempty"`
	Key    string            `json:"key,omitempty"` // joins: the key column Column refers to
	Kind   lockstore.KeyKind `json:"kind"`
	// Cascades: the action follows updates of the parent's key, not its
	// deletes (older rows carry neither field).
	OnUpdate bool `json:"onUpdate,omitempty"`
	NoDelete bool `json:"noDelete,omitempty"`
	// KeepsOnDelete: the delete sets the column and keeps the rows (older
	// rows lack it, read as deleting them, which reaches further).
	KeepsOnDelete bool `json:"keepsOnDelete,omitempty"`
}

// SpecRoot is a member's link to its root.
type SpecRoot struct {
	Column string            `json:"column"`
	Kind   lockstore.KeyKind `json:"kind"`
	Table  string            `json:"table"`
}

// SpecOf is m's catalog row, with the join tables and cascades r knows.
func (r *Registry) SpecOf(m *Model) Spec {
	sp := Spec{Table: m.Table, Model: m.Name, Mode: m.Mode}
	if m.TTL > 0 {
		sp.TTL = m.TTL.String()
	}
	for i, f := range m.PK {
		sp.Key = append(sp.Key, SpecColumn{Name: f.DBName, Kind: m.Kinds[i]})
	}
	if m.Root != nil {
		sp.Root = &SpecRoot{Column: m.Root.Field.DBName, Kind: KindOf(m.Root.Field), Table: m.Root.Table}
	}
	for _, j := range r.JoinsOf(m.Table) {
		sp.Links = append(sp.Links, SpecColumn{Name: j.Join, Column: j.Column, Key: j.Key})
	}
	for _, c := range r.CascadesFrom(m.Table) {
		sp.Cascades = append(sp.Cascades, SpecColumn{Name: c.Parent, Column: c.Column, Key: c.ParentColumn, OnUpdate: c.OnUpdate, NoDelete: !c.OnDelete,
			KeepsOnDelete: c.OnDelete && c.KeepsOnDelete})
	}
	// One order, so that the same model always writes the same row.
	for _, l := range [][]SpecColumn{sp.Links, sp.Cascades} {
		slices.SortFunc(l, func(a, b SpecColumn) int {
			return strings.Compare(a.Name+"\x00"+a.Column, b.Name+"\x00"+b.Column)
		})
	}
	return sp
}

// Learn adds what specs (other nodes' rows) say to r: a table whose Go
// model r has parsed keeps it; the others are known by table only.
func (r *Registry) Learn(specs []Spec) {
	for _, sp := range specs {
		if r.TableModel(sp.Table) == nil {
			r.StoreTable(fromSpec(sp))
		}
		for _, l := range sp.Links {
			r.AddJoinSide(l.Name, JoinSide{Table: sp.Table, Column: l.Column, Key: l.Key})
		}
		for _, c := range sp.Cascades {
			ref := CascadeRef{Table: sp.Table, Column: c.Column, ParentColumn: c.Key, OnDelete: !c.NoDelete, OnUpdate: c.OnUpdate, KeepsOnDelete: c.KeepsOnDelete}
			if len(sp.Key) == 1 {
				ref.ChildKey = sp.Key[0].Name
			}
			r.AddCascade(c.Name, ref)
		}
	}
}

// fromSpec is a model known only from the catalog.
func fromSpec(sp Spec) *Model {
	m := &Model{Name: sp.Model, Table: sp.Table, Mode: sp.Mode, Lockable: true}
	if d, err := time.ParseDuration(sp.TTL); err == nil && d > 0 {
		m.TTL = d
	}
	for _, c := range sp.Key {
		m.PK = append(m.PK, SpecField(c.Name, c.Kind))
		m.Kinds = append(m.Kinds, c.Kind)
	}
	if sp.Root != nil {
		m.Root = &RootRef{Field: SpecField(sp.Root.Column, sp.Root.Kind), Table: sp.Root.Table}
	}
	if len(m.PK) == 0 {
		m.Err = invalid("catalog entry for table %s has no key columns", sp.Table)
	}
	return m
}

// SpecField stands in for a schema field of a model known only by table.
func SpecField(column string, k lockstore.KeyKind) *schema.Field {
	t := reflect.TypeFor[string]()
	dt := schema.String
	if k == lockstore.KindInt {
		t, dt = reflect.TypeFor[int64](), schema.Int
	}
	return &schema.Field{Name: column, DBName: column, FieldType: t, IndirectFieldType: t, DataType: dt}
}

// Same says whether two catalog rows say the same.
func (sp Spec) Same(o Spec) bool {
	ja, err1 := json.Marshal(sp)
	jb, err2 := json.Marshal(o)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// Rows are specs as the store keeps them.
func Rows(specs []Spec) ([]lockstore.CatalogRow, error) {
	rows := make([]lockstore.CatalogRow, len(specs))
	for i, sp := range specs {
		b, err := json.Marshal(sp)
		if err != nil {
			return nil, err
		}
		rows[i] = lockstore.CatalogRow{Name: sp.Table, Spec: b}
	}
	return rows, nil
}

// Specs are the store's rows read; a row a newer version wrote, which
// this one cannot read, is skipped.
func Specs(rows []lockstore.CatalogRow) []Spec {
	out := make([]Spec, 0, len(rows))
	for _, r := range rows {
		var sp Spec
		if json.Unmarshal(r.Spec, &sp) == nil {
			out = append(out, sp)
		}
	}
	return out
}
