package offlinelock

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/sqlscan"
	"github.com/offlinelock/offlinelock/internal/telemetry"
	"gorm.io/gorm"
)

var (
	// ErrPooler reports, from db.Use, a PostgreSQL connection through a
	// transaction-pooling proxy (PgBouncer) while the client prepares named
	// statements (pgx's statement cache, GORM's PrepareStmt), which would
	// fail at random. The message names the fix (docs/scaling.md).
	ErrPooler = lockstore.ErrPooler

	// ErrLocked reports that someone else holds a lock that conflicts with
	// the one asked for. A refusal that names holders is a *LockedError;
	// use errors.As to learn who holds it and until when (ErrBeingWritten,
	// an open write of the record, names none).
	ErrLocked = lockstore.ErrLocked

	// ErrBeingWritten reports a grant refused because another transaction
	// kept the record (or a record sharing its order) open for writing
	// longer than the guard lets a grant wait (2 s on PostgreSQL); it is
	// an ErrLocked, and a retry may succeed.
	ErrBeingWritten = lockstore.ErrBeingWritten

	// ErrGuardProtocol reports a database guard installed by a newer
	// offlinelock whose protocol this node does not speak: the node must be
	// upgraded before it grants.
	ErrGuardProtocol = lockstore.ErrGuardProtocol

	// ErrNotLocked reports that the session does not hold the lock it needs
	// or tries to release: nobody holds it, or its lock has expired.
	ErrNotLocked = lockstore.ErrNotLocked

	// ErrExpired reports a write by a session whose own lock on the record
	// has expired (an *ExpiredError, also ErrNotLocked). Take the lock
	// again with Acquire, and reload the record: another session may have
	// changed it meanwhile.
	ErrExpired = errors.New("offlinelock: the session's lock has expired")

	// ErrNoOwner reports a call that needs an owner and found none in the
	// statement's context. Set one with db.WithContext(WithOwner(ctx, o)).
	ErrNoOwner = errors.New("offlinelock: no owner in context")

	// ErrInvalid reports bad input: a nil or non-pointer target, a model
	// without a primary key value, an empty session, an over-long or
	// malformed string, a zero or negative TTL. Nothing was changed.
	ErrInvalid = lockstore.ErrInvalid

	// ErrForbidden reports an admin call (ForceRelease, or releasing or
	// renewing another session's locks) that Config.Authorize did not allow.
	ErrForbidden = errors.New("offlinelock: not authorised")

	// ErrStrict reports an Exec or Raw statement that names a lockable
	// table while Config.Strict is on. Use the model's methods, or run it
	// under Bypass.
	ErrStrict = errors.New("offlinelock: raw SQL on a lockable table")

	// ErrUnenforceable reports a statement on a lockable table whose rows
	// the plugin cannot bound exactly (a subquery as the table, a raw JOIN,
	// …), refused rather than let through unchecked. The message names the
	// table and the way out.
	ErrUnenforceable = errors.New("offlinelock: statement cannot be enforced on a lockable table")

	// ErrReadOnly reports a lock statement, a locked load or a holder's
	// read that reached a read-only server (a replica, or a transaction
	// begun on one): begin it on the primary (docs/scaling.md).
	ErrReadOnly = lockstore.ErrReadOnly

	// ErrUnconfirmed reports a grant whose commit was sent but not
	// confirmed (the context ended, the connection broke); it wraps the
	// cause. The lock may be held: ask Holders, or Release it, once the
	// database answers again.
	ErrUnconfirmed = errors.New("offlinelock: the grant was not confirmed, the lock may be held")

	// ErrTxLost reports, on a Galera cluster, a transaction rolled back for
	// another node's conflicting write (docs/scaling.md): nothing of it was
	// committed, its locks included; run it again.
	ErrTxLost = lockstore.ErrTxLost

	// ErrGuardPrivileges reports a role that may not install or remove
	// the database guard (CheckGuardPrivileges): the error names each
	// privilege it lacks and the grant that gives it; nothing was changed.
	ErrGuardPrivileges = errors.New("offlinelock: missing privileges for the database guard")

	// ErrGrantExecute reports, at db.Use on MySQL/MariaDB, an application
	// user that may not execute the database guard's routines, which are in
	// place: the error names the GRANT EXECUTE the tables' owner runs.
	ErrGrantExecute = lockstore.ErrGrantExecute
)

