package lockstore

import (
	"database/sql"
	"fmt"
	"strings"
)

// Engines that speak PostgreSQL's or MySQL's protocol without being
// either: the guard's triggers, the order's row locks and the generations
// rest on the real servers' behaviour, untested elsewhere. db.Use names
// them before it changes anything.
var unsupportedEngines = []struct{ mark, name string }{
	{"CockroachDB", "CockroachDB"},
	{"-YB-", "YugabyteDB"},
	{"TiDB", "TiDB"},
}

// refuseEngine fails where version (the server's version string) names
// an engine offlinelock does not support.
func refuseEngine(version string) error {
	for _, e := range unsupportedEngines {
		if strings.Contains(version, e.mark) {
			return fmt.Errorf("offlinelock: %s is not supported (the server says %q): the lock table, the database guard and the lock generations "+
				"rely on PostgreSQL's or MySQL/MariaDB's own behaviour; use PostgreSQL, MySQL or MariaDB, or SQLite", e.name, version)
		}
	}
	return nil
}

// checkServer refuses an unsupported engine, and finds which generation
// this role can compute: where it may not read the WAL position (managed
// services may revoke pg_current_wal_lsn or pg_walfile_name), the epoch
// (generation_postgres.go). It runs before Migrate changes anything.
func (s *postgresStore) checkServer(c Conn) error {
	var version string
	if _, err := c.Query(`SELECT version()`, nil, func(r *sql.Rows) error { return r.Scan(&version) }); err != nil {
		return err
	}
	if err := refuseEngine(version); err != nil {
		return err
	}
	wal, err := s.readsTimeline(c)
	if err == nil && wal != s.walGen.Load() {
		s.walGen.Store(wal)
		s.buildGrants()
	}
	return err
}

// checkServer refuses an unsupported engine (TiDB speaks MySQL's protocol).
func (s *mysqlStore) checkServer(c Conn) error {
	var version string
	if _, err := c.Query(`SELECT VERSION()`, nil, func(r *sql.Rows) error { return r.Scan(&version) }); err != nil {
		return err
	}
	return refuseEngine(version)
}
