package lockstore

import (
	"database/sql"
	"fmt"
)

// The guard's clock on MySQL/MariaDB. Every expiry the guard's procedure
// and the fence function judge is judged against the server's wall clock,
// SYSDATE(6), never UTC_TIMESTAMP() or NOW(): those read the statement's
// time, which any client sets without a privilege (SET timestamp, SET
// STATEMENT timestamp=… FOR …), and the largest value would make every
// lock look expired. SYSDATE is local time in the session's time_zone,
// which a client also sets, so it is converted to UTC through that zone.
// In a local hour two instants share (a DST zone's fall-back hour) the
// earlier is taken, so that no lock looks expired early; a zone the
// server cannot convert (NULL) reads as the earliest time, so that none
// looks expired at all. The plugin's own statements keep mysqlClock:
// their sessions are the plugin's.
//
// What breaks it: a server started with --sysdate-is-now, where SYSDATE
// is NOW and follows SET timestamp. No variable shows that option, so
// the install probes for it (probeGuardClock) and refuses to install.

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
