package offlinelock

import (
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock/internal/model"
)

// The primary decides (docs/scaling.md). A read router such as
// gorm.io/plugin/dbresolver moves a query's statement to a replica before
// any other callback runs; the plugin's own SQL would follow it there, to
// write lock rows on a read-only server (SQLSTATE 25006) or to read a
// holder's record from a server that has not yet seen the holder's last
// save. So every statement about locks, and every load the plugin takes
// part in or that a session makes of a lockable model, is sent back to the
// router's source, with the router's own mechanism: the write setting it
// reads, and its callback run again, as dbresolver.Write does. The names
// are dbresolver's; the plugin does not import it.
const (
	resolverCallback = "gorm:db_resolver"
	resolverWrite    = "gorm:db_resolver:write"
	resolverRead     = "gorm:db_resolver:read"
)

// routeToPrimary moves db's statement to its router's source, unless it
// runs in a transaction (which stays where it began) or no router is
// registered.
func routeToPrimary(db *gorm.DB) {
	if _, inTx := db.Statement.ConnPool.(gorm.TxCommitter); inTx {
		return
	}
	fc := db.Callback().Query().Get(resolverCallback)
	if fc == nil {
		return
	}
	db.Statement.Settings.Delete(resolverRead)
	db.Statement.Settings.Store(resolverWrite, struct{}{})
	fc(db)
}

// onPrimary is db for one of the plugin's own calls (Acquire, Release, …):
// itself when its statement is on the database's own connection, which
// is the router's source; otherwise a session of it routed to the source.
// A root *gorm.DB's statement is shared by every goroutine, so it is never
// changed in place.
func onPrimary(db *gorm.DB) *gorm.DB {
	if db == nil || db.Statement == nil || db.Statement.ConnPool == db.Config.ConnPool {
		return db
	}
	if _, inTx := db.Statement.ConnPool.(gorm.TxCommitter); inTx {
		return db
	}
	if db.Callback().Query().Get(resolverCallback) == nil {
		return db
	}
	s := db.Session(&gorm.Session{})
	routeToPrimary(s)
	return s
}

// loadOnPrimary routes a load of m to the source when the plugin takes
// part in it (m locks on load) or a session makes it (its reads of records
// it holds must not be stale). An owner-less load of an exclusive_write
// model, and one that asks for a replica itself (dbresolver.Read), stay
// where the router sent them.
func (p *Plugin) loadOnPrimary(db *gorm.DB, m *model.Model) {
	if m == nil || !m.Lockable || db.Statement.ConnPool == db.Config.ConnPool {
		return
	}
	if !m.LocksOnLoad() {
		if _, asked := db.Statement.Settings.Load(resolverRead); asked {
			return
		}
		if _, err := ownerOf(db); err != nil {
			return
		}
	}
	routeToPrimary(db)
}
