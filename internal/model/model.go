package model

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"gorm.io/gorm/schema"
)

// TagName is the struct tag the model reads: on a primary key, the mode
// and options; on a foreign key, root.
const TagName = "lock"

// Mode is a model's locking policy, as its tag spells it (the root's Mode
// has the same values).
type Mode string

// The modes a primary key's lock tag may name.
const (
	ExclusiveWrite Mode = "exclusive_write"
	ExclusiveRead  Mode = "exclusive_read"
	ReadWrite      Mode = "read_write"
)

// Model is what the lock tags say about one model, parsed once per schema.
type Model struct {
	Name     string // Go type name, for messages
	Table    string
	Mode     Mode          // "" for a model without a lock tag, and for members
	TTL      time.Duration // from ttl=…, 0 for Config.TTL
	PK       []*schema.Field
	Kinds    []lockstore.KeyKind // how each key column is spelled in the lock table
	Type     reflect.Type        // nil for a model known only from the catalog
	Root     *RootRef            // set for aggregate members
	Err      error               // a malformed tag: every statement on the model fails with it
	Lockable bool                // has a mode or is a member
	Slip     string              // a lock tag the plugin does not read, as NotLockable words it (tagslips.go); "" for none

	// Version is advanced when what the catalog says of the model grew:
	// bindings write its row again.
	Version atomic.Uint64

	keyColsOnce sync.Once
	keyCols     lockstore.KeyColumns // what a store's key column check sees of it (KeyColumns)

	mu    sync.Mutex
	chain []*Model // members: the parents up to and including the root
}

// RootRef is a member's link to its parent.
type RootRef struct {
	Field *schema.Field // the member's foreign key
	Table string        // the parent's table
	Rel   *schema.Relationship
}

// Policy is the model whose mode and TTL apply: the aggregate root for a
// member (once resolved), else the model itself.
func (m *Model) Policy() *Model {
	if m.Root != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		if len(m.chain) > 0 {
			return m.chain[len(m.chain)-1]
		}
	}
	return m
}

// Chain is a member's parents up to and including its root, once
// Registry.Resolve has found them, else nil. Callers only read it.
func (m *Model) Chain() []*Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.chain
}

// LockResource is the resource m's locks are taken on: its own table, or
// its aggregate root's.
func (m *Model) LockResource() string {
	if m.Root == nil {
		return m.Table
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.chain); n > 0 {
		return m.chain[n-1].Table
	}
	return m.Table
}

// IDText is the lock table's spelling of v as the value of key column i;
// one that cannot be canonical keeps its own text (checked where given).
func (m *Model) IDText(i int, v any) string {
	if i < len(m.Kinds) {
		if s, err := Canonical(m.Kinds[i], v); err == nil {
			return s
		}
	}
	return TextKey(v)
}

// LocksOnLoad says whether loading the model takes locks.
func (m *Model) LocksOnLoad() bool {
	p := m
	if m.Root != nil { // m.Policy(), asked only where it can differ from m
		p = m.Policy()
	}
	return p.Mode == ExclusiveRead || p.Mode == ReadWrite
}

// KeyColumns is what a store's key column check sees of m, made once: a
// member's records are named by its link to its root, not by its own key.
func (m *Model) KeyColumns() lockstore.KeyColumns {
	m.keyColsOnce.Do(func() {
		cols := lockstore.KeyColumns{Table: m.Table, Model: m.Name, Kinds: m.Kinds}
		for _, f := range m.PK {
			cols.Columns = append(cols.Columns, f.DBName)
		}
		if m.Root != nil {
			cols.Columns, cols.Kinds = []string{m.Root.Field.DBName}, []lockstore.KeyKind{KindOf(m.Root.Field)}
		}
		m.keyCols = cols
	})
	return m.keyCols
}

// Registry caches parsed models per plugin, so that two plugins never see
// each other's models. Its zero value is empty and ready.
type Registry struct {
	models sync.Map // *schema.Schema -> *Model
	tables sync.Map // lower-cased table name -> lockable *Model: lockability is the table's

	joinsMu  sync.RWMutex
	joins    map[string][]JoinSide   // lower-cased many2many join table -> its sides
	cascades map[string][]CascadeRef // lower-cased parent table -> children its deletes change

	onLoad atomic.Pointer[lockedTables] // the tables locked on load, as of a TablesGen

	// Changes is advanced with any model's Version. Callers only read it.
	Changes atomic.Uint64
	// TablesGen is advanced with every table that joins the registry.
	// Callers only read it.
	TablesGen atomic.Uint64
	// AnyCascade: some foreign key cascades, so that a write without one
	// skips the cascades' check. Callers only read it.
	AnyCascade atomic.Bool
}

