package offlinelock

import (
	"errors"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/telemetry"
	"gorm.io/gorm"
)

// StatsGroups caps the resources and the users Stats counts locks for: the
// ones with the most live locks come first, and past this many the rest
// are left out (Live still counts them).
const StatsGroups = 100

// Stats summarises the lock table, for monitoring and for the offlinelock
// command's stats. Each figure is read by a statement of its own, so a lock
// taken or released meanwhile may show in one figure and not in another.
type Stats struct {
	// Live is the number of live locks as List counts them: one per Write
	// lock, one per reader of a Read lock.
	Live int64
	// ByResource and ByUser count the live locks per resource and per
	// Owner.User ("" for owners without one), most first and ties by name,
	// at most StatsGroups of each.
	ByResource, ByUser []Count
	// Oldest is the live lock acquired longest ago (ties by resource, id
	// and holder), without its token; nil when no lock is live.
	Oldest *Lock
	// ExpiredRows is the number of lock-table rows past their expiry, which
	// Sweep would delete now. They are rows, not locks: a record under Read
	// locks also has a key row, and on MySQL a released record's key row
	// stays a day after its last use (docs/mysql.md).
	ExpiredRows int64
	// ExpiredLocks is the number of locks past their expiry that the sweep
	// has not removed yet, as List with Filter.Expired shows them.
	ExpiredLocks int64
}

// Count is how many live locks one resource or one user holds.
type Count struct {
	Name  string
	Locks int64
}

// Stats counts the live locks by resource and by user, finds the oldest,
// and counts the expired rows. It needs no owner, takes no row locks
// and changes nothing (SELECT on the lock table is enough, without
// registering the plugin). Each of its statements reads the lock table's
// rows, as List does: call it to monitor, not on every request.
func (p *Plugin) Stats(db *gorm.DB) (Stats, error) {
	db = onPrimary(db)
	t, err := p.storeFor(db)
	if err != nil {
		return Stats{}, err
	}
	s, err := t.Stats(direct(db), StatsGroups)
	out := Stats{Live: s.Live, ExpiredRows: s.ExpiredRows, ExpiredLocks: s.ExpiredLocks,
		ByResource: counts(s.ByResource), ByUser: counts(s.ByUser)}
	if s.Oldest != nil {
		l := publicLock(*s.Oldest)
		out.Oldest = &l
	}
	return out, err
}

func counts(cs []lockstore.Count) []Count {
	out := make([]Count, len(cs))
	for i, c := range cs {
		out[i] = Count(c)
	}
	return out
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
