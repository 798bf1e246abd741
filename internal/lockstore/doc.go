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
// resolved once, when the plugin makes its stores: a store's traits are
// its own method (Store.Traits). No exported name is a database's: the
// three stores are unexported, made by NewPostgres, NewMySQL and
// NewSQLite, and what only one of them does is a method of its own,
// reached through an interface (the hooks of the plugin's tests too:
// testhooks.go).
//
// It may import the standard library and gorm.io/gorm (a *gorm.DB is the
// connection it runs on, clause.Expression what it adds to a load or a
// write), never the root package (the compiler enforces that a store
// cannot reach back into the plugin), and no database driver: it reads
// the MySQL driver's errors by reflection (mysql_errors.go), so that a
// program on PostgreSQL or SQLite does not link it.
package lockstore