// lockedTables is the names of the tables whose rows need a lock to be
// read, as they were when TablesGen was gen (LockedOnLoad).
type lockedTables struct {
	gen   uint64
	names []string
}

// Known says whether the models of s have been parsed.
func (r *Registry) Known(s *schema.Schema) bool {
	_, ok := r.models.Load(s)
	return ok
}

// TableModel is the lockable model of the table named name, whatever Go
// type the statement uses, compared without letter case.
func (r *Registry) TableModel(name string) *Model {
	if v, ok := r.tables.Load(strings.ToLower(name)); ok {
		return v.(*Model)
	}
	return nil
}

// StoreTable makes m the lockable model of its table.
func (r *Registry) StoreTable(m *Model) {
	r.tables.Store(strings.ToLower(m.Table), m)
	r.TablesGen.Add(1)
}

// StoreAlias makes name (a partition or an inheritance child of m's table,
// on PostgreSQL) stand for m: its rows are m's records.
func (r *Registry) StoreAlias(name string, m *Model) {
	if _, loaded := r.tables.LoadOrStore(strings.ToLower(name), m); !loaded {
		r.TablesGen.Add(1)
	}
}

// changed notes that what the catalog says of table grew (a join table or
// a cascade learnt from another model): its row is written again.
func (r *Registry) changed(table string) {
	if m := r.TableModel(table); m != nil && m.Type != nil {
		m.Version.Add(1)
		r.Changes.Add(1)
	}
}

// ModelOf returns the lock configuration of s, parsing its tags the first
// time it is seen.
func (r *Registry) ModelOf(s *schema.Schema, namer schema.Namer) *Model {
	if m, ok := r.models.Load(s); ok {
		return m.(*Model)
	}
	var m *Model
	if s.ModelType.Name() == "" && r.JoinSides(s.Table) != nil {
		// GORM's join tables copy both sides' key tags: not a model of its own.
		m = &Model{Name: s.Name, Table: s.Table, PK: s.PrimaryFields, Type: s.ModelType}
	} else {
		m = parseModel(s, namer)
	}
	actual, loaded := r.models.LoadOrStore(s, m)
	m = actual.(*Model)
	if !loaded {
		r.noteRelations(s)
		if m.Lockable {
			r.StoreTable(m)
		}
	}
	return m
}

// parseModel reads the lock tags of s. Errors name the model and the field.
func parseModel(s *schema.Schema, namer schema.Namer) *Model {
	m := &Model{Name: s.Name, Table: s.Table, PK: s.PrimaryFields, Type: s.ModelType, Slip: TagSlip(s.ModelType)}
	for _, f := range s.PrimaryFields {
		m.Kinds = append(m.Kinds, KindOf(f))
	}
	for _, f := range s.Fields {
		tag, ok := f.Tag.Lookup(TagName)
		if !ok {
			continue
		}
		fail := func(format string, args ...any) *Model {
			m.Err = fmt.Errorf("%w: model %s field %s: %s", lockstore.ErrInvalid, s.Name, f.Name, fmt.Sprintf(format, args...))
			m.Lockable = true
			return m
		}
		tag = strings.TrimSpace(tag)
		if tag == "root" || strings.HasPrefix(tag, "root=") {
			if f.PrimaryKey {
				return fail("lock:%q belongs on the foreign key to the root, not on the primary key", tag)
			}
			if m.Root != nil {
				return fail("a second root tag; a member has one root")
			}
			ref, err := parseRoot(s, f, tag, namer)
			if err != "" {
				return fail("%s", err)
			}
			m.Root = ref
			continue
		}
		if !f.PrimaryKey {
			return fail("the lock tag %q belongs on the primary key (or write root to make the model a member)", tag)
		}
		if m.Mode != "" {
			return fail("a second lock tag; put one on the primary key")
		}
		var msg string
		if m.Mode, m.TTL, msg = parseMode(tag); msg != "" {
			return fail("%s", msg)
		}
	}
	if m.Root != nil && m.Mode != "" {
		m.Err = fmt.Errorf("%w: model %s field %s: a member has no mode of its own; it takes its root's", lockstore.ErrInvalid, s.Name, m.Root.Field.Name)
	}
	m.Lockable = m.Mode != "" || m.Root != nil
	if m.Lockable && m.Err == nil && len(m.PK) == 0 {
		m.Err = fmt.Errorf("%w: model %s has a lock tag but no primary key", lockstore.ErrInvalid, s.Name)
	}
	return m
}

