package lockstore

import (
	"database/sql"
	"fmt"
)

// Generations on PostgreSQL are fencing tokens: every grant of a key gets
// a larger one, and a value handed out is never handed out again, not even
// by a standby promoted after the old primary lost its last grants
// (asynchronous replication). Two schemes keep that across a failover:
//
//   - the WAL timeline (timelineGeneration): the sequence plus the
//     timeline above 2^40. A promoted standby writes on a higher timeline,
//     so its values are larger than anything the old primary issued, with
//     no assumption about clocks. It needs pg_current_wal_lsn and
//     pg_walfile_name, which managed services may revoke.
//   - the epoch (epochGeneration), where a role cannot read the timeline:
//     the sequence plus an offset kept in the catalog row epochName, valid
//     for one server incarnation (its postmaster start time, which a
//     promotion leaves unchanged but which differs between the old primary
//     and the standby, and changes at every restart). The first node that
//     meets a server the row does not name (db.Use, the catalog refresh)
//     moves the offset so that the next value is the server's clock in
//     microseconds: from then on each value is at most the clock at the
//     moment it is issued (grants are far fewer than one a microsecond),
//     so the new primary's values exceed the old primary's, lost ones
//     included, as long as the two servers' clocks differ by less than the
//     failover takes. Until the offset moves, a grant on a server the row
//     does not name takes the clock itself.
//
// A database uses one scheme for every node: the epoch row, once a node
// that cannot read the timeline has made it, switches every node to the
// epoch (the timeline nodes look for it in each grant). Epoch values
// (the clock in microseconds, about 2^50.6 in 2026) exceed the timeline's
// (timeline × 2^40) for any timeline below 1,600, so the switch keeps
// them growing. docs/scaling.md.

// epochName is the catalog row of the epoch: the server incarnation it is
// valid for, a space, and the offset.
const epochName = "offlinelock:generation epoch"

// pgServerID is the server incarnation: its postmaster start time, as
// exact text.
const pgServerID = `extract(epoch FROM pg_postmaster_start_time())::text`

// pgClockMicros is the server's clock in microseconds.
const pgClockMicros = `(extract(epoch FROM clock_timestamp()) * 1000000)::bigint`

// timelineGeneration is the timeline scheme's value.
func (s *postgresStore) timelineGeneration() string {
	return `(nextval('` + unquote(s.seq) + `') + (('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint << 40))`
}

// epochGeneration is the epoch scheme's value: the sequence plus the
// offset of this server incarnation, or the clock where the row names
// another.
func (s *postgresStore) epochGeneration() string {
	return `COALESCE(nextval('` + unquote(s.seq) + `') + (SELECT split_part(e.spec, ' ', 2)::bigint FROM ` + s.catalog +
		` e WHERE e.name = ` + sqlLiteral(epochName) + ` AND split_part(e.spec, ' ', 1) = ` + pgServerID + `), ` + pgClockMicros + `)`
}

// generationFor is the SQL of a fresh generation for a role that can read
// the WAL timeline (wal) or cannot: the latter uses the epoch, the former
// the timeline unless the epoch row exists.
func (s *postgresStore) generationFor(wal bool) string {
	if !wal {
		return s.epochGeneration()
	}
	return `(CASE WHEN EXISTS (SELECT 1 FROM ` + s.catalog + ` e WHERE e.name = ` + sqlLiteral(epochName) + `) THEN ` +
		s.epochGeneration() + ` ELSE ` + s.timelineGeneration() + ` END)`
}

// readsTimeline says whether this role may read the WAL timeline. A
// standby has no current WAL position; EXECUTE is checked there all the
// same.
func (s *postgresStore) readsTimeline(c Conn) (bool, error) {
	var timeline string
	_, err := c.Query(`SELECT CASE WHEN pg_is_in_recovery() THEN '' ELSE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END`, nil,
		func(r *sql.Rows) error { return r.Scan(&timeline) })
	if err != nil && IsServerError(err) {
		return false, nil
	}
	return err == nil, err
}

// KeepEpoch moves the epoch's offset where the catalog's row names another
// server incarnation than the one c is on (a restart, or a standby
// promoted since), and makes the row where a role that cannot read the
// timeline finds none. The new offset makes the next value the clock in
// microseconds, and never less than the offset the row had. Nothing is
// done on a standby, or where the database uses the timeline and this
// role reads it.
func (s *postgresStore) KeepEpoch(c Conn) error {
	c = s.observed(c)
	// Read first: the upsert locks the row even where it changes nothing.
	var move bool
	_, err := c.Query(`SELECT NOT pg_is_in_recovery() AND NOT EXISTS (SELECT 1 FROM `+s.catalog+` WHERE name = $1::text AND split_part(spec, ' ', 1) = `+pgServerID+`)
	AND ($2 OR EXISTS (SELECT 1 FROM `+s.catalog+` WHERE name = $1::text))`, []any{epochName, !s.walGen.Load()},
		func(r *sql.Rows) error { return r.Scan(&move) })
	if err == nil && move {
		_, err = c.Exec(`INSERT INTO `+s.catalog+` AS k (name, spec)
SELECT $1::text, `+pgServerID+` || ' ' || GREATEST(`+pgClockMicros+` - nextval('`+unquote(s.seq)+`'),
	COALESCE((SELECT split_part(o.spec, ' ', 2)::bigint FROM `+s.catalog+` o WHERE o.name = $1::text), 0))
ON CONFLICT (name) DO UPDATE SET spec = EXCLUDED.spec WHERE split_part(k.spec, ' ', 1) <> split_part(EXCLUDED.spec, ' ', 1)`, epochName)
	}
	if err != nil {
		return fmt.Errorf("offlinelock: keeping the generation epoch in catalog %s: %w", s.catalog, err)
	}
	return nil
}

// EpochKeeper is a store whose generations may rest on an epoch that a
// node must move when the server changes (PostgreSQL): the plugin calls
// KeepEpoch with every catalog refresh.
type EpochKeeper interface {
	KeepEpoch(c Conn) error
}
