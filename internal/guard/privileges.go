package guard

import (
	"slices"

	"github.com/offlinelock/offlinelock/internal/lockstore"
)

// Missing names each privilege this role lacks, with the grant that
// gives it, to install the guard on every table the plans of tables cover
// or, with remove, to remove it from every table that carries it (then
// tables is not read): read before anything is changed, since MySQL's DDL
// commits statement by statement and must not stop half-way.
func Missing(c lockstore.Conn, g lockstore.Guard, tables []Table, remove bool) ([]string, error) {
	var names []string
	if remove {
		have, err := g.GuardedTables(c)
		if err != nil {
			return nil, err
		}
		for table := range have {
			names = append(names, table)
		}
	} else {
		plans, err := Plan(c, g, tables, map[string]Failure{})
		if err != nil {
			return nil, err
		}
		for _, p := range plans {
			names = append(names, p.Table)
		}
	}
	slices.Sort(names)
	return g.MissingGuardPrivileges(c, names, remove)
}
