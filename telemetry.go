package offlinelock

import (
	"errors"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/telemetry"
	"gorm.io/gorm"
)

// The plugin's OpenTelemetry instruments live in internal/telemetry
// (docs/observability.md); each site that decides calls one of its
// methods. This file holds what monitoring reads of the plugin itself: the
// counts of a statement's decisions, and Stats.

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
	s, err := t.Stats(direct(db), StatsGroups)
	out := Stats{Live: s.Live, ExpiredRows: s.ExpiredRows, ExpiredLocks: s.ExpiredLocks,
		ByResource: make([]Count, len(s.ByResource)), ByUser: make([]Count, len(s.ByUser))}
	for i, c := range s.ByResource {
		out.ByResource[i] = Count(c)
	}
	for i, c := range s.ByUser {
		out.ByUser[i] = Count(c)
	}
	if s.Oldest != nil {
		l := publicLock(*s.Oldest)
		out.Oldest = &l
	}
	return out, err
}

// refusals are the errors counted as refusals, by reason.
func refusals() []telemetry.Refusal {
	return []telemetry.Refusal{{Err: ErrLocked, Reason: "locked"}, {Err: ErrNotLocked, Reason: "not_locked"},
		{Err: ErrNoOwner, Reason: "no_owner"}, {Err: ErrStrict, Reason: "strict"}}
}

// countStatement counts what the callbacks decided for one statement when
// it ends: the keys a load locked (endStatement calls it only where they
// are counted or shown), or the refusal of a load or a write (a fence
// failure is counted as such by fence).
func (p *Plugin) countStatement(db *gorm.DB, st *state) {
	if st.m == nil || st.fenceFailed {
		return
	}
	access := string(accessFor(st.m, st.op))
	if db.Error != nil {
		resource := st.m.LockResource()
		if le := (*LockedError)(nil); errors.As(db.Error, &le) {
			resource = le.Resource
		}
		p.tel.Refused(ctxOf(db), db, telemetry.Implicit, access, resource, db.Error)
		return
	}
	if !st.op.loads() || len(st.locked) == 0 {
		return
	}
	keys := make([]key, 0, len(st.locked))
	for k, held := range st.locked {
		if held {
			keys = append(keys, k)
		}
	}
	p.tel.Granted(ctxOf(db), db, telemetry.Implicit, access, lockstore.SortKeys(keys))
}
