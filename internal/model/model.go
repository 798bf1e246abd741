package model

import (
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

	// Version is advanced when what the catalog says of the model grew
	// (a join table or a cascade learnt from another model): bindings
	// write its row again.
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
// Registry.Resolve has found them; nil before, and for a model that is not
// a member. Callers only read it.
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

// IDText is the lock table's spelling of v as the value of key column i.
// A value that cannot be canonical (text for an integer key) keeps its own
// text: a row read from the database always can be, and a value given by
// the caller is checked where it is given (Canonical).
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
	mode := m.Policy().Mode
	return mode == ExclusiveRead || mode == ReadWrite
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

// Registry caches parsed models per plugin; it is not package state, so two
// plugins (or two tests) never see each other's models. Its zero value is
// empty and ready.
type Registry struct {
	models sync.Map // *schema.Schema -> *Model
	tables sync.Map // lower-cased table name -> lockable *Model: lockability is the table's

	joinsMu  sync.RWMutex
	joins    map[string][]JoinSide   // lower-cased many2many join table -> its sides
	cascades map[string][]CascadeRef // lower-cased parent table -> children its deletes change
	changes  atomic.Uint64           // advanced with any model's version (bindings compare)

	tablesGen atomic.Uint64                // advanced with every table stored in tables
	onLoad    atomic.Pointer[lockedTables] // the tables locked on load, as of a tablesGen
}

// lockedTables is the names of the tables whose rows need a lock to be
// read, as they were when tables was at generation gen (LockedOnLoad).
type lockedTables struct {
	gen   uint64
	names []string
}

// Changes is advanced whenever what the catalog says of some model grew:
// a binding that has written every row up to a value compares it.
func (r *Registry) Changes() uint64 { return r.changes.Load() }

// TablesGen is advanced with every table that joins the registry.
func (r *Registry) TablesGen() uint64 { return r.tablesGen.Load() }

// Known says whether the models of s have been parsed.
func (r *Registry) Known(s *schema.Schema) bool {
	_, ok := r.models.Load(s)
	return ok
}

// TableModel is the lockable model of the table named name, whatever Go
// type the statement uses: table names are compared as the databases the
// plugin supports compare unquoted ones, without letter case.
func (r *Registry) TableModel(name string) *Model {
	if v, ok := r.tables.Load(strings.ToLower(name)); ok {
		return v.(*Model)
	}
	return nil
}

// StoreTable makes m the lockable model of its table.
func (r *Registry) StoreTable(m *Model) {
	r.tables.Store(strings.ToLower(m.Table), m)
	r.tablesGen.Add(1)
}

// StoreAlias makes name (a partition or an inheritance child of m's table,
// on PostgreSQL) stand for m: its rows are m's records.
func (r *Registry) StoreAlias(name string, m *Model) {
	if _, loaded := r.tables.LoadOrStore(strings.ToLower(name), m); !loaded {
		r.tablesGen.Add(1)
	}
}

// changed notes that what the catalog says of table grew (a join table or
// a cascade learnt from another model): its row is written again.
func (r *Registry) changed(table string) {
	if m := r.TableModel(table); m != nil && m.Type != nil {
		m.Version.Add(1)
		r.changes.Add(1)
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
		// GORM's own many2many join tables copy the key fields' tags of
		// both sides; their rows are the sides' relations (the root's many2many.go).
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
// it is needed; the parents' models must be known by then (used, or listed
// in Config.Models). Errors name the model and the field.
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
	// Worked out again only when a table joins the registry: a model's
	// root chain, once resolved, does not change, and one that does not
	// resolve yet (its root unknown) counts as locked until a table's
	// arrival makes this look again. Callers only read the slice.
	gen := r.tablesGen.Load()
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
