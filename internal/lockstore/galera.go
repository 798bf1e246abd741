package lockstore

import (
	"database/sql"
	"strings"
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
	_, err := c.Exec(`UPDATE `+s.table+mysqlPK+` SET expires_at = expires_at + INTERVAL 1 MICROSECOND WHERE `+
		orKeys(strings.Repeat("(", len(keys)))+` AND holder = '' AND session = ?`, args...)
	return err
}

// IsGalera says whether s is on a node of a Galera cluster with
// replication on (detected by Migrate).
func IsGalera(s Store) bool {
	my, ok := s.(*mysqlStore)
	return ok && my.galera.Load()
}
