package lockstore

import (
	"database/sql"
	"fmt"
)

// Generations on PostgreSQL are fencing tokens that stay unique across a
// failover (docs/scaling.md): the sequence plus the WAL timeline above 2^40
// (generation), or, where the role cannot read the timeline, plus
// an offset kept per server incarnation in the catalog row epochName, which
// makes values track the clock in microseconds (epochGeneration). Once the
// epoch row exists every node uses it; its values exceed any timeline's
// below 1,600, so the switch keeps them growing.

// epochName is the catalog row of the epoch: "<server incarnation> <offset>".
const epochName = "offlinelock:generation epoch"

// pgServerID is the server incarnation: its postmaster start time.
const pgServerID = `extract(epoch FROM pg_postmaster_start_time())::text`

// pgClockMicros is the server's clock in microseconds.
const pgClockMicros = `(extract(epoch FROM clock_timestamp()) * 1000000)::bigint`

// epochGeneration is the sequence plus this incarnation's offset, or the
// clock where the row names another.
func (s *postgresStore) epochGeneration() string {
	return `COALESCE(nextval('` + unquote(s.seq) + `') + (SELECT split_part(e.spec, ' ', 2)::bigint FROM ` + s.catalog +
		` e WHERE e.name = ` + sqlLiteral(epochName) + ` AND split_part(e.spec, ' ', 1) = ` + pgServerID + `), ` + pgClockMicros + `)`
}

// generation is the SQL of a fresh generation: the sequence plus the
// timeline above 2^40, where this role reads it and the epoch row does not
// exist, else epochGeneration.
func (s *postgresStore) generation() string {
	if !s.walGen.Load() {
		return s.epochGeneration()
	}
	return `(CASE WHEN EXISTS (SELECT 1 FROM ` + s.catalog + ` e WHERE e.name = ` + sqlLiteral(epochName) + `) THEN ` + s.epochGeneration() +
		` ELSE (nextval('` + unquote(s.seq) + `') + (('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint << 40)) END)`
}

// readsTimeline says whether this role may read the WAL timeline.
func (s *postgresStore) readsTimeline(c Conn) (bool, error) {
	var timeline string
	_, err := c.Query(`SELECT CASE WHEN pg_is_in_recovery() THEN '' ELSE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END`, nil,
		func(r *sql.Rows) error { return r.Scan(&timeline) })
	if err != nil && IsServerError(err) {
		return false, nil
	}
	return err == nil, err
}

// KeepEpoch moves the offset where the epoch row names another server
// incarnation, so the next value is the clock in microseconds and never
// less than before, and makes the row where this role cannot read the
// timeline. Nothing is done on a standby.
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

// EpochKeeper is a store whose epoch a node must move when the server
// changes (PostgreSQL), with every catalog refresh.
type EpochKeeper interface {
	KeepEpoch(c Conn) error
}
