package offlinelock

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// TagName is the struct tag the plugin reads. On a model's primary key it
// sets the model's Mode and options: `lock:"exclusive_read,ttl=2h"`. On a
// foreign key it makes the model a member of an aggregate whose lock is its
// root's: `lock:"root"` or `lock:"root=orders"`.
const TagName = "lock"

// model is what the lock tags say about one model, parsed once per schema.
type model struct {
	name     string // Go type name, for messages
	table    string
	mode     Mode          // "" for a model without a lock tag, and for members
	ttl      time.Duration // from ttl=…, 0 for Config.TTL
	pk       []*schema.Field
	kinds    []keyKind    // how each key column is spelled in the lock table
	typ      reflect.Type // nil for a model known only from the catalog
	root     *rootRef     // set for aggregate members
	err      error        // a malformed tag: every statement on the model fails with it
	lockable bool         // has a mode or is a member
	slip     string       // a lock tag the plugin does not read, as notLockable words it (tagslips.go); "" for none

	version atomic.Uint64 // advanced when what the catalog says of it grew (registry.changed): bindings write its row again

	keyColsOnce sync.Once
	keyCols     lockstore.KeyColumns // what a store's key column check sees of it (keyColumns)

	mu    sync.Mutex
	chain []*model // members: the parents up to and including the root
}

// policy is the model whose mode and TTL apply: the aggregate root for a
// member (once resolved), else the model itself.
func (m *model) policy() *model {
	if m.root != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		if len(m.chain) > 0 {
			return m.chain[len(m.chain)-1]
		}
	}
	return m
}

// idText is the lock table's spelling of v as the value of key column i.
// A value that cannot be canonical (text for an integer key) keeps its own
// text: a row read from the database always can be, and a value given by
// the caller is checked where it is given (canonical).
func (m *model) idText(i int, v any) string {
	if i < len(m.kinds) {
		if s, err := canonical(m.kinds[i], v); err == nil {
			return s
		}
	}
	return textKey(v)
}

// locksOnLoad says whether loading the model takes locks.
func (m *model) locksOnLoad() bool {
	mode := m.policy().mode
	return mode == ExclusiveRead || mode == ReadWrite
}

// loadAccess is the lock a load takes under the model's mode.
func (m *model) loadAccess() Access {
	if m.policy().mode == ReadWrite {
		return Read
	}
	return Write
}

// registry caches parsed models per plugin; it is not package state, so two
// plugins (or two tests) never see each other's models.
type registry struct {
	models sync.Map // *schema.Schema -> *model
	tables sync.Map // lower-cased table name -> lockable *model: lockability is the table's

	joinsMu  sync.RWMutex
	joins    map[string][]joinSide   // lower-cased many2many join table -> its sides
	cascades map[string][]cascadeRef // lower-cased parent table -> children its deletes change
	// anyCascade: some foreign key cascades (set once one is added, never
	// cleared), so a write without one skips checkCascades.
	anyCascade atomic.Bool
	changes    atomic.Uint64 // advanced with any model's version (bindings compare)

	tablesGen atomic.Uint64                // advanced with every table stored in tables
	onLoad    atomic.Pointer[lockedTables] // the tables locked on load, as of a tablesGen
}

// lockedTables is the names of the tables whose rows need a lock to be
// read, as they were when tables was at generation gen (lockedOnLoad).
type lockedTables struct {
	gen   uint64
	names []string
}

// joinSide is one side of a many2many join table: column holds keys of
// table's rows. Changing the join rows changes that record's relations.
type joinSide struct {
	table, column string
	key           string // the column of table's primary key that column holds
}

// tableModel is the lockable model of the table named name, whatever Go
// type the statement uses: table names are compared as the databases the
// plugin supports compare unquoted ones, without letter case.
func (r *registry) tableModel(name string) *model {
	if v, ok := r.tables.Load(strings.ToLower(name)); ok {
		return v.(*model)
	}
	return nil
}

// storeTable makes m the lockable model of its table.
func (r *registry) storeTable(m *model) {
	r.tables.Store(strings.ToLower(m.table), m)
	r.tablesGen.Add(1)
}