// parseMode reads a primary key's lock tag: the mode, then options
// (ttl=…). msg says what is wrong, for the error that names the field.
func parseMode(tag string) (mode Mode, ttl time.Duration, msg string) {
	parts := strings.Split(tag, ",")
	switch mode = Mode(strings.TrimSpace(parts[0])); mode {
	case ExclusiveWrite, ExclusiveRead, ReadWrite:
	default:
		return "", 0, fmt.Sprintf("unknown mode %q (want exclusive_write, exclusive_read or read_write, or root)", parts[0])
	}
	for _, opt := range parts[1:] {
		k, v, _ := strings.Cut(strings.TrimSpace(opt), "=")
		if k != "ttl" {
			return "", 0, fmt.Sprintf("unknown option %q (want ttl=…)", opt)
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return "", 0, fmt.Sprintf("bad ttl %q: want a positive duration such as 30m or 2h", v)
		}
		ttl = d
	}
	return mode, ttl, ""
}

// parseRoot reads `lock:"root"` (the parent is the belongs-to association
// whose foreign key this is, or, without one, the model the field's name
// names: ShipmentID -> shipments) and `lock:"root=table"`.
func parseRoot(s *schema.Schema, f *schema.Field, tag string, namer schema.Namer) (*RootRef, string) {
	ref := &RootRef{Field: f}
	if table, ok := strings.CutPrefix(tag, "root="); ok {
		if table = strings.TrimSpace(table); table == "" {
			return nil, "root= needs the root's table name"
		}
		ref.Table = table
		return ref, ""
	}
	for _, rel := range s.Relationships.BelongsTo {
		if len(rel.References) == 1 && rel.References[0].ForeignKey == f && rel.FieldSchema != nil {
			ref.Rel, ref.Table = rel, rel.FieldSchema.Table
			return ref, ""
		}
	}
	name, ok := strings.CutSuffix(f.Name, "ID")
	if !ok || name == "" || namer == nil {
		return nil, "lock:\"root\" must be on a foreign key (a field like OrderID, or one a belongs-to association uses); or name the root's table with root=<table>"
	}
	ref.Table = namer.TableName(name)
	return ref, ""
}

// Lockable lists the lockable models known by table.
func (r *Registry) Lockable() []*Model {
	var out []*Model
	r.tables.Range(func(_, v any) bool {
		if m := v.(*Model); !slices.Contains(out, m) { // a partition's name is an alias (StoreAlias)
			out = append(out, m)
		}
		return true
	})
	return out
}

// Resolve finds a member's chain of parents up to its root the first time
// it is needed (the parents must be known by then), or names what is wrong.
func (r *Registry) Resolve(m *Model) error {
	if m.Root == nil || m.Err != nil {
		return m.Err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.chain) > 0 {
		return nil
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: model %s field %s: %s", lockstore.ErrInvalid, m.Name, m.Root.Field.Name, fmt.Sprintf(format, args...))
	}
	var chain []*Model
	seen := map[string]bool{m.Table: true}
	for cur := m; cur.Root != nil; {
		var parent *Model
		if cur.Root.Rel != nil {
			parent = r.ModelOf(cur.Root.Rel.FieldSchema, nil)
		} else if parent = r.TableModel(cur.Root.Table); parent == nil {
			return fail("root table %s is not a known lockable model; list its model in Config.Models", cur.Root.Table)
		}
		switch {
		case parent.Err != nil:
			return fail("its root %s is invalid: %v", parent.Name, parent.Err)
		case seen[parent.Table]:
			return fail("the root chain loops back to %s", parent.Table)
		case len(parent.PK) != 1:
			return fail("root %s must have a single-column primary key", parent.Name)
		case parent.Root == nil && parent.Mode == "":
			return fail("root %s has no lock mode: tag its primary key with lock:\"exclusive_write|exclusive_read|read_write\"", parent.Name)
		}
		seen[parent.Table] = true
		chain = append(chain, parent)
		cur = parent
	}
	m.chain = chain
	return nil
}

// LockedOnLoad lists the lower-cased names of the tables whose loads take
// locks (or whose tags are bad, which refuses every statement on them).
func (r *Registry) LockedOnLoad() []string {
	// Worked out again only when a table joins: a resolved chain does not
	// change, and an unresolved one counts as locked. Callers only read it.
	gen := r.TablesGen.Load()
	if c := r.onLoad.Load(); c != nil && c.gen == gen {
		return c.names
	}
	var out []string
	r.tables.Range(func(k, v any) bool {
		if m := v.(*Model); r.Resolve(m) != nil || m.LocksOnLoad() {
			out = append(out, k.(string))
		}
		return true
	})
	r.onLoad.Store(&lockedTables{gen: gen, names: out})
	return out
}

