package guard

import (
	"fmt"
	"slices"
	"strings"

	"github.com/offlinelock/offlinelock/internal/lockstore"
)

// cascadesInto are the foreign keys whose actions change rows of the
// guarded table (MySQL/MariaDB fire no triggers for them), each with the
// table's records, for its parent's triggers to check. A key of several
// columns and a second level of actions are refused, naming the constraint.
func (b *builder) cascadesInto(table string, recs []lockstore.GuardRecord) ([]lockstore.GuardCascade, error) {
	cs, err := b.g.CascadesInto(b.c, table)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	name, err := b.g.QualifiedName(b.c, table)
	if err != nil {
		return nil, err
	}
	for i := range cs {
		cc := &cs[i]
		if cc.Columns > 1 {
			return nil, fmt.Errorf("offlinelock: guarding %s: its foreign key %s has %d columns and an ON DELETE or ON UPDATE action, which changes its rows "+
				"without firing a trigger, and the guard follows one-column keys only: make the action RESTRICT or NO ACTION, or the key one column", table, cc.Constraint, cc.Columns)
		}
		up, err := b.g.CascadesInto(b.c, cc.Parent)
		if err != nil {
			return nil, err
		}
		if i := slices.IndexFunc(up, func(u lockstore.GuardCascade) bool { return reaches(u, *cc) }); i >= 0 {
			return nil, fmt.Errorf("offlinelock: guarding %s: its foreign key %s follows changes of %s, whose own rows the action of %s's foreign key %s changes: "+
				"two levels of actions fire no trigger, and the guard cannot see the second; make one of them RESTRICT or NO ACTION", table, cc.Constraint, cc.Parent, cc.Parent, up[i].Constraint)
		}
		cc.Child, cc.ChildName, cc.Records = table, name, recs
	}
	return cs, nil
}

// reaches reports whether the action of up (a foreign key of cc's parent)
// goes on through cc: up deletes the parent's rows and cc follows deletes,
// or up changes the column cc references and cc follows key changes.
func reaches(up, cc lockstore.GuardCascade) bool {
	deletes := up.OnDelete == "CASCADE"
	changes := (up.OnDelete != "" && !deletes || up.OnUpdate != "") && strings.EqualFold(up.Column, cc.ParentColumn)
	return deletes && cc.OnDelete != "" || changes && cc.OnUpdate != ""
}
