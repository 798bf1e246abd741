package model

import (
	"slices"
	"strings"

	"gorm.io/gorm/schema"
)

// Aggregate is the rest of m's aggregate that r knows: its root chain, and
// the members under m its has-one and has-many associations name, at any depth.
func (r *Registry) Aggregate(m *Model) []*Model {
	var out []*Model
	if m.Root != nil && r.Resolve(m) == nil {
		out = append(out, m.Chain()...)
	}
	seen := map[string]bool{strings.ToLower(m.Table): true}
	var walk func(x *Model, depth int)
	walk = func(x *Model, depth int) {
		if depth > 8 || len(x.PK) == 0 || x.PK[0].Schema == nil {
			return
		}
		for _, rel := range x.PK[0].Schema.Relationships.Relations {
			if rel.Type != schema.HasOne && rel.Type != schema.HasMany || rel.FieldSchema == nil {
				continue
			}
			c := r.ModelOf(rel.FieldSchema, nil)
			if c.Root == nil || c.Err != nil || seen[strings.ToLower(c.Table)] || r.Resolve(c) != nil || !slices.Contains(c.Chain(), x) {
				continue
			}
			seen[strings.ToLower(c.Table)] = true
			out = append(out, c)
			walk(c, depth+1)
		}
	}
	walk(m, 0)
	// Members that name their root on their own side only (lock:"root",
	// no association on the root's): known once GORM parsed them.
	for _, c := range r.Lockable() {
		if c.Root == nil || c.Err != nil || c.Type == nil || seen[strings.ToLower(c.Table)] || r.Resolve(c) != nil || !slices.Contains(c.Chain(), m) {
			continue
		}
		seen[strings.ToLower(c.Table)] = true
		out = append(out, c)
	}
	return out
}
