// Package offlinelock is a GORM plugin for Martin Fowler's Pessimistic
// Offline Lock: a business transaction that spans several requests takes a
// lock that lives in a table of the application's own database, owned by a
// session, refused at once when another session holds it, and released on
// save, cancel, logout or expiry.
//
//	locks := offlinelock.New(offlinelock.Config{})
//	if err := db.Use(locks); err != nil { … } // a failed Use refuses every statement on lockable tables
//	tx := db.WithContext(offlinelock.WithOwner(ctx, offlinelock.Owner{Session: sid, User: "martin"}))
//	tx.First(&customer, 129) // under lock:"exclusive_read", takes the lock
//
// The API, in the order an application meets it:
//
//   - [New] and [Config]: the [Plugin], registered with db.Use; struct
//     tags configure the lockable models (lock:"exclusive_write",
//     "exclusive_read", "read_write" on the primary key; lock:"root" on a
//     member's link to its aggregate's root).
//   - [WithOwner], [WithTTL], [Bypass] (and the scopes [As], [For],
//     [Bypassed]): who a statement runs for, read from its context.
//   - [Plugin.Acquire], [Plugin.Release], [Plugin.Do], [Plugin.TakeOver],
//     [Plugin.RequestEdit], [Plugin.Watch]: the locks by hand; loads of
//     exclusive_read models and writes of every lockable model take and
//     check them by themselves.
//   - [ErrLocked] (a [*LockedError] names the holder), [ErrNotLocked],
//     [ErrExpired], [ErrBeingWritten], [ErrUnenforceable]: the refusals,
//     as values for errors.Is.
//   - On PostgreSQL and MariaDB the database guard refuses other clients'
//     writes of held records ([Plugin.InstallGuard], docs/guard.md).
//
// Package httplock serves the same locks over HTTP (423 Locked, a
// Lock-Token header), and cmd/offlinelock from a shell. The README is the
// front door; docs/architecture.md maps the code for contributors.
package offlinelock