// storeAlias makes name (a partition or an inheritance child of m's table,
// on PostgreSQL) stand for m: its rows are m's records.
func (r *registry) storeAlias(name string, m *model) {
	if _, loaded := r.tables.LoadOrStore(strings.ToLower(name), m); !loaded {
		r.tablesGen.Add(1)
	}
}

// joinSides lists the sides of a many2many join table.
func (r *registry) joinSides(table string) []joinSide {
	r.joinsMu.RLock()
	defer r.joinsMu.RUnlock()
	return r.joins[strings.ToLower(table)]
}

// joinsOf lists the join tables, and their columns, that hold keys of table.
func (r *registry) joinsOf(table string) []columnSpec {
	r.joinsMu.RLock()
	defer r.joinsMu.RUnlock()
	var out []columnSpec
	for name, sides := range r.joins {
		for _, side := range sides {
			if strings.EqualFold(side.table, table) {
				out = append(out, columnSpec{Name: name, Column: side.column, Key: side.key})
			}
		}
	}
	return out
}

// noteJoins records the many2many join tables of s.
func (r *registry) noteJoins(s *schema.Schema) {
	for _, rel := range s.Relationships.Many2Many {
		if rel.JoinTable == nil || rel.FieldSchema == nil {
			continue
		}
		var sides []joinSide
		for _, ref := range rel.References {
			if ref.ForeignKey == nil || ref.PrimaryKey == nil || ref.ForeignKey.Schema != rel.JoinTable {
				continue
			}
			owner := rel.FieldSchema.Table
			if ref.OwnPrimaryKey {
				owner = s.Table
			}
			sides = append(sides, joinSide{table: owner, column: ref.ForeignKey.DBName, key: ref.PrimaryKey.DBName})
		}
		for _, side := range sides {
			if r.addJoinSide(rel.JoinTable.Table, side) {
				r.changed(side.table)
			}
		}
	}
}

