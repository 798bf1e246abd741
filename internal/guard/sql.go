package guard

import (
	"errors"
	"maps"
	"slices"

	"github.com/offlinelock/offlinelock/internal/lockstore"
)

// SQL sends an install's statements to c, a planning connection
// (lockstore.NewPlan) that records them instead of running them: the
// guard's routine, then the triggers of every table the catalog declares,
// which tables reads (after the routine, as an install would; nil tables
// when there is no catalog yet). err stops everything; unfollowed joins
// the failures of tables the guard cannot follow, whose statements are
// left out while the others' are written.
func SQL(c lockstore.Conn, g lockstore.Guard, tables func() ([]Table, error)) (unfollowed, err error) {
	if err := g.InstallGuardRoutine(c); errors.Is(err, lockstore.ErrGuardProtocol) {
		return nil, err // names the upgrade: no install is the way out
	} else if err != nil {
		return nil, InstallError("the guard routine", err)
	}
	ts, err := tables()
	if err != nil {
		return nil, err
	}
	fails := map[string]Failure{}
	plans, err := Plan(c, g, ts, fails)
	if err != nil {
		return nil, err
	}
	for _, p := range plans {
		if err := g.GuardTable(c, p); err != nil && !lockstore.IsMissingTable(err) {
			return nil, InstallError("table "+p.Table, err)
		}
	}
	for _, table := range slices.Sorted(maps.Keys(fails)) {
		unfollowed = errors.Join(unfollowed, fails[table].Err)
	}
	return unfollowed, nil
}
