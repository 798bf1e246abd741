// Package lockstore is the lock table of offlinelock in each database it
// supports: every statement on the lock table, its generation counter and
// its catalog of lockable tables; the database guard's triggers and
// routines; tokens and their hashes; the statement runner (Conn) the
// plugin's statements go through, with its retries, its log and its
// Observer.
//
// It asks and answers in keys (resource, lock_id), owners and locks, and
// never sees a GORM model: the catalog's spec is bytes it keeps, a key
// column check gets column names and kinds. A refusal is a value: a
// *Conflict naming the holders, or ErrNotLocked; the root package turns
// them into its public errors in one place (its store.go). The sentinel
// errors are the root's own values.
//
// What a store can do besides Store is declared in capabilities.go and
// resolved once (Store.Traits). The three stores are unexported, made by
// NewPostgres, NewMySQL and NewSQLite.
//
// It imports the standard library and gorm.io/gorm, never the root package
// and no database driver: MySQL's errors are read by reflection
// (mysql_errors.go), so a program on another database does not link it.
package lockstore