// noteRelations records the join tables and cascading foreign keys of s
// and of every model its relationships reach, at any depth: a write of s
// cascades through tables whose models no statement may have used yet.
func (r *registry) noteRelations(s *schema.Schema) {
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

// addJoinSide records one side of a join table, once, and reports whether
// it is new.
func (r *registry) addJoinSide(table string, side joinSide) bool {
	name := strings.ToLower(table)
	r.joinsMu.Lock()
	defer r.joinsMu.Unlock()
	for _, s := range r.joins[name] {
		if strings.EqualFold(s.table, side.table) && s.column == side.column {
			return false
		}
	}
	if r.joins == nil {
		r.joins = map[string][]joinSide{}
	}
	r.joins[name] = append(slices.Clone(r.joins[name]), side)
	return true
}

// changed notes that what the catalog says of table grew (a join table or
// a cascade learnt from another model): its row is written again.
func (r *registry) changed(table string) {
	if m := r.tableModel(table); m != nil && m.typ != nil {
		m.version.Add(1)
		r.changes.Add(1)
	}
}

// modelOf returns the lock configuration of s, parsing its tags the first
// time it is seen.
func (r *registry) modelOf(s *schema.Schema, namer schema.Namer) *model {
	if m, ok := r.models.Load(s); ok {
		return m.(*model)
	}
	var m *model
	if s.ModelType.Name() == "" && r.joinSides(s.Table) != nil {
		// GORM's own many2many join tables copy the key fields' tags of
		// both sides; their rows are the sides' relations (many2many.go).
		m = &model{name: s.Name, table: s.Table, pk: s.PrimaryFields, typ: s.ModelType}
	} else {
		m = parseModel(s, namer)
	}
	actual, loaded := r.models.LoadOrStore(s, m)
	m = actual.(*model)
	if !loaded {
		r.noteRelations(s)
		if m.lockable {
			r.storeTable(m)
		}
	}
	return m
}

// parseModel reads the lock tags of s. Errors name the model and the field.
func parseModel(s *schema.Schema, namer schema.Namer) *model {
	m := &model{name: s.Name, table: s.Table, pk: s.PrimaryFields, typ: s.ModelType, slip: tagSlip(s.ModelType)}
	for _, f := range s.PrimaryFields {
		m.kinds = append(m.kinds, kindOf(f))
	}
	for _, f := range s.Fields {
		tag, ok := f.Tag.Lookup(TagName)
		if !ok {
			continue
		}
		fail := func(format string, args ...any) *model {
			m.err = fmt.Errorf("%w: model %s field %s: %s", ErrInvalid, s.Name, f.Name, fmt.Sprintf(format, args...))
			m.lockable = true
			return m
		}
		tag = strings.TrimSpace(tag)
		if tag == "root" || strings.HasPrefix(tag, "root=") {
			if f.PrimaryKey {
				return fail("lock:%q belongs on the foreign key to the root, not on the primary key", tag)
			}
			if m.root != nil {
				return fail("a second root tag; a member has one root")
			}
			ref, err := parseRoot(s, f, tag, namer)
			if err != "" {
				return fail("%s", err)
			}
			m.root = ref
			continue
		}
		if !f.PrimaryKey {
			return fail("the lock tag %q belongs on the primary key (or write root to make the model a member)", tag)
		}
		if m.mode != "" {
			return fail("a second lock tag; put one on the primary key")
		}
		var msg string
		if m.mode, m.ttl, msg = parseMode(tag); msg != "" {
			return fail("%s", msg)
		}
	}
	if m.root != nil && m.mode != "" {
		m.err = fmt.Errorf("%w: model %s field %s: a member has no mode of its own; it takes its root's", ErrInvalid, s.Name, m.root.field.Name)
	}
	m.lockable = m.mode != "" || m.root != nil
	if m.lockable && m.err == nil && len(m.pk) == 0 {
		m.err = fmt.Errorf("%w: model %s has a lock tag but no primary key", ErrInvalid, s.Name)
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

// modelFor parses the schema of value (a model or a pointer to one).
func (p *Plugin) modelFor(db *gorm.DB, value any) (*model, *gorm.Statement, error) {
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(value); err != nil {
		return nil, nil, err
	}
	m := p.reg.modelOf(stmt.Schema, db.NamingStrategy)
	if err := p.resolve(m); err != nil {
		return m, stmt, err
	}
	return m, stmt, nil
}

// rootRef is a member's link to its parent.
type rootRef struct {
	field *schema.Field // the member's foreign key
	table string        // the parent's table
	rel   *schema.Relationship
}

// parseRoot reads `lock:"root"` (the parent is the belongs-to association
// whose foreign key this is, or, without one, the model the field's name
// names: ShipmentID -> shipments) and `lock:"root=table"`.
func parseRoot(s *schema.Schema, f *schema.Field, tag string, namer schema.Namer) (*rootRef, string) {
	ref := &rootRef{field: f}
	if table, ok := strings.CutPrefix(tag, "root="); ok {
		if table = strings.TrimSpace(table); table == "" {
			return nil, "root= needs the root's table name"
		}
		ref.table = table
		return ref, ""
	}
	for _, rel := range s.Relationships.BelongsTo {
		if len(rel.References) == 1 && rel.References[0].ForeignKey == f && rel.FieldSchema != nil {
			ref.rel, ref.table = rel, rel.FieldSchema.Table
			return ref, ""
		}
	}
	name, ok := strings.CutSuffix(f.Name, "ID")
	if !ok || name == "" || namer == nil {
		return nil, "lock:\"root\" must be on a foreign key (a field like OrderID, or one a belongs-to association uses); or name the root's table with root=<table>"
	}
	ref.table = namer.TableName(name)
	return ref, ""
}

// lockable lists the lockable models known by table.
func (r *registry) lockable() []*model {
	var out []*model
	r.tables.Range(func(_, v any) bool {
		if m := v.(*model); !slices.Contains(out, m) { // a partition's name is an alias (storeAlias)
			out = append(out, m)
		}
		return true
	})
	return out
}
