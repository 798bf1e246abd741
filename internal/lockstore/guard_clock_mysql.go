package lockstore

import (
	"database/sql"
	"fmt"
)

// The guard's clock on MySQL/MariaDB is SYSDATE(6) converted to UTC, never
// the statement's time, which any client sets (docs/guard.md, "Its clock"): a
// repeated local hour takes the earlier instant, an unconvertible zone the
// earliest time, so no lock looks expired early. The plugin's own
// statements keep mysqlClock.

// mysqlGuardClockDecl declares the guard clock's variables: it goes with
// a routine's DECLAREs, before its handlers.
const mysqlGuardClockDecl = `DECLARE wall DATETIME(6) DEFAULT SYSDATE(6);
	DECLARE clock DATETIME(6) DEFAULT CONVERT_TZ(wall, @@session.time_zone, '+00:00');`

// mysqlGuardClockSet settles clock: the earlier of two instants, and the
// earliest time where the conversion failed.
const mysqlGuardClockSet = `IF CONVERT_TZ(clock - INTERVAL 1 HOUR, '+00:00', @@session.time_zone) = wall THEN SET clock = clock - INTERVAL 1 HOUR; END IF;
	SET clock = COALESCE(clock, '1000-01-01');`

// errSysdateIsNow refuses an install on a server whose SYSDATE follows the
// statement's time.
var errSysdateIsNow = fmt.Errorf("offlinelock: this server's SYSDATE() follows SET timestamp (started with --sysdate-is-now): " +
	"any client could make every lock look expired to the guard; restart it without that option")

// probeGuardClock refuses a server whose SYSDATE a client's SET timestamp
// moves: with the session's time set to 1970, SYSDATE must still read the
// wall clock. c is one connection (withGuardLock's); its time is put back.
func (s *mysqlStore) probeGuardClock(c Conn) error {
	if _, err := c.Exec(`SET timestamp = 86400`); err != nil {
		return err
	}
	defer c.Exec(`SET timestamp = DEFAULT`)
	var wall int
	if _, err := c.Query(`SELECT SYSDATE() > '2000-01-01'`, nil, func(r *sql.Rows) error { return r.Scan(&wall) }); err != nil {
		return err
	}
	if wall != 1 {
		return errSysdateIsNow
	}
	return nil
}
