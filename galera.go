package offlinelock

import (
	"errors"
	"fmt"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"gorm.io/gorm"
)

// Galera (MariaDB's multi-primary cluster) certifies each transaction's
// write set at COMMIT against the write sets the cluster ordered before it,
// and a failure is error 1213 at COMMIT (docs/scaling.md). Reads take no
// part: row locks are a node's own. The fence reads the key rows, so a
// save certified after another node's takeover could commit, or be
// replayed, after the new grant. So on Galera the fence also writes them:
// it moves the writer's own key rows' expiry by one microsecond, which puts
// them in its write set, where a takeover's or a release's write of the
// same rows makes one of the two fail certification.

// clusterConflict tells a write that lost certification (1213 at COMMIT)
// as the lock answer it is: ErrNotLocked when its lock is gone (another
// node took it over or released it), naming the cluster conflict; when
// the lock still holds, the conflict was over the data, and the error says
// to retry.
func (p *Plugin) clusterConflict(db *gorm.DB, st *state) {
	if st.t == nil || !lockstore.IsGalera(st.t.Store) || !lockstore.TxRolledBack(db.Error) || len(st.required) == 0 {
		return
	}
	_, free, err := st.t.check(direct(p.background(db)), st.required, st.owner, false)
	var le *LockedError
	lost := ""
	switch {
	case errors.As(err, &le):
		lost, free = " ("+le.Error()+")", []key{{Resource: le.Resource, ID: le.ID}}
	case err != nil:
		return
	}
	if len(free) > 0 {
		db.Error = fmt.Errorf("%w; the %s was rolled back: another node of the Galera cluster committed a conflicting write of the lock first (a takeover or a release%s), and the cluster refused this one at COMMIT: %w",
			notLockedForWrite(st.op, free), st.op, lost, db.Error)
		return
	}
	db.Error = fmt.Errorf("offlinelock: the %s of %s lost the Galera cluster's certification to a conflicting write on another node and was rolled back; the lock still holds: retry it: %w", st.op, db.Statement.Table, db.Error)
}

// confirmGrants reads back, after the plugin's own transaction of a load
// committed, the locks the load newly took, on Galera: a node that rolled
// the transaction back for another node's conflicting write while a SELECT
// of it ran reports that as a warning, and the COMMIT that follows
// succeeds with nothing to commit (internal/lockstore/galera.go). A lock
// another session holds is refused with its holders, as if the load had
// met it.
func (p *Plugin) confirmGrants(db *gorm.DB, st *state) error {
	c := st.caps().Certifier
	if c == nil || st.op != opLoad || st.m == nil {
		return nil
	}
	var keys []key
	for k, n := range st.newly {
		if n {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return public(c.Confirm(direct(p.background(db)), keys, lockstore.Owner(st.owner), lockstore.Access(st.m.loadAccess())))
}
