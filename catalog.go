package offlinelock

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// The catalog makes lockability a property of the table, not of the Go
// type a statement happens to use: every lockable model's table, mode, key
// columns and aggregate link are written to a table next to the lock table
// (<Config.Table>_tables), and every node reads it when the plugin is
// registered and again every catalogRefresh. A node that has never parsed
// Customer still enforces Table("customers"), a DTO on it, or raw SQL that
// names it.
//
// A model is written to the catalog when db.Use parses it (Config.Models),
// or else before the first statement or Acquire that locks it, so a lock on
// a table never exists before its catalog row. A node started later knows
// the table from the start; a node already running learns it at its next
// refresh, or at once when it lists the model in Config.Models.

// catalogRefresh is how often a node re-reads the catalog.
const catalogRefresh = 10 * time.Second

// tableSpec is one catalog row: what the lock tags of a model say about its
// table.
type tableSpec struct {
	Table string       `json:"table"`
	Model string       `json:"model"`
	Mode  Mode         `json:"mode,omitempty"`
	TTL   string       `json:"ttl,omitempty"`
	Key   []columnSpec `json:"key"`
	Root  *rootSpec    `json:"root,omitempty"`
	Links []columnSpec `json:"joins,omitempty"` // many2many join tables: Name is the table, Kind unused, Column the join column
	// Cascades are the cascading foreign keys of this table: Name is the
	// parent table, Column this table's column holding its key.
	Cascades []columnSpec `json:"cascades,omitempty"`
}

type columnSpec struct {
	Name   string  `json:"name"`
	Column string  `json:"column,omitempty"`
	Key    string  `json:"key,omitempty"` // joins: the key column Column refers to
	Kind   keyKind `json:"kind"`
	// Cascades: the action follows updates of the parent's key, and not
	// its deletes (rows of older versions carried delete cascades alone,
	// and neither field).
	OnUpdate bool `json:"onUpdate,omitempty"`
	NoDelete bool `json:"noDelete,omitempty"`
	// KeepsOnDelete: the delete action sets the column (SET NULL, SET
	// DEFAULT) and keeps the rows (older versions wrote neither, and are
	// read as deleting them, which reaches further).
	KeepsOnDelete bool `json:"keepsOnDelete,omitempty"`
}

type rootSpec struct {
	Column string  `json:"column"`
	Kind   keyKind `json:"kind"`
	Table  string  `json:"table"`
}

// specOf is m's catalog row.
func (p *Plugin) specOf(m *model.Model) tableSpec {
	sp := tableSpec{Table: m.Table, Model: m.Name, Mode: Mode(m.Mode)}
	if m.TTL > 0 {
		sp.TTL = m.TTL.String()
	}
	for i, f := range m.PK {
		sp.Key = append(sp.Key, columnSpec{Name: f.DBName, Kind: m.Kinds[i]})
	}
	if m.Root != nil {
		sp.Root = &rootSpec{Column: m.Root.Field.DBName, Kind: model.KindOf(m.Root.Field), Table: m.Root.Table}
	}
	for _, j := range p.reg.JoinsOf(m.Table) {
		sp.Links = append(sp.Links, columnSpec{Name: j.Join, Column: j.Column, Key: j.Key})
	}
	for _, c := range p.reg.CascadesFrom(m.Table) {
		sp.Cascades = append(sp.Cascades, columnSpec{Name: c.Parent, Column: c.Column, Key: c.ParentColumn, OnUpdate: c.OnUpdate, NoDelete: !c.OnDelete,
			KeepsOnDelete: c.OnDelete && c.KeepsOnDelete})
	}
	// One order, so that the same model always writes the same row.
	for _, l := range [][]columnSpec{sp.Links, sp.Cascades} {
		slices.SortFunc(l, func(a, b columnSpec) int {
			return strings.Compare(a.Name+"\x00"+a.Column, b.Name+"\x00"+b.Column)
		})
	}
	return sp
}

// modelOfSpec is a model known only from the catalog: it has no Go type,
// so only statements by table (DTOs, Table(…), raw SQL) meet it.
func modelOfSpec(sp tableSpec) *model.Model {
	m := &model.Model{Name: sp.Model, Table: sp.Table, Mode: model.Mode(sp.Mode), Lockable: true}
	if d, err := time.ParseDuration(sp.TTL); err == nil && d > 0 {
		m.TTL = d
	}
	for _, c := range sp.Key {
		m.PK = append(m.PK, specField(c.Name, c.Kind))
		m.Kinds = append(m.Kinds, c.Kind)
	}
	if sp.Root != nil {
		m.Root = &model.RootRef{Field: specField(sp.Root.Column, sp.Root.Kind), Table: sp.Root.Table}
	}
	if len(m.PK) == 0 {
		m.Err = invalid("catalog entry for table %s has no key columns", sp.Table)
	}
	return m
}

// specField stands in for a schema field of a model known only by table.
func specField(column string, k keyKind) *schema.Field {
	t := reflect.TypeFor[string]()
	dt := schema.String
	if k == kindInt {
		t, dt = reflect.TypeFor[int64](), schema.Int
	}
	return &schema.Field{Name: column, DBName: column, FieldType: t, IndirectFieldType: t, DataType: dt}
}

