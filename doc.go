// Package offlinelock is a GORM plugin for Martin Fowler's Pessimistic
// Offline Lock: a business transaction that spans several requests takes a
// lock that lives in a table of the application's own database, owned by a
// session, refused at once when another session holds it, and released on
// save, cancel, logout or expiry.
//
//	locks := offlinelock.New(offlinelock.Config{})
//	db.Use(locks)
//	tx := db.WithContext(offlinelock.WithOwner(ctx, offlinelock.Owner{Session: sid, User: "martin"}))
//	tx.First(&customer, 129) // under lock:"exclusive_read", takes the lock
//
// Design decisions, for the next engineer:
//
//   - One key row per locked record is the serialisation point: every
//     change to a record's locks writes it first, and every statement that
//     touches several records takes their key rows in (resource, lock_id)
//     byte order. That is what makes acquire atomic and batches deadlock-free.
//   - Time is the database's (clock_timestamp(), strftime('now')), read in
//     the statement that decides, never the application's: app nodes
//     disagree. Tests therefore wait for the database clock to pass an
//     expiry rather than inject a clock.
//   - Loads lock before they read, so a row is never older than its lock;
//     on PostgreSQL the commonest loads are one statement (FOR SHARE keeps
//     them fresh when the lock had to wait).
//   - Writes never take locks implicitly; they are checked, and checked
//     again (the fence) just before commit, so a lock lost mid-save fails
//     the save.
//   - The in-memory hints only choose between two SQL paths; both check the
//     lock table, so a wrong hint costs a round trip, never correctness.
package offlinelock
