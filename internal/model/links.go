package model

import (
	"cmp"
	"slices"
	"strings"

	"gorm.io/gorm/schema"
)

// Relationships are part of the record: a many2many join table's rows are
// its sides' relations, and a foreign key declared with GORM's
// constraint:OnDelete:CASCADE (or SET NULL, SET DEFAULT) makes a delete of
// a parent row change rows of the child table too, as OnUpdate does for an
// update of the parent's key. The registry keeps both kinds of link, from
// the models' relationships and from the catalog.

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
// holds the parent's key, ParentColumn ("" where unknown). KeepsOnDelete
// says the delete action sets the column (SET NULL, SET DEFAULT) rather
// than deleting the child rows, so the child's own children are not
// reached; ChildKey is the child's one-column primary key ("" where
// unknown), through which the walk goes on to the next level.
type CascadeRef struct {
	Table, Column, ParentColumn string
	ChildKey                    string
	OnDelete, OnUpdate          bool
	KeepsOnDelete               bool
	// From is the table of the model whose relationships declared it
	// (noteCascades), "" for the catalog's: a model parsed again under
	// that table's name (another type, a changed struct) replaces what
	// the earlier one declared.
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
		var sides []JoinSide
		for _, ref := range rel.References {
			if ref.ForeignKey == nil || ref.PrimaryKey == nil || ref.ForeignKey.Schema != rel.JoinTable {
				continue
			}
			owner := rel.FieldSchema.Table
			if ref.OwnPrimaryKey {
				owner = s.Table
			}
			sides = append(sides, JoinSide{Table: owner, Column: ref.ForeignKey.DBName, Key: ref.PrimaryKey.DBName})
		}
		for _, side := range sides {
			if r.AddJoinSide(rel.JoinTable.Table, side) {
				r.changed(side.Table)
			}
		}
	}
}

// noteRelations records the join tables and cascading foreign keys of s
// and of every model its relationships reach, at any depth: a write of s
// cascades through tables whose models no statement may have used yet.
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

// changesChildren says whether a foreign key's action changes the child
// rows.
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

// replaceCascades drops the cascades model table from declared before and
// adds refs (each of parents[i]), at once: a reader sees the one set or the
// other. It returns the child tables whose cascades changed.
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

// AddCascade records that ref cascades from parent (a catalog row's
// cascade), merged with what is known of the same foreign key, and
// reports whether that changed anything.
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
	return true
}

// keepsBoth says whether two records of one foreign key agree that its
// delete action keeps the child rows: where they differ, the delete is
// taken to delete them, which reaches further.
func keepsBoth(a, b CascadeRef) bool {
	switch {
	case a.OnDelete && b.OnDelete:
		return a.KeepsOnDelete && b.KeepsOnDelete
	case a.OnDelete:
		return a.KeepsOnDelete
	}
	return b.KeepsOnDelete
}

// CascadesFrom lists the foreign keys of table that cascade deletes or
// updates of the parent's key, by parent, for the catalog, so that a node
// that never parsed the models follows them too.
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