// loadCatalog learns the lockable tables other nodes wrote. A table whose
// Go model this node has parsed keeps that model.
func (p *Plugin) loadCatalog(db *gorm.DB) error {
	b, err := p.bindingOf(db)
	if err != nil {
		return err
	}
	specs, err := b.t.specs(direct(db))
	if err != nil {
		return err
	}
	b.catalogAt.Store(time.Now().UnixNano())
	// A failover or restart since the last refresh: move the generation
	// epoch to this server (PostgreSQL roles that cannot read the WAL
	// timeline; lockstore/generation_postgres.go).
	if k, ok := b.t.Store.(lockstore.EpochKeeper); ok {
		if err := k.KeepEpoch(direct(db)); err != nil {
			return err
		}
	}
	for _, sp := range specs {
		if p.reg.TableModel(sp.Table) == nil {
			p.reg.StoreTable(modelOfSpec(sp))
		}
		for _, l := range sp.Links {
			p.reg.AddJoinSide(l.Name, model.JoinSide{Table: sp.Table, Column: l.Column, Key: l.Key})
		}
		for _, c := range sp.Cascades {
			ref := model.CascadeRef{Table: sp.Table, Column: c.Column, ParentColumn: c.Key, OnDelete: !c.NoDelete, OnUpdate: c.OnUpdate, KeepsOnDelete: c.KeepsOnDelete}
			if len(sp.Key) == 1 {
				ref.ChildKey = sp.Key[0].Name
			}
			p.reg.AddCascade(c.Name, ref)
		}
	}
	return nil
}

// rememberModel writes m to the catalog before the plugin first enforces
// it on this node, so that a lock on its table never exists before its
// catalog row: a node started later knows the table. It writes on the
// statement's own connection: a second one could wait forever for a pool
// the caller's transaction holds, or (SQLite) for its write lock. Inside a
// transaction the row commits with it, so it is written again next time
// until a statement outside a transaction has done it.
func (b *binding) rememberModel(db *gorm.DB, m *model.Model) error {
	h := b.here(m)
	version := m.Version.Load() + 1
	if m.Type == nil || !m.Lockable || h.saved.Load() == version {
		return nil
	}
	_, inTx := db.Statement.ConnPool.(gorm.TxCommitter)
	c := direct(db).WithoutCancel()
	spec := b.p.specOf(m)
	// What the table's guard covers may have grown (a join table, a
	// cascade learnt from another model): its next install plans it
	// again, and grants wait for that (coverage.go).
	defer b.guard.forgetSoon(m.Table)
	if stored, err := b.t.specs(c); err == nil && slices.ContainsFunc(stored, func(s tableSpec) bool { return sameSpec(s, spec) }) {
		h.saved.Store(version) // committed already: no write, no row lock held in the caller's transaction
		return nil
	}
	if err := b.t.remember(c, []tableSpec{spec}); err != nil {
		return fmt.Errorf("offlinelock: writing %s to the catalog of lockable tables: %w", m.Table, err)
	}
	if !inTx {
		h.saved.Store(version)
	}
	return nil
}

// rememberModelOn is rememberModel on db's binding.
func (p *Plugin) rememberModelOn(db *gorm.DB, m *model.Model) error {
	b, err := p.bindingOf(db)
	if err != nil {
		return err
	}
	return b.rememberModel(db, m)
}

// checkKeyColumns refuses a model whose key columns the store finds the
// lock table cannot spell as the database compares them.
func checkKeyColumns(db *gorm.DB, t lockStore, m *model.Model) error {
	kc := t.caps.KeyChecker
	if kc == nil || m == nil || !m.Lockable {
		return nil
	}
	return kc.CheckKeyColumns(direct(db).WithoutCancel(), m.KeyColumns())
}

// sameSpec says whether two catalog rows say the same.
func sameSpec(a, b tableSpec) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// saveModels writes models to the catalog on a connection of its own.
func (b *binding) saveModels(db *gorm.DB, ms ...*model.Model) error {
	specs := make([]tableSpec, len(ms))
	versions := make([]uint64, len(ms))
	for i, m := range ms {
		versions[i] = m.Version.Load() + 1
		specs[i] = b.p.specOf(m)
	}
	if err := b.t.remember(direct(b.p.background(db)), specs); err != nil {
		return err
	}
	for i, m := range ms {
		b.here(m).saved.Store(versions[i])
	}
	return nil
}

// background is a session on db's pool, outside any transaction of the
// caller's, that outlives the caller's context.
func (p *Plugin) background(db *gorm.DB) *gorm.DB {
	s := db.Session(&gorm.Session{NewDB: true, Context: context.Background()})
	s.Statement.ConnPool = db.Config.ConnPool
	return s
}

// remember writes specs to the catalog: the store keeps them as bytes.
func (t *table) remember(c conn, specs []tableSpec) error {
	rows := make([]lockstore.CatalogRow, len(specs))
	for i, sp := range specs {
		b, err := json.Marshal(sp)
		if err != nil {
			return err
		}
		rows[i] = lockstore.CatalogRow{Name: sp.Table, Spec: b}
	}
	return t.Remember(c, rows)
}

// specs reads the catalog; a row a newer version wrote, which this one
// cannot read, is skipped.
func (t *table) specs(c conn) ([]tableSpec, error) {
	rows, err := t.Catalog(c)
	out := make([]tableSpec, 0, len(rows))
	for _, r := range rows {
		var sp tableSpec
		if json.Unmarshal(r.Spec, &sp) == nil {
			out = append(out, sp)
		}
	}
	return out, err
}
