package offlinelock

import "gorm.io/gorm"

// StatsGroups caps the resources and the users Stats counts locks for: the
// ones with the most live locks come first, and past this many the rest
// are left out (Live still counts them).
const StatsGroups = 100

// Stats summarises the lock table at one moment, for monitoring and for
// the offlinelock command's stats. Each figure is read by a statement of
// its own on the database clock, so a lock taken or released meanwhile may
// show in one figure and not in another.
type Stats struct {
	// Live is the number of live locks as List counts them: one per Write
	// lock, one per reader of a Read lock.
	Live int64
	// ByResource and ByUser count the live locks per resource (the table
	// of the locked record, or of its root) and per Owner.User, most first
	// and ties by name, at most StatsGroups of each. User "" counts the
	// locks of owners without a user name.
	ByResource, ByUser []Count
	// Oldest is the live lock acquired longest ago (ties by resource, id
	// and holder), without its token; nil when no lock is live.
	Oldest *Lock
	// ExpiredRows is the number of lock-table rows past their expiry: the
	// rows Sweep would delete now. They are rows, not locks: a record under
	// Read locks also has a key row, and on MySQL and MariaDB a released
	// record's key row stays, free, until a day after its last use
	// (docs/mysql.md). Expired locks are already free; these rows only
	// take space until the sweep.
	ExpiredRows int64
	// ExpiredLocks is the number of locks past their expiry that the sweep
	// has not removed yet: what List with Filter.Expired (and the
	// command's list --expired) shows.
	ExpiredLocks int64
}

// Count is how many live locks one resource or one user holds.
type Count struct {
	Name  string
	Locks int64
}

// Stats counts the live locks, by resource and by user, finds the oldest
// live lock, and counts the expired rows waiting for the sweep. It needs no
// owner, takes no row locks and changes nothing; a role that may only
// SELECT the lock table may call it, without registering the plugin. Its
// five statements return at most StatsGroups rows each, but each reads the
// lock table's rows, as List does: call it to monitor (every minute or
// so), not on every request.
func (p *Plugin) Stats(db *gorm.DB) (Stats, error) {
	db = onPrimary(db)
	t, err := p.storeFor(db)
	if err != nil {
		return Stats{}, err
	}
	return t.stats(direct(db), StatsGroups)
}
