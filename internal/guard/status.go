package guard

import (
	"slices"
	"strings"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
)

// State is one table's guard as Status reads it from the database.
type State struct {
	Table string // lower case
	// State is a lockstore Guard state, or "unguardable" where Plan
	// cannot follow the table (Reason says why).
	State, Reason string
}

// Status reads whether the guard of each existing table the plans of tables
// cover is as this version installs it, in table order, or "unguardable".
func Status(c lockstore.Conn, g lockstore.Guard, tables []model.Spec) ([]State, error) {
	fails := map[string]Failure{}
	plans, err := Plan(c, g, tables, fails)
	if err != nil {
		return nil, err
	}
	out := make([]State, 0, len(plans)+len(fails))
	for _, plan := range plans {
		state, err := g.TableState(c, plan)
		if lockstore.IsMissingTable(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, State{Table: strings.ToLower(plan.Table), State: state})
	}
	for table, f := range fails {
		out = append(out, State{Table: table, State: "unguardable", Reason: strings.TrimPrefix(f.Err.Error(), "offlinelock: ")})
	}
	slices.SortFunc(out, func(a, b State) int { return strings.Compare(a.Table, b.Table) })
	return out, nil
}

// Missing names each privilege this role lacks, with its grant, to install
// the guard on every table the plans of tables cover or, with remove, to
// remove it from every table that carries it: read before anything is
// changed, since MySQL's DDL must not stop half-way.
func Missing(c lockstore.Conn, g lockstore.Guard, tables []model.Spec, remove bool) ([]string, error) {
	var names []string
	var err error
	if remove {
		names, err = Guarded(c, g)
	} else {
		var plans []lockstore.GuardPlan
		plans, err = Plan(c, g, tables, map[string]Failure{})
		for _, p := range plans {
			names = append(names, p.Table)
		}
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return g.MissingGuardPrivileges(c, names, remove)
}