// Relationships are part of the record: join tables and cascading
// foreign keys, from the models' relationships and from the catalog.

// JoinSide is one side of a many2many join table: Column holds keys of
// Table's rows. Changing the join rows changes that record's relations.
type JoinSide struct {
	Table, Column string
	Key           string // the column of Table's primary key that Column holds
}

// JoinRef is a join table, Join, one of whose columns holds keys of a
// table: Column holds its Key column.
type JoinRef struct {
	Join, Column, Key string
}

// CascadeRef is a child table whose rows change when rows of its parent
// are deleted (OnDelete) or have their key changed (OnUpdate): Column
// holds the parent's key, ParentColumn ("" where unknown). KeepsOnDelete:
// the delete sets the column rather than delete the rows. ChildKey is the
// child's one-column key ("" where unknown), for the walk's next level.
type CascadeRef struct {
	Table, Column, ParentColumn string
	ChildKey                    string
	OnDelete, OnUpdate          bool
	KeepsOnDelete               bool
	// From is the table of the model that declared it, "" for the
	// catalog's: a model parsed again under that name replaces it.
	From string
}

// ParentRef is a cascade as its child's catalog row keeps it: Parent is
// the parent table.
type ParentRef struct {
	Parent string
	CascadeRef
}

// JoinSides lists the sides of a many2many join table.
func (r *Registry) JoinSides(table string) []JoinSide {
	r.joinsMu.RLock()
	defer r.joinsMu.RUnlock()
	return r.joins[strings.ToLower(table)]
}

// JoinsOf lists the join tables, and their columns, that hold keys of table.
func (r *Registry) JoinsOf(table string) []JoinRef {
	r.joinsMu.RLock()
	defer r.joinsMu.RUnlock()
	var out []JoinRef
	for name, sides := range r.joins {
		for _, side := range sides {
			if strings.EqualFold(side.Table, table) {
				out = append(out, JoinRef{Join: name, Column: side.Column, Key: side.Key})
			}
		}
	}
	return out
}

// noteJoins records the many2many join tables of s.
func (r *Registry) noteJoins(s *schema.Schema) {
	for _, rel := range s.Relationships.Many2Many {
		if rel.JoinTable == nil || rel.FieldSchema == nil {
			continue
		}
		for _, ref := range rel.References {
			if ref.ForeignKey == nil || ref.PrimaryKey == nil || ref.ForeignKey.Schema != rel.JoinTable {
				continue
			}
			owner := rel.FieldSchema.Table
			if ref.OwnPrimaryKey {
				owner = s.Table
			}
			if r.AddJoinSide(rel.JoinTable.Table, JoinSide{Table: owner, Column: ref.ForeignKey.DBName, Key: ref.PrimaryKey.DBName}) {
				r.changed(owner)
			}
		}
	}
}

// noteRelations records the join tables and cascading foreign keys of s
// and of every model its relationships reach, at any depth.
func (r *Registry) noteRelations(s *schema.Schema) {
	seen := map[*schema.Schema]bool{s: true}
	for todo := []*schema.Schema{s}; len(todo) > 0; {
		s := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		r.noteJoins(s)
		r.noteCascades(s)
		for _, rel := range s.Relationships.Relations {
			if rel.FieldSchema != nil && !seen[rel.FieldSchema] {
				seen[rel.FieldSchema] = true
				todo = append(todo, rel.FieldSchema)
			}
		}
	}
}

// AddJoinSide records one side of a join table, once, and reports whether
// it is new.
func (r *Registry) AddJoinSide(table string, side JoinSide) bool {
	name := strings.ToLower(table)
	r.joinsMu.Lock()
	defer r.joinsMu.Unlock()
	for _, s := range r.joins[name] {
		if strings.EqualFold(s.Table, side.Table) && s.Column == side.Column {
			return false
		}
	}
	if r.joins == nil {
		r.joins = map[string][]JoinSide{}
	}
	r.joins[name] = append(slices.Clone(r.joins[name]), side)
	return true
}

