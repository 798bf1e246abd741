package offlinelock

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"

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

// certifier is a store that makes the fence take part in a cluster's
// certification (MariaDB Galera).
type certifier interface {
	Certify(c conn, keys []key, session string) error
}

// detectGalera reads whether the server is a Galera node with replication
// on; MySQL has no wsrep_on, and MariaDB without a cluster has it OFF.
func (s *mysqlStore) detectGalera(c conn) error {
	var on string
	_, err := c.query(`SHOW VARIABLES LIKE 'wsrep_on'`, nil, func(r *sql.Rows) error {
		var name string
		return r.Scan(&name, &on)
	})
	s.galera.Store(strings.EqualFold(on, "ON"))
	return err
}

// certify writes the session's key rows of keys, on Galera only.
func (s *mysqlStore) certify(c conn, keys []key, session string) error {
	if !s.galera.Load() || len(keys) == 0 {
		return nil
	}
	args := make([]any, 0, 2*len(keys)+1)
	for _, k := range keys {
		args = append(args, k.Resource, k.ID)
	}
	args = append(args, session)
	_, err := c.exec(`UPDATE `+s.table+mysqlPK+` SET expires_at = expires_at + INTERVAL 1 MICROSECOND WHERE `+
		orKeys(strings.Repeat("(", len(keys)))+` AND holder = '' AND session = ?`, args...)
	return err
}

// clusterConflict tells a write that lost certification (1213 at COMMIT)
// as the lock answer it is: ErrNotLocked when its lock is gone (another
// node took it over or released it), naming the cluster conflict; when
// the lock still holds, the conflict was over the data, and the error says
// to retry.
func (p *Plugin) clusterConflict(db *gorm.DB, st *state) {
	g, ok := st.t.(*mysqlStore)
	if !ok || !g.galera.Load() || mysqlCode(db.Error) != 1213 || len(st.required) == 0 {
		return
	}
	_, free, err := st.t.Check(direct(p.background(db)), st.required, st.owner, false)
	var le *LockedError
	lost := ""
	switch {
	case errors.As(err, &le):
		lost, free = " ("+le.Error()+")", []key{{le.Resource, le.ID}}
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
