package guard

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
)

// Gap is a table that can hold rows of Resources' records and that the
// guard does not cover. State is a lockstore Guard state, "unknown" (not
// read) or "unguardable" (Plan cannot follow it); Reason says it for people.
type Gap struct {
	Table     string
	Resources []string
	State     string
	Reason    string
}

// Shown is what the caller knows of its installs, so that Gaps reads only
// what it must.
type Shown struct {
	// Installed is the version each table carries by this process's
	// install: covered without a read at the version planned; nil reads all.
	Installed map[string]string
	// Busy says whether a table's install waits for a transaction that
	// has it in use: its state is "unknown", not read.
	Busy func(table string) bool
	// State reads one plan's state (g.TableState, bounded in time).
	State func(plan lockstore.GuardPlan) (string, error)
}

// Gaps reads which tables the plans of tables cover that the guard does
// not, in table order.
func Gaps(c lockstore.Conn, g lockstore.Guard, tables []model.Spec, shown Shown) ([]Gap, error) {
	fails := map[string]Failure{}
	plans, err := Plan(c, g, tables, fails)
	if err != nil {
		return nil, err
	}
	var out []Gap
	for _, plan := range plans {
		resources := planResources(plan)
		name := strings.ToLower(plan.Table)
		if v, ok := shown.Installed[name]; len(resources) == 0 || ok && v == plan.Version {
			continue
		}
		if shown.Busy(name) {
			out = append(out, Gap{Table: name, Resources: resources, State: "unknown",
				Reason: "could not be shown to carry the database guard: its install waits for a transaction that has the table in use, and is retried in the background"})
			continue
		}
		state, err := shown.State(plan)
		switch {
		case lockstore.IsMissingTable(err):
			continue // dropped: no row to hold
		case err != nil:
			// Not read in time (an install queued behind a transaction).
			out = append(out, Gap{Table: name, Resources: resources, State: "unknown",
				Reason: fmt.Sprintf("could not be shown to carry the database guard: %v", err)})
		case state != lockstore.GuardOK && state != lockstore.GuardHidden:
			// hidden: there by name, bodies unreadable to this role, as the install takes them
			out = append(out, Gap{Table: name, Resources: resources, State: state, Reason: reasonOf(state)})
		}
	}
	for _, table := range slices.Sorted(maps.Keys(fails)) {
		f := fails[table]
		out = append(out, Gap{Table: table, Resources: f.Resources, State: "unguardable",
			Reason: "cannot be guarded: " + strings.TrimPrefix(f.Err.Error(), "offlinelock: ")})
	}
	slices.SortStableFunc(out, func(a, b Gap) int { return strings.Compare(a.Table, b.Table) })
	return out, nil
}

// reasonOf says what a state lacks.
func reasonOf(state string) string {
	switch state {
	case lockstore.GuardDropped:
		return "does not carry the database guard (a trigger, routine or view of it is missing)"
	case lockstore.GuardDisabled:
		return "carries a disabled trigger of the database guard"
	case lockstore.GuardReplaced:
		return "carries a database guard that differs from what this version installs (a trigger or routine was replaced, or the guard is of another version)"
	case lockstore.GuardNewer:
		return "carries a database guard of a newer protocol than this node speaks (ErrGuardProtocol)"
	}
	return "is not covered by the database guard (" + state + ")"
}

// planResources are the lock resources (lower case) whose records plan's
// table can hold, or whose rows its foreign-key actions change.
func planResources(plan lockstore.GuardPlan) []string {
	var out []string
	add := func(r string) {
		if r = strings.ToLower(r); !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	for _, r := range plan.Records {
		add(r.Resource)
	}
	for _, cc := range plan.Cascades {
		for _, r := range cc.Records {
			add(r.Resource)
		}
	}
	return out
}
