package lockstore

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// detectGalera reads whether the server is a Galera node with replication
// on; MySQL has no wsrep_on, and MariaDB without a cluster has it OFF.
func (s *mysqlStore) detectGalera(c Conn) error {
	var on string
	_, err := c.Query(`SHOW VARIABLES LIKE 'wsrep_on'`, nil, func(r *sql.Rows) error {
		var name string
		return r.Scan(&name, &on)
	})
	s.galera.Store(strings.EqualFold(on, "ON"))
	return err
}

// Certify writes the session's key rows of keys, on Galera only.
func (s *mysqlStore) Certify(c Conn, keys []Key, session string) error {
	c = s.observed(c)
	if !s.galera.Load() || len(keys) == 0 {
		return nil
	}
	args := make([]any, 0, 2*len(keys)+1)
	for _, k := range keys {
		args = append(args, k.Resource, k.ID)
	}
	args = append(args, session)
	// The fence found every key session's (Check), with its key row
	// share-locked, just before: fewer rows, or a run outside any
	// transaction (galeraPutConflict), say that the node rolled the
	// transaction back meanwhile without reporting it, and the write's
	// COMMIT would succeed with nothing to commit.
	n, err := c.Exec(`UPDATE `+s.table+mysqlPK+` SET expires_at = IF(@@in_transaction = 1, expires_at + INTERVAL 1 MICROSECOND, `+mysqlRefuse+`) WHERE `+
		orKeys(strings.Repeat("(", len(keys)))+` AND holder = '' AND session = ?`, args...)
	if err = s.txLost(err); err == nil && n < int64(len(sortKeys(keys))) {
		err = fmt.Errorf("%w (the fence's write of its key rows changed %d of %d)", ErrTxLost, n, len(sortKeys(keys)))
	}
	return err
}

// Galera is Store's: whether s is on a node of a Galera cluster with
// replication on (detected by Migrate).
func (s *mysqlStore) Galera() bool { return s.galera.Load() }

// Galera is Store's: only a MySQL/MariaDB server joins a Galera cluster.
func (t *sqlStore) Galera() bool { return false }

// A Galera node can roll a transaction of the store's back without the
// client hearing of it. When the applier of another node's write set
// needs a row the transaction has locked, the node aborts the transaction
// (a BF abort). If a SELECT of the transaction is running then, MariaDB
// ends it with warning 1317 (Query interrupted), not an error, returns its
// rows, and rolls the transaction back; the statements that follow run in
// autocommit mode, and COMMIT, with no transaction left, succeeds
// (TestMySQLGalera: a load whose lock-table writes were rolled back so
// returned its rows, with no error, and without the locks).
//
// Two things keep that from granting a lock:
//
//   - galeraPutConflict: a lock-table write of a decision refuses to run
//     outside a transaction, so a decision read in a transaction the node
//     has rolled back is never written, in autocommit mode, over the grant
//     that aborted it;
//   - Confirm: after the COMMIT of a transaction that granted locks, the
//     store reads them back on the same node, where a commit of its own is
//     applied before COMMIT returns.

// galeraPutConflict is putRows' ON DUPLICATE KEY UPDATE on Galera: the
// first assignment fails the statement (mysqlRefuse) when it runs outside
// a transaction.
const galeraPutConflict = `ON DUPLICATE KEY UPDATE access = IF(@@in_transaction = 1, VALUES(access), ` + mysqlRefuse + `),
	session = VALUES(session), user_name = VALUES(user_name), token = VALUES(token), generation = VALUES(generation),
	acquired_at = VALUES(acquired_at), expires_at = VALUES(expires_at)`

// ErrTxLost: the Galera node rolled the store's transaction back (a
// conflicting write set from another node) without reporting it to the
// statement that ran then; nothing of the transaction was committed.
var ErrTxLost = errors.New("offlinelock: the Galera node rolled this transaction back for a conflicting write from another node, without reporting it to the statement then running; nothing of it was committed: retry it")

// txLost tells galeraPutConflict's refusal.
func (s *mysqlStore) txLost(err error) error {
	if s.galera.Load() && isBulkRefusal(err) {
		return fmt.Errorf("%w (a lock-table write of its decision ran after it, outside any transaction, and was refused)", ErrTxLost)
	}
	return err
}

// Confirm, on Galera, reads back after COMMIT the locks on keys that a
// transaction granted session: each must be session's Write lock (its key
// row) or Read lock (its reader row). A key that is not is refused with
// its holders, or, with none, reported as ErrTxLost. Elsewhere it reads
// nothing.
func (s *mysqlStore) Confirm(c Conn, keys []Key, o Owner, access Access) error {
	c = s.observed(c)
	if !s.galera.Load() || len(keys) == 0 {
		return nil
	}
	for _, batch := range chunks(sortKeys(keys)) {
		list, args := keyList(batch)
		rows := map[Key][]row{}
		var now time.Time
		_, err := c.Query(`SELECT `+lockColumns+`, `+mysqlClock+` FROM `+s.table+mysqlPK+` WHERE `+s.inKeys(list), args, func(r *sql.Rows) error {
			var clock any
			rw, err := scanRow(r, &clock)
			if err != nil {
				return err
			}
			if now, err = scanTime(clock); err != nil {
				return err
			}
			k := Key{rw.Resource, rw.ID}
			rows[k] = append(rows[k], rw)
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range batch {
			var holders []Lock
			mine := false
			for _, r := range rows[k] {
				switch {
				case r.holder == "" && r.Access == Write && r.Owner.Session == o.Session,
					r.holder != "" && r.holder == o.Session:
					mine = true
				case r.holder == "" && r.Access == Write && r.live(now),
					r.holder != "" && r.live(now):
					holders = append(holders, r.Lock)
				}
			}
			switch {
			case mine:
			case len(holders) > 0:
				return refused(k, access, holders)
			default:
				return fmt.Errorf("%w (its locks were not there after COMMIT)", ErrTxLost)
			}
		}
	}
	return nil
}