// unconfirmed is err of a grant, told as ErrUnconfirmed when the database
// gave no answer (a database's own error, or one of the plugin's, is an
// answer: nothing was granted).
func unconfirmed(err error) error {
	if err == nil || errors.Is(err, ErrUnconfirmed) || errors.Is(err, ErrLocked) || errors.Is(err, ErrInvalid) ||
		errors.Is(err, ErrNoOwner) || errors.Is(err, ErrReadOnly) || errors.Is(err, ErrForbidden) {
		return err
	}
	if lockstore.IsServerError(err) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isNetError(err) {
		return fmt.Errorf("%w: %w", ErrUnconfirmed, err)
	}
	return err
}

func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

// LockedError is returned when a lock is refused because other sessions hold
// it. errors.Is(err, ErrLocked) is true for it. Holders never carry tokens.
type LockedError struct {
	Resource, ID string
	Wanted       Access
	Holders      []Lock
}

// Error reads as a person would want it, for example
// "customers 129 is locked by martin since 10:00:05 until 10:30:05 (UTC)".
func (e *LockedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s is locked by ", e.Resource, e.ID)
	if len(e.Holders) == 0 {
		b.WriteString("another session")
		return b.String()
	}
	for i, h := range e.Holders {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(h.Owner.display())
		if h.Access == Read && len(e.Holders) > 1 {
			b.WriteString(" (read)")
		}
		fmt.Fprintf(&b, " since %s until %s", clock(h.AcquiredAt, h.AcquiredAt), clock(h.ExpiresAt, h.AcquiredAt))
	}
	b.WriteString(" (UTC)")
	return b.String()
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// ExpiredError is the refusal of a write whose session let its lock on the
// record expire (once the sweep removed the row, it is a plain
// ErrNotLocked).
type ExpiredError struct {
	Resource, ID string
	Op           string    // the write refused: "update", "delete", …
	ExpiredAt    time.Time // when the session's lock expired
}

// Error says when the lock expired and what to do.
func (e *ExpiredError) Error() string {
	return fmt.Sprintf("offlinelock: the lock of this session on %s %s expired at %s (UTC); the %s needs a Write lock: take it again with Acquire, and reload the record",
		e.Resource, e.ID, e.ExpiredAt.UTC().Format("2006-01-02 15:04:05"), e.Op)
}

// Is makes errors.Is(err, ErrExpired) and errors.Is(err, ErrNotLocked)
// true.
func (e *ExpiredError) Is(target error) bool { return target == ErrExpired || target == ErrNotLocked }

// clock formats t as a time of day in UTC, with the date when it falls on
// another day than ref.
func clock(t, ref time.Time) string {
	t, ref = t.UTC(), ref.UTC()
	if t.YearDay() != ref.YearDay() || t.Year() != ref.Year() {
		return t.Format("2006-01-02 15:04:05")
	}
	return t.Format("15:04:05")
}

// noOwner is ErrNoOwner for what (a statement, a call), with the way
// out.
func noOwner(what string) error {
	return fmt.Errorf("%w: %s needs the session that owns the locks: db.WithContext(offlinelock.WithOwner(ctx, owner)) or db.Scopes(offlinelock.As(owner)); a job no session owns runs under offlinelock.Bypass(ctx, reason)",
		ErrNoOwner, what)
}

// invalid wraps ErrInvalid with a message that says what was wrong.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// unenforceable is the refusal of a statement on table that the plugin
// cannot bound, with the way out.
func unenforceable(table, what string) error {
	return fmt.Errorf("%w: %s %s; use the model's own methods (First, Find, Joins by association), or run it under offlinelock.Bypass(ctx, reason)",
		ErrUnenforceable, what, table)
}

// notLockedForWrite is the refusal of a write of keys that the session
// holds no Write lock on.
func notLockedForWrite(op opKind, keys []key) error {
	k := lockstore.SortKeys(keys)[0]
	more := ""
	if len(keys) > 1 {
		more = fmt.Sprintf(" and %d more", len(keys)-1)
	}
	return fmt.Errorf("%w: %s of %s %s%s needs a Write lock; take it with Acquire when the edit starts", ErrNotLocked, op, k.Resource, k.ID, more)
}

// beforeRaw refuses, under Config.Strict, an Exec whose SQL names a
// lockable table: the plugin cannot see which rows it touches.
func (b *binding) beforeRaw(db *gorm.DB) {
	p := b.p
	if p.spans {
		p.tel.TraceStatement(db)
	}
	if db.Error != nil || db.DryRun {
		return
	}
	if err := p.initFailed(); err != nil {
		if sql := db.Statement.SQL.String(); sqlscan.Read(sql).RowAccess && len(p.namedModels(sql)) > 0 {
			db.AddError(err)
			return
		}
	}
	if p.strict(db, opExec) {
		return
	}
	p.refuseViews(db)
	if db.Error == nil {
		b.rawIdentity(db)
	}
}

// afterRaw names the lock a guard's refusal of a raw write stands for, and
// guards again a lockable table that DDL named (created, renamed, altered).
func (b *binding) afterRaw(db *gorm.DB) {
	p := b.p
	if p.spans {
		telemetry.AdoptSpan(db)
		telemetry.EndSpans(db)
	}
	lockstore.EndRawTx(db)
	if db.Error != nil {
		p.lockedByGuard(db)
		return
	}
	if db.DryRun || p.cfg.DisableGuard {
		return
	}
	sql := db.Statement.SQL.String()
	switch sqlscan.FirstWord(sql) {
	case "create", "alter", "drop", "rename":
	default:
		return
	}
	p.reg.LearnParsed(db) // AutoMigrate parsed its models before this DDL: a member declared on its side only is known before its table is made
	for _, m := range p.namedModels(sql) {
		b.guard.AfterDDL(db, m)
	}
}

// strict applies Config.Strict to a statement whose SQL the plugin cannot
// see into, and reports whether it refused it. A table named only in a
// literal or a comment, DDL and the migrator's own work are not refused.
func (p *Plugin) strict(db *gorm.DB, op opKind) bool {
	if !p.cfg.Strict {
		return false
	}
	sql := db.Statement.SQL.String()
	if !sqlscan.Read(sql).RowAccess {
		return false
	}
	var err error
	table := ""
	if sqlscan.Dynamic(sql) && len(p.reg.Lockable()) > 0 && !p.bypassed(db, op) && !p.fromMigrator() {
		// SQL built at run time, or a table named in a string: it may
		// name any lockable table, and no reading can tell which.
		err = fmt.Errorf("%w: %s runs dynamic SQL (EXECUTE of built text, PREPARE from a variable, a function that reads a table named in a string), which may reach any lockable table; use the model's methods, or offlinelock.Bypass", ErrStrict, op)
	} else if named := p.namedModels(sql); len(named) > 0 && !p.bypassed(db, op) && !p.fromMigrator() {
		table = named[0].Table
		err = fmt.Errorf("%w: %s names lockable table %s; use the model's methods, or offlinelock.Bypass", ErrStrict, op, table)
	} else {
		return false
	}
	p.tel.Refused(ctxOf(db), db, telemetry.Implicit, string(Write), table, err)
	db.AddError(err)
	return true
}
