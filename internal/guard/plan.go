package guard

import (
	"slices"
	"strings"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
)

// Failure is a table Plan could not plan: why, and the lock resources
// (lower case) whose records it can hold.
type Failure struct {
	Err       error
	Resources []string
}

// Plan returns the plans of every table tables guard: the lockable tables
// that exist, their join tables, MySQL's cascade parents and PostgreSQL's
// partitions and inheritance children. A table the guard cannot follow
// fails the whole plan with fails nil; else it is recorded in fails by its
// lower-case name, and the rest are planned.
func Plan(c lockstore.Conn, g lockstore.Guard, tables []model.Spec, fails map[string]Failure) ([]lockstore.GuardPlan, error) {
	b := builder{c: c, g: g, tables: map[string]model.Spec{}, types: map[string]map[string]string{}}
	for _, t := range tables {
		b.tables[strings.ToLower(t.Table)] = t
	}
	ps := planSet{byTable: map[string]*lockstore.GuardPlan{}, recordsOf: map[string][]lockstore.GuardRecord{}}
	for _, t := range tables {
		if err := ps.addRecords(&b, t); err != nil {
			if fails == nil || lockstore.IsMissingTable(err) {
				return nil, err
			}
			fails[strings.ToLower(t.Table)] = Failure{Err: err, Resources: []string{strings.ToLower(resourceOf(b.tables, t))}}
		}
	}
	if err := ps.addCascades(&b, fails); err != nil {
		return nil, err
	}
	if err := ps.addInheritors(c, g); err != nil {
		return nil, err
	}
	return ps.plans(), nil
}

// planSet is the plans as Plan builds them, by table, in the order met.
type planSet struct {
	byTable   map[string]*lockstore.GuardPlan
	order     []string
	children  []string                           // every table with records, in order
	recordsOf map[string][]lockstore.GuardRecord // their records
}

// add is table's plan, with recs added to it.
func (ps *planSet) add(table string, recs []lockstore.GuardRecord) *lockstore.GuardPlan {
	name := strings.ToLower(table)
	pl, ok := ps.byTable[name]
	if !ok {
		pl = &lockstore.GuardPlan{Table: table}
		ps.byTable[name] = pl
		ps.order = append(ps.order, name)
	}
	pl.Records = append(pl.Records, recs...)
	return pl
}

// addRecord adds rec to table's plan, and table to the tables whose
// parents' cascades are followed.
func (ps *planSet) addRecord(table string, rec *lockstore.GuardRecord) {
	if rec == nil {
		return
	}
	ps.add(table, []lockstore.GuardRecord{*rec})
	if _, ok := ps.recordsOf[table]; !ok {
		ps.children = append(ps.children, table)
	}
	ps.recordsOf[table] = append(ps.recordsOf[table], *rec)
}

// addRecords adds the records of t's table and of its join tables.
func (ps *planSet) addRecords(b *builder, t model.Spec) error {
	rec, err := b.record(t, t.Table)
	if err != nil {
		return err
	}
	ps.addRecord(t.Table, rec)
	joins := map[string][]model.SpecColumn{}
	for _, l := range t.Links {
		joins[l.Name] = append(joins[l.Name], l)
	}
	for join, links := range joins {
		rec, err := b.joinRecord(t, join, links)
		if err != nil {
			return err
		}
		ps.addRecord(join, rec)
	}
	return nil
}

// addCascades gives the parents whose foreign-key actions change rows of
// a table with records (MySQL fires no trigger for them) the checks of
// those rows; one the guard cannot follow goes to fails, or fails the plan.
func (ps *planSet) addCascades(b *builder, fails map[string]Failure) error {
	for _, table := range ps.children {
		cs, err := b.cascadesInto(table, ps.recordsOf[table])
		if err != nil && fails != nil {
			f := Failure{Err: err}
			for _, r := range ps.recordsOf[table] {
				if !slices.Contains(f.Resources, strings.ToLower(r.Resource)) {
					f.Resources = append(f.Resources, strings.ToLower(r.Resource))
				}
			}
			fails[strings.ToLower(table)] = f
			continue
		}
		if err != nil {
			return err
		}
		for _, cc := range cs {
			pl := ps.add(cc.Parent, nil)
			pl.Cascades = append(pl.Cascades, cc)
		}
	}
	return nil
}

// addInheritors gives partitions and inheritance children (PostgreSQL)
// their parent's plan: a write into one fires its own triggers only.
func (ps *planSet) addInheritors(c lockstore.Conn, g lockstore.Guard) error {
	for _, name := range slices.Clone(ps.order) {
		pl := ps.byTable[name]
		if len(pl.Records) == 0 {
			continue
		}
		children, partitioned, err := g.Inheritors(c, pl.Table)
		if err != nil {
			return err
		}
		pl.Partitioned = partitioned
		for _, ch := range children {
			ps.add(ch, pl.Records).Inherits = pl.Table
		}
	}
	return nil
}

// plans is the set in order, each with its records sorted and its
// version: a fingerprint of all it guards.
func (ps *planSet) plans() []lockstore.GuardPlan {
	var out []lockstore.GuardPlan
	for _, name := range ps.order {
		pl := ps.byTable[name]
		slices.SortStableFunc(pl.Records, func(a, b lockstore.GuardRecord) int { return strings.Compare(a.Resource, b.Resource) })
		var fp []string
		for _, r := range pl.Records {
			fp = append(fp, r.Resource, r.Key("r"))
		}
		for _, cc := range pl.Cascades {
			fp = append(fp, cc.Child, cc.Column, cc.ParentColumn, cc.OnDelete, cc.OnUpdate)
		}
		if pl.Partitioned {
			fp = append(fp, "partitioned")
		}
		pl.Version = lockstore.GuardVersion(fp...)
		out = append(out, *pl)
	}
	return out
}

// resourceOf is the lock resource of t's records: its root's, up the
// chain of the catalog, or its own table's.
func resourceOf(tables map[string]model.Spec, t model.Spec) string {
	for i := 0; t.Root != nil && i < 16; i++ {
		up, ok := tables[strings.ToLower(t.Root.Table)]
		if !ok {
			return t.Root.Table
		}
		t = up
	}
	return t.Table
}
