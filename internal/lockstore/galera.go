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
	// The fence found every key session's just before: fewer rows, or no
	// transaction, say the node rolled it back unannounced.
	n, err := c.Exec(`UPDATE `+s.table+mysqlPK+` SET expires_at = IF(@@in_transaction = 1, expires_at + INTERVAL 1 MICROSECOND, `+mysqlRefuse+`) WHERE `+
		orKeys(strings.Repeat("(", len(keys)))+` AND holder = '' AND session = ?`, args...)
	if err = s.txLost(err); err == nil && n < int64(len(sortKeys(keys))) {
		err = fmt.Errorf("%w (the fence's write of its key rows changed %d of %d)", ErrTxLost, n, len(sortKeys(keys)))
	}
	return err
}

// Galera is Store's: s is on a Galera node with replication on.
func (s *mysqlStore) Galera() bool { return s.galera.Load() }

// Galera is Store's: only a MySQL/MariaDB server joins a Galera cluster.
func (t *sqlStore) Galera() bool { return false }

// A Galera node can roll a transaction back unannounced (a BF abort during
// a SELECT ends it with warning 1317, and later statements autocommit).
// galeraPutConflict refuses a lock-table write outside a transaction, and
// Confirm reads granted locks back after COMMIT (TestMySQLGalera).

// galeraPutConflict is putRows' ON DUPLICATE KEY UPDATE on Galera, failing
// outside a transaction.
const galeraPutConflict = `ON DUPLICATE KEY UPDATE access = IF(@@in_transaction = 1, VALUES(access), ` + mysqlRefuse + `),
	session = VALUES(session), user_name = VALUES(user_name), token = VALUES(token), generation = VALUES(generation),
	acquired_at = VALUES(acquired_at), expires_at = VALUES(expires_at)`

// ErrTxLost: the Galera node rolled the store's transaction back unannounced.
var ErrTxLost = errors.New("offlinelock: the Galera node rolled this transaction back for a conflicting write from another node, without reporting it to the statement then running; nothing of it was committed: retry it")

// txLost tells galeraPutConflict's refusal.
func (s *mysqlStore) txLost(err error) error {
	if s.galera.Load() && isBulkRefusal(err) {
		return fmt.Errorf("%w (a lock-table write of its decision ran after it, outside any transaction, and was refused)", ErrTxLost)
	}
	return err
}

// Confirm, on Galera, reads back after COMMIT the locks on keys granted
// session: one missing is refused with its holders, or ErrTxLost.
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
