package guard

import (
	"fmt"
	"strings"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
)

// BusyFor is how long installs on statements' ways leave a table alone
// after one timed out waiting for it: each statement would otherwise wait
// the install's lock timeout for it again.
const BusyFor = 10 * time.Second

// Memory is what the caller remembers of its installs between them, by
// lower-case table name; Install reads and updates both maps, which must
// not be nil.
type Memory struct {
	Tables map[string]string    // the version each table carries
	Busy   map[string]time.Time // tables whose install timed out → until when to leave them alone
}

// Install installs (or upgrades in place) the triggers of each of plans
// that mem does not show at its version, and records what it installed in
// mem. A table dropped since the plan was made is skipped. With skipBusy
// (an install on a statement's way) a table left alone in mem.Busy is
// skipped too. A table in use (a lock wait timed out) stops the install
// at once, since the next tables would likely wait as long, and is left
// alone for BusyFor; any other failure is returned, first one first,
// after the other tables are installed.
func Install(c lockstore.Conn, g lockstore.Guard, plans []lockstore.GuardPlan, mem Memory, skipBusy bool) error {
	var first error
	for _, plan := range plans {
		name := strings.ToLower(plan.Table)
		if v, ok := mem.Tables[name]; ok && v == plan.Version {
			continue
		}
		if until, ok := mem.Busy[name]; skipBusy && ok && time.Now().Before(until) {
			continue
		}
		err := g.GuardTable(c, plan)
		switch {
		case lockstore.IsMissingTable(err):
			continue // dropped since the plan was made: nothing to guard
		case lockstore.IsLockTimeout(err):
			mem.Busy[name] = time.Now().Add(BusyFor)
			return InstallError("table "+plan.Table, err)
		case err != nil:
			if first == nil {
				first = InstallError("table "+plan.Table, err)
			}
			continue
		}
		mem.Tables[name] = plan.Version
		delete(mem.Busy, name)
	}
	return first
}

// InstallError explains a failed install of what (the routine, a table):
// most often the role lacks a privilege, and the way out is explicit.
func InstallError(what string, err error) error {
	return fmt.Errorf("offlinelock: installing the database guard on %s: %w; "+
		"the database role needs to create triggers on the lockable tables and functions or procedures in their schema "+
		"(PostgreSQL: own the tables and have CREATE on the schema; MySQL/MariaDB: the TRIGGER and CREATE ROUTINE privileges, "+
		"and SUPER or log_bin_trust_function_creators=1 when binary logging is on), "+
		"or set Config.DisableGuard to run without it (then writes that do not pass through the plugin are not checked)%s", what, err, lockstore.OwnerHint(err))
}
