// Package guard keeps the database guard of offlinelock (docs/guard.md):
// which tables carry triggers, how each row spells the lock_id of the
// record it belongs to, which foreign-key actions a parent's triggers
// must check; the installs (at start, on a statement's way, after DDL,
// in the background), the coverage every grant reads ("No guard, no
// grant"), and the status, printed SQL and privilege check.
//
// It speaks to the database only through a lockstore.Guard, which owns
// the SQL of each database; it reads the catalog as internal/model's
// Specs. It never imports the root package: the root fills a Host.
//
// The API, on one screen:
//
//	Keeper, Config, Host        the guard on one database, and what it asks of the plugin
//	  Init, Start, Install, Remove      set up; db.Use's part; InstallGuard; RemoveGuard
//	  Lazily, AfterDDL, ForgetSoon      a table guarded on a statement's way, after DDL, again
//	  Governs, Check, Unguarded, Count  grants need the guard; one grant's check; the gaps
//	  Key, MarkKey, LoadKey, Refused    the key the identity is marked with; a refusal read
//	  States, Declared, GuardedTables, Lacks  the public methods' reads of the catalog
//	ErrUnguarded, Gap                   a grant refused; a table not covered, and why
//	Status(c, g, specs) → []State       each guarded table's state in the database
//	SQL(c, g, specs), CreateSQL         an install's statements, recorded, not run
//	Missing(c, g, specs, remove)        the privileges this role lacks
//	Guarded(c, g)                       the tables that carry the guard
//	Plan, Failure, Gaps, Shown          the plans of the catalog's tables, and what they lack
//
// Removal is the store's own (lockstore.Guard.RemoveGuard); what a
// database's guard is like (keyed marks, DDL beside open transactions)
// the store says through lockstore.GuardTraits.
package guard