// changesChildren says whether a foreign key's action changes the child rows.
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
func (r *Registry) noteCascades(s *schema.Schema) {
	var parents []string
	var refs []CascadeRef
	for _, rel := range s.Relationships.Relations {
		c := rel.ParseConstraint()
		if c == nil || c.Schema == nil || c.ReferenceSchema == nil || len(c.ForeignKeys) != 1 {
			continue
		}
		ref := CascadeRef{Table: c.Schema.Table, Column: c.ForeignKeys[0].DBName, OnDelete: changesChildren(c.OnDelete),
			OnUpdate:      changesChildren(c.OnUpdate) && len(c.References) == 1 && c.References[0].PrimaryKey,
			KeepsOnDelete: setsChildren(c.OnDelete)}
		if len(c.References) == 1 {
			ref.ParentColumn = c.References[0].DBName
		}
		if len(c.Schema.PrimaryFields) == 1 {
			ref.ChildKey = c.Schema.PrimaryFields[0].DBName
		}
		if ref.OnDelete || ref.OnUpdate {
			ref.From = strings.ToLower(s.Table)
			parents, refs = append(parents, c.ReferenceSchema.Table), append(refs, ref)
		}
	}
	for _, table := range r.replaceCascades(strings.ToLower(s.Table), parents, refs) {
		r.changed(table)
	}
}

// replaceCascades replaces, at once, the cascades model table from declared
// with refs (each of parents[i]), and returns the child tables changed.
func (r *Registry) replaceCascades(from string, parents []string, refs []CascadeRef) []string {
	r.joinsMu.Lock()
	defer r.joinsMu.Unlock()
	var changed []string
	for parent, list := range r.cascades {
		kept := list[:0:0]
		for _, c := range list {
			if c.From == from && from != "" && !slices.Contains(refs, c) {
				changed = append(changed, c.Table)
				continue
			}
			kept = append(kept, c)
		}
		r.cascades[parent] = kept
	}
	for i, ref := range refs {
		if r.addCascadeLocked(parents[i], ref) {
			changed = append(changed, ref.Table)
		}
	}
	return changed
}

// AddCascade records that ref (a catalog row's) cascades from parent,
// merged with what is known of its foreign key, and reports any change.
func (r *Registry) AddCascade(parent string, ref CascadeRef) bool {
	r.joinsMu.Lock()
	defer r.joinsMu.Unlock()
	return r.addCascadeLocked(parent, ref)
}

// addCascadeLocked is AddCascade with joinsMu held.
func (r *Registry) addCascadeLocked(parent string, ref CascadeRef) bool {
	name := strings.ToLower(parent)
	for i, c := range r.cascades[name] {
		if strings.EqualFold(c.Table, ref.Table) && c.Column == ref.Column {
			merged := CascadeRef{Table: c.Table, Column: c.Column, ParentColumn: cmp.Or(c.ParentColumn, ref.ParentColumn),
				ChildKey: cmp.Or(c.ChildKey, ref.ChildKey), OnDelete: c.OnDelete || ref.OnDelete, OnUpdate: c.OnUpdate || ref.OnUpdate,
				KeepsOnDelete: keepsBoth(c, ref), From: cmp.Or(c.From, ref.From)}
			r.cascades[name][i] = merged
			return merged != c
		}
	}
	if r.cascades == nil {
		r.cascades = map[string][]CascadeRef{}
	}
	r.cascades[name] = append(r.cascades[name], ref)
	r.AnyCascade.Store(true)
	return true
}

// keepsBoth says whether two records of one foreign key agree that its
// delete keeps the child rows: where they differ, it reaches further.
func keepsBoth(a, b CascadeRef) bool {
	switch {
	case a.OnDelete && b.OnDelete:
		return a.KeepsOnDelete && b.KeepsOnDelete
	case a.OnDelete:
		return a.KeepsOnDelete
	}
	return b.KeepsOnDelete
}

// CascadesFrom lists the foreign keys of table that cascade, by parent,
// for the catalog (a node that never parsed the models follows them too).
func (r *Registry) CascadesFrom(table string) []ParentRef {
	r.joinsMu.RLock()
	defer r.joinsMu.RUnlock()
	var out []ParentRef
	for parent, refs := range r.cascades {
		for _, c := range refs {
			if (c.OnDelete || c.OnUpdate) && strings.EqualFold(c.Table, table) {
				out = append(out, ParentRef{parent, c})
			}
		}
	}
	return out
}

// CascadesOf lists the foreign keys that cascade a delete (onDelete) or
// an update of the key (onUpdate) of parent's rows into other tables.
func (r *Registry) CascadesOf(parent string, onDelete, onUpdate bool) []CascadeRef {
	r.joinsMu.RLock()
	defer r.joinsMu.RUnlock()
	var out []CascadeRef
	for _, c := range r.cascades[strings.ToLower(parent)] {
		if onDelete && c.OnDelete || onUpdate && c.OnUpdate {
			out = append(out, c)
		}
	}
	return out
}
