// Command offlinelock inspects and administers the lock table of
// github.com/offlinelock/offlinelock from a shell: who holds what, since
// when; an admin's force release; the sweep; figures for monitoring.
//
//	go run ./cmd/offlinelock list  --dsn 'postgres://app@db/app' [--resource R] [--id ID] [--user U] [--session S] [--expired] [--sort COLUMN] [--limit N] [--json]
//	go run ./cmd/offlinelock show  RESOURCE ID [--json]
//	go run ./cmd/offlinelock release RESOURCE ID --reason 'holder crashed' [--operator NAME] [--json]
//	go run ./cmd/offlinelock sweep
//	go run ./cmd/offlinelock stats [--json]
//	go run ./cmd/offlinelock guard status|install|remove
//	go run ./cmd/offlinelock guard install --print-sql
//
// Every command takes --dsn (default $OFFLINELOCK_DSN) and --table (default
// offline_locks, as offlinelock.Config.Table). Flags may come before or
// after the arguments; put an id that starts with '-' after "--".
//
//   - list prints the live locks (with --expired, the expired ones the sweep
//     has not removed) matching every filter, in the lock console's orders
//     (--sort since, the default: oldest first; until, resource or user),
//     at most --limit (default 1000, 0 for all), with a note on stderr when
//     more match. It reads every matching lock to order them: on a large
//     lock table the filters save time and memory.
//   - show prints the holders of one record: its writer, or its readers.
//   - release removes every lock on one record (Plugin.ForceRelease), or
//     with --user or --session (and --older-than) the records only they
//     hold, and prints the locks it removed; --reason is required.
//   - sweep deletes the expired rows once (Plugin.Sweep) and prints how many.
//   - stats prints Plugin.Stats: the live locks, by resource and by user (the
//     100 largest of each), the oldest live lock, and the expired rows
//     waiting for the sweep.
//   - guard prints the tables that carry the database guard (status),
//     installs or upgrades it on every lockable table of the catalog with
//     the feature tables (install, as db.Use does), or drops it (remove;
//     a node's next db.Use installs it again unless Config.DisableGuard is
//     set), checking this role's privileges first. install --print-sql
//     prints the SQL instead, for the tables' owner (docs/guard.md).
//
// RESOURCE and ID are as list prints them: the locked record's table (for a
// member of an aggregate, its root's) and its primary key as text.
//
// # Output
//
// list, show and release print an aligned table with a header, one lock a
// line; a cell that is empty or holds spaces, quotes or control characters
// is Go-quoted, so every line has the same columns and no name can send
// escape sequences to the terminal. With --json they print an array of
// objects (resource, id, access, user, session, generation, acquiredAt,
// expiresAt) and stats an object. Tokens are never printed: List never
// returns them. Times are RFC 3339 in UTC, to the second in tables and with
// the database's fractions of a second in JSON. Errors and the audit log go
// to stderr.
//
// # DSN
//
// The driver is chosen by the DSN's form:
//
//	postgres://… or postgresql://…     PostgreSQL URL
//	host=… dbname=… (key=value)         PostgreSQL
//	mysql://user:pass@host:port/db?…    MySQL or MariaDB (port 3306 by default)
//	user:pass@tcp(host:port)/db?…       MySQL or MariaDB, go-sql-driver/mysql's form (also @unix(…))
//	sqlite:PATH, file:PATH or PATH      SQLite
//
// For MySQL and MariaDB the command sets parseTime=true and loc=UTC, which
// the lock table needs (docs/mysql.md), whatever the DSN says, and a
// 15-second connect timeout unless the DSN has one; the same DSN as the
// application's may be given. A SQLite path or a file: URI without a query
// is opened with the settings of offlinelock.SQLiteDSN; a file: URI with a
// query is opened as it is. The SQLite file must exist.
//
// The command never creates the lock table: a wrong DSN or --table is an
// error (exit code 1). Messages never repeat the DSN, which may hold a password.
//
// # Database roles
//
// list, show and stats only read: a role that may SELECT the lock table is
// enough (a monitoring job's). release and sweep register the plugin as the
// application does, which runs its idempotent CREATE … IF NOT EXISTS, so
// they need the application's role (on PostgreSQL, the lock table's owner).
//
// # Who may release
//
// release runs as an administrator: whoever runs the command already
// reaches the database with its credentials and could delete the lock rows
// by hand, so the command's Config.Authorize allows force_release (and no
// other admin action) rather than ask anyone. What it adds is the record:
// every lock it removes is logged to stderr by the plugin's audit log
// (slog, level WARN, "offlinelock: admin action") with the holder, the
// operator (--operator, default $USER, as by_user; by_session is
// "offlinelock-cli") and the reason. Keep stderr where audit logs go.
//
// # Exit codes
//
//	0  done
//	1  the database failed or refused, or the DSN is wrong
//	2  bad flags or arguments (including input the library refuses as
//	   ErrInvalid, such as an over-long filter); nothing was done
//	3  show or release of a record nobody holds
//	4  guard status or install: a declared table is not fully guarded
//	   (each table's state is printed on stdout)
//	5  guard status or install: no lockable table is declared in the
//	   catalog yet, so nothing is guarded; the application's db.Use
//	   declares them (Config.Models), then run guard install again
package main
