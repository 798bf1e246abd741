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

// checkServer refuses an unsupported engine, and a server whose
// WAL position this role may not read (managed services may revoke
// pg_current_wal_lsn or pg_walfile_name): the generations carry the WAL
// timeline, which keeps them unique across a failover, and without it the
// first grant would fail half-way. It runs before Migrate changes anything.
func (s *postgresStore) checkServer(c Conn) error {
	var version string
	if _, err := c.Query(`SELECT version()`, nil, func(r *sql.Rows) error { return r.Scan(&version) }); err != nil {
		return err
	}
	if err := refuseEngine(version); err != nil {
		return err
	}
	// A standby has no current WAL position (it is in recovery); the
	// function's EXECUTE is checked there all the same.
	var timeline string
	_, err := c.Query(`SELECT CASE WHEN pg_is_in_recovery() THEN '' ELSE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END`, nil,
		func(r *sql.Rows) error { return r.Scan(&timeline) })
	if err != nil && IsServerError(err) {
		return fmt.Errorf("offlinelock: this role cannot read the server's WAL timeline (pg_walfile_name(pg_current_wal_lsn())), "+
			"which keeps lock generations unique across failovers: GRANT EXECUTE ON FUNCTION pg_catalog.pg_current_wal_lsn(), "+
			"pg_catalog.pg_walfile_name(pg_lsn) TO the application's role (docs/scaling.md): %w", err)
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
