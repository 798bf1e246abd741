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
// The packages, and what each may import:
//
//   - offlinelock (this one): the GORM side: callbacks, loads, writes,
//     aggregates, the registry of models, the catalog's specs, telemetry,
//     and the public API. It imports the two below, GORM and
//     OpenTelemetry, and no database driver. binding.go is the plugin on
//     one database: made when the plugin is registered there, it decides
//     the dialect once and holds that database's store, guard state,
//     watcher and what has been done for each model (key columns checked,
//     catalog row written, table guarded), so a statement pays one map
//     read for all of it; the callbacks are its methods.
//   - internal/lockstore: the lock table in each database, every piece of
//     its SQL, the guard's DDL, tokens and their hashes, the statement
//     runner. It imports GORM (for the connection) and nothing of this
//     module, so it cannot reach back into the plugin; telemetry is handed
//     to it as an Observer.
//   - internal/sqlscan: the SQL tokenizer the fail-closed checks read raw
//     SQL with. It imports only the standard library.
//   - httplock, cmd/offlinelock: the HTTP form and the command; they use
//     the public API alone.
//   - internal/testkit: what the tests share across modules (the
//     databases, the sessions, a few models, the replica, pooler and
//     cluster topologies); test code only.
//     docs/tests.md says where each family of tests lives (the lock
//     table's contract, loads, writes, each kind of fail-closed refusal,
//     the guard, the topologies, the HTTP form).
//   - Modules of their own (go.work ties them to this one): tests/ holds
//     httplock's tests (routers, the OpenAPI validator, the generated
//     client) in tests/httplock and the plugin's tests that need more than
//     the library (rapid's state machine, porcupine's check of the stress
//     test, GORM's OpenTelemetry plugin, dbresolver's replicas and
//     registration order) in tests/plugin; examples/orders-api
//     and examples/editor are the two example servers (a metrics exporter,
//     a browser). What they require never reaches a user's go.sum.
//     docs/dependencies.md lists what is where.
//
// The root package's files, each named for what it holds (a locked First
// reads load.go, callbacks.go, failclosed.go, targets.go,
// load_onestatement.go and the store; a holder's Save write.go,
// callbacks.go, fence.go and the store):
//
//   - plugin.go: Config, New, Initialize (db.Use); binding.go: the plugin
//     on one database, and what it has done for each model there.
//   - callbacks.go: the callback table, the statement kinds, a statement's
//     state from entry to end (its transaction or savepoint, the clauses
//     it rewrote, the error it keeps).
//   - load.go, load_onestatement.go: loads that lock (every shape; the
//     one-statement path for a row by key); write.go: the check of a write
//     before its hooks; fence.go: the fence, whole (folded into the write
//     or a statement of its own); rekey.go: a write whose hooks changed
//     its keys; cascade.go, many2many.go: writes that reach other
//     records' rows.
//   - targets.go: which rows a statement reads or writes; values.go: key
//     values read from Go values; key.go: a record's key, spelt once.
//   - failclosed.go: the refusals of what the plugin cannot enforce
//     exactly; strict.go: Config.Strict; tagslips.go: tags that look like
//     lock tags and are not.
//   - tags.go: a model and all it knows (mode, keys, root), the registry;
//     coarse.go: aggregate members resolved to their root; catalog.go: the
//     catalog of lockable tables in the database.
//   - locktable.go: the explicit lock API (Acquire, Release, Holders,
//     Sweep, …); store.go: the plugin's side of internal/lockstore and the
//     one place its refusals become public errors; errors.go, lock.go:
//     public errors and types; context.go, scopes.go: owners, TTLs,
//     reasons and Bypass from a context or a scope.
//   - guard.go: installing and checking the database guard; identity.go:
//     the writer's identity carried to it; primary.go, pooler.go,
//     galera.go: replicas, poolers, clusters.
//   - telemetry.go, spans.go: metrics and spans; stats.go, watch.go,
//     notes.go, takeover.go, do.go, hints.go, dsn.go: Stats, Watch and its
//     notes, TakeOver and RequestEdit, Do, the held-lock hints, SQLiteDSN.
//
// Design decisions, for the next engineer (docs/fail-closed.md has more):
//
//   - Fail closed. A statement that reads or writes rows of a lockable table
//     is enforced exactly or refused (ErrUnenforceable, ErrStrict), never let
//     through on a guess. Where the plugin cannot see which rows a piece of
//     SQL touches (a raw JOIN, a subquery, a second reference to a table),
//     it tokenises the SQL (sqlscan.go) and refuses what it cannot bound.
//   - The database decides (guard.go, docs/guard.md). On PostgreSQL and
//     MySQL/MariaDB every lockable table carries triggers, generated from
//     the catalog, that refuse a write of a record another session holds,
//     whoever sends it; the plugin's own checks stay first (before hooks,
//     with its errors). The writer's session rides inside statements the
//     plugin already sends and ends with them: set_config(…, true) on
//     PostgreSQL, SET STATEMENT max_join_size on MariaDB, since a user
//     variable would outlive the statement. Writes the plugin fences
//     itself say so, and the guard then holds no row lock for them, so
//     fence.go's rule of when a key row is held stays the plugin's; any
//     other write the guard admits holds the key rows until it commits.
//     A record without a key row holds nothing, so a grant and an open
//     write of it are ordered by buckets of records: the rows of the order
//     table, per table, closed to every other role (every isolation
//     level a client may choose, READ COMMITTED included), taken shared by
//     writes and exclusive by a grant that makes a key row
//     (internal/lockstore/guard_order_*.go).
//   - The primary decides (primary.go, docs/scaling.md). Behind a read
//     router (gorm.io/plugin/dbresolver), lock statements, the loads the
//     plugin takes part in and a session's loads of lockable models are
//     sent back to the source with the router's own setting and callback;
//     generations carry PostgreSQL's WAL timeline, so a promoted standby
//     never repeats one; on Galera the fence writes its key rows so that
//     certification sees it (galera.go); behind a transaction pooler that
//     cannot keep prepared statements db.Use fails (pooler.go).
//   - A plugin whose Initialize failed fails closed: its callbacks refuse
//     every statement on a lockable table with the error, whether or not
//     the caller read it.
//   - Lockability belongs to the table, not to the Go type: a DTO, a
//     Table("…") or raw SQL on a lockable table is that table. The lockable
//     tables are kept in a catalog next to the lock table (catalog.go),
//     written before the first lock on a table, so a node that never parsed
//     a model still enforces it.
//   - One record, one lock key: keys are spelled from the column's declared
//     type ("0129", 129 and int64(129) are one lock), on every path (key.go).
//   - One key row per locked record is the serialisation point: every
//     change to a record's locks writes it first, and every statement that
//     touches several records takes their key rows in (resource, lock_id)
//     byte order. That is what makes acquire atomic and batches deadlock-free.
//   - All lock-table SQL lives behind lockstore.Store (internal/lockstore),
//     one file per database; the GORM side asks in keys and owners. Statements on the
//     application's own tables are built and bound by GORM.
//   - Time is the database's (clock_timestamp(), strftime('now')), read in
//     the statement that decides, never the application's: app nodes
//     disagree. Tests therefore wait for the database clock to pass an
//     expiry rather than inject a clock.
//   - Loads lock before they read, so a row is never older than its lock;
//     on PostgreSQL the commonest loads are one statement (FOR SHARE keeps
//     them fresh when the lock had to wait).
//   - Writes never take locks implicitly; they are checked before their
//     hooks run, and checked again (the fence) just before commit, so a lock
//     lost mid-save fails the save. The holder's own save of one record,
//     whose lock this node granted, is checked by the fence alone, and when
//     nothing but GORM's own callbacks runs between the write and its
//     commit (no After hook, no other plugin's callback) and the caller
//     gave the write no WHERE of its own, that fence rides
//     in the write's WHERE (fence.go): one statement, the key row locked
//     from the write to the commit.
//   - Cost must not grow with the lock table or with a session's locks:
//     every statement about one record is answered by the primary key,
//     whatever the planner's statistics. Equalities on the indexed session
//     and token columns in such statements are written so no index can
//     answer them (IS NOT DISTINCT FROM on PostgreSQL, a unary + on
//     SQLite), since a planner without statistics, or a generic plan,
//     otherwise walks the session index through every lock the session
//     holds. BenchmarkScale measures it.
//   - A lock token is a bearer credential, so the lock table holds only its
//     SHA-256 (internal/lockstore/token.go), and a re-acquire cannot return it (Token "").
//     Tables of older versions are rewritten when the plugin registers.
//   - The in-memory hints only choose between SQL paths; every path checks
//     the lock table, so a wrong hint costs a round trip, never correctness.
//   - Telemetry (telemetry.go, docs/observability.md) has one seam for SQL,
//     conn.exec and conn.query: a span and a latency record per lock-table
//     statement. Decisions are counted where they are made, one call each.
//     The conn finds the plugin's instruments through the *gorm.DB it runs
//     on (Config.Plugins), so no store or call signature carries them; with
//     no-op providers the hot path builds no attribute and no span.
//   - The browser side (takeover.go, watch.go, notes.go, docs/browser.md):
//     TakeOver is a force release and a grant in one transaction, so the old
//     holder is fenced by the lock table itself. What a lock row cannot say
//     (a take-over's author and reason, a request to edit) goes to the notes
//     table, written only by TakeOver and RequestEdit. Watch polls: one
//     watcher per database reads every watched record in one statement per
//     100, and the notes of the minute before its last poll, told once
//     each (ids commit out of order, so "ids above the last" would pass
//     over a note for good); events are the difference between two polls,
//     so a change and its undoing between them are not seen (the lock
//     table, not the event, is the truth). Requests to edit are told once
//     per lock and bounded per user, so nobody can fill the notes table
//     that every poll reads.
//   - Raw reads into a model locked on load are locked by the keys their
//     rows carry, so they are taken only when sqlscan can read that each
//     row carries its own (KeysAsStored): a computed or borrowed key would
//     lock one record and show another.
package offlinelock
