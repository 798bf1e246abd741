// Package guard plans the database guard of offlinelock (docs/guard.md):
// which tables carry triggers, how each row spells the lock_id of the
// record it belongs to, which foreign-key actions a parent's triggers
// must check; and, from those plans, the guard's install, status,
// printed SQL and privilege check.
//
// It speaks to the database only through a lockstore.Guard, which owns
// the SQL of each database; the SQL this package writes is built from
// that store's quoting, spelling and locking reads. It never imports the
// root package: the root hands it the catalog as Tables and keeps what a
// Plugin remembers between calls.
//
// The API, on one screen:
//
//	Table, Column, Root, Link          what the guard needs of one catalog row
//	Plan(c, g, tables, fails)          the plans of every table the catalog guards
//	Failure                            a table the guard cannot follow, and why
//	Install(c, g, plans, mem, busy)    installs the plans mem does not show in place
//	Memory, BusyFor                    what the caller keeps between installs
//	Status(c, g, tables) → []State     each guarded table's state in the database
//	Gaps(c, g, tables, shown) → []Gap  the tables a grant finds uncovered, to repair
//	SQL(c, g, tables)                  an install's statements, recorded, not run
//	Missing(c, g, tables, remove)      the privileges this role lacks
//	InstallError(what, err)            an install's failure, with the way out
//
// Removal is the store's own (lockstore.Guard.RemoveGuard): nothing to
// plan. What a database's guard is like (keyed marks, DDL beside open
// transactions) the store says through lockstore.GuardTraits.
package guard
