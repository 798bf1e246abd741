package offlinelock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"github.com/offlinelock/offlinelock/internal/sqlscan"
	"github.com/offlinelock/offlinelock/internal/telemetry"
)

// registerCallbacks makes the lock implicit ("if an item might be locked
// anywhere it must be locked everywhere"): the plugin, not each handler,
// locks on load and checks on write. docs/callbacks.md lists each callback.
func (b *binding) registerCallbacks(db *gorm.DB) error {
	cb := db.Callback()
	type at interface {
		Register(name string, fn func(*gorm.DB)) error
	}
	unprepared := b.t == nil || !b.t.caps.PreparedWrites
	skip := map[string]bool{"offlinelock:prepare_update": unprepared, "offlinelock:unprepare_update": unprepared} // not on this database
	for _, r := range []struct {
		name string
		at   at
		fn   func(*gorm.DB)
	}{
		{"offlinelock:before_query", cb.Query().Before("gorm:query"), b.beforeQuery},
		{"offlinelock:after_query", cb.Query().After("gorm:query").Before("gorm:preload"), b.afterQuery},
		{"offlinelock:end_query", cb.Query().After("*"), b.endStatement},
		{"offlinelock:before_row", cb.Row().Before("gorm:row"), b.beforeRow},
		{"offlinelock:after_row", cb.Row().After("gorm:row"), telemetry.AdoptSpan}, // inside GORM's statement span
		{"offlinelock:end_row", cb.Row().After("*"), b.endStatement},
		{"offlinelock:before_raw", cb.Raw().Before("gorm:raw"), b.beforeRaw},
		{"offlinelock:end_raw", cb.Raw().After("gorm:raw"), b.afterRaw},
		{"offlinelock:before_create", cb.Create().After("gorm:begin_transaction").Before("gorm:before_create"), b.beforeWrite(opCreate)},
		{"offlinelock:rekey_create", cb.Create().After("gorm:save_before_associations").Before("gorm:create"), b.rekey(opCreate)},
		{"offlinelock:fence_create", cb.Create().After("gorm:after_create").Before("gorm:commit_or_rollback_transaction"), b.fence},
		{"offlinelock:end_create", cb.Create().After("*"), b.endStatement},
		{"offlinelock:before_update", cb.Update().After("gorm:setup_reflect_value").Before("gorm:before_update"), b.beforeWrite(opUpdate)},
		{"offlinelock:rekey_update", cb.Update().After("gorm:save_before_associations").Before("gorm:update"), b.rekey(opUpdate)},
		{"offlinelock:prepare_update", cb.Update().After("offlinelock:rekey_update").Before("gorm:update"), b.prepareWrite},
		{"offlinelock:unprepare_update", cb.Update().After("gorm:update").Before("gorm:save_after_associations"), unpreparedWrite},
		{"offlinelock:fence_update", cb.Update().After("gorm:after_update").Before("gorm:commit_or_rollback_transaction"), b.fence},
		{"offlinelock:end_update", cb.Update().After("*"), b.endStatement},
		{"offlinelock:before_delete", cb.Delete().After("gorm:begin_transaction").Before("gorm:before_delete"), b.beforeWrite(opDelete)},
		{"offlinelock:rekey_delete", cb.Delete().After("gorm:before_delete").Before("gorm:delete"), b.rekey(opDelete)},
		{"offlinelock:fence_delete", cb.Delete().After("gorm:after_delete").Before("gorm:commit_or_rollback_transaction"), b.fence},
		{"offlinelock:end_delete", cb.Delete().After("*"), b.endStatement},
	} {
		if skip[r.name] {
			continue
		}
		if err := r.at.Register(r.name, r.fn); err != nil {
			return fmt.Errorf("offlinelock: registering %s: %w", r.name, err)
		}
	}
	return nil
}

const stateKey = "offlinelock:state"

// opKind is the kind of statement a callback serves; it names it in
// errors, logs and metrics, so its values read as English.
type opKind string

const (
	opLoad     opKind = "load"      // the query chain: Find, First, Take, Scan, Pluck, Count …
	opRows     opKind = "rows"      // Row, Rows: a load whose rows the caller reads after the chain
	opRawQuery opKind = "raw query" // Raw(…): a read the plugin sees as SQL
	opCreate   opKind = "create"
	opUpdate   opKind = "update"
	opDelete   opKind = "delete"
	opExec     opKind = "exec" // Exec(…): a write the plugin sees as SQL
)

// loads says whether a statement of kind o takes a load's locks.
func (o opKind) loads() bool { return o == opLoad || o == opRows || o == opRawQuery }

// state is what the plugin keeps about one statement, from its first
// callback to its last, in the statement's settings.
type state struct {
	stmt    *gorm.Statement // the statement it belongs to
	t       lockStore
	caps    lockstore.Traits // t's capabilities (zero without a store)
	noSpans bool             // no spans kept aside (internal/telemetry): none to adopt or end
	m       *model.Model
	owner   Owner
	op      opKind

	pool          gorm.ConnPool // the connection before the plugin began a transaction
	ownTx         bool          // the plugin began the transaction and ends it
	savepoint     string        // in the caller's transaction: undo this statement's locks on refusal
	savepointDone func()        // gives the savepoint's name back (Store.SavepointIn)
	txDone        func()        // ends what lockstore.OwnTx began keeping
	restore       func()        // puts the destination back as it was

	locked      map[key]bool    // loads: keys this statement holds
	newly       map[key]bool    // loads: keys this statement newly locked
	links       map[string]bool // member loads: foreign keys whose roots are locked
	known       []key           // loads: keys the WHERE pins the rows to
	knownOne    [1]key          // loads: known's array when a fast path pins one key
	fast        fastPath        // loads: the one-statement path being tried
	fastKey     key
	fastTok     string
	where       clause.Clause     // loads: the WHERE before a fast path changed it
	hadWhere    bool              // loads: and there was one
	fastRewrote bool              // loads: the fast path added WHERE and FOR to the statement
	prepared    bool              // gorm:query or gorm:update runs on the store's prepared statements (lockstore.PreparedPool, PreparedWriteTx)
	preparedTx  [2]gorm.ConnPool  // writes: the transaction prepareWrite wrapped, and its wrapping
	required    []key             // writes: keys whose Write lock must still hold at commit
	bulk        int64             // writes by WHERE: rows found; -1 for writes by key
	ifChanged   bool              // writes: required only if the write changed a row
	keyless     bool              // creates: a row without its key, which the database generates
	folded      bool              // writes: the fence is in the write's own WHERE (fence.go)
	foldRefuses bool              // writes: and it refuses with an error (lockstore.FenceCall)
	upsertFence clause.Expression // upserts: the fence folded into the UPDATE part (fence.go)
	valuesFence clause.Expression // upserts: and into the key's value
	upsertFolds int               // upserts: which of the two the statement carries
	rekey       bool              // writes: check again if keysRead changed (write.go)
	keysRead    string            // writes: the keys and links the check read
	fenceFailed bool              // writes: refused at the fence, counted as such
	detached    bool              // a load that locked outside any transaction
	raw         bool              // loads: Raw SQL, whose rows can only be seen once read
	err         error             // the plugin's own error, kept visible under GORM's
}

// statementState is stmt's state, or nil.
func statementState(stmt *gorm.Statement) *state {
	// Not InstanceGet, which formats a key per call; st.stmt: a clone
	// that copied the settings does not take it for its own.
	if v, ok := stmt.Settings.Load(stateKey); ok {
		if st, _ := v.(*state); st != nil && st.stmt == stmt {
			return st
		}
	}
	return nil
}

// setState gives the statement st.
func setState(db *gorm.DB, st *state) {
	st.stmt = db.Statement
	db.Statement.Settings.Store(stateKey, st)
}

// enter returns the statement's state if the plugin acts on it, adding a
// bad tag, a missing owner or a bad bypass to its error.
func (b *binding) enter(db *gorm.DB, op opKind, onLoad bool) *state {
	p := b.p
	if db.Error != nil || db.DryRun {
		return nil
	}
	m := p.statementModel(db)
	if m == nil || !m.Lockable {
		return nil
	}
	if e := p.initErr.Load(); e != nil { // initFailed
		db.AddError(*e)
		return nil
	}
	if m.Root != nil || m.Err != nil { // a member's root chain, a bad tag
		if err := p.reg.Resolve(m); err != nil {
			db.AddError(err)
			return nil
		}
	}
	if onLoad && !m.LocksOnLoad() {
		b.learn(db, m, false)
		return nil
	}
	// bypassed only when the context carries Bypass's key at all
	if ctx := db.Statement.Context; ctx != nil && ctx.Value(bypassKey{}) != nil && p.bypassed(db, op) {
		b.learn(db, m, !onLoad)
		return nil
	}
	return b.start(db, m, op)
}

// start gives a statement on m its state (nil: failed).
func (b *binding) start(db *gorm.DB, m *model.Model, op opKind) *state {
	p := b.p
	st := &state{m: m, op: op, bulk: -1, t: b.t, caps: b.t.caps}
	var err error
	if e := p.initErr.Load(); e != nil { // initFailed
		err = *e
	} else {
		err = b.prepare(db, m)
	}
	if err != nil {
		st.fail(db, err)
		return nil
	}
	if st.owner, err = ownerOf(db); err != nil {
		p.tel.Refused(ctxOf(db), db, telemetry.Implicit, string(accessFor(m, op)), m.LockResource(), err)
		if errors.Is(err, ErrNoOwner) {
			err = noOwner(fmt.Sprintf("the %s of %s", op, db.Statement.Table))
		} else {
			err = fmt.Errorf("%w: %s of %s", err, op, db.Statement.Table)
		}
		st.fail(db, err)
		return nil
	}
	_, logged := db.Statement.Settings.Load(telemetry.SpanLogKey) // TraceStatement began one
	st.noSpans = !p.spans || !logged || !telemetry.Logged(db)
	st.stmt = db.Statement // setState
	db.Statement.Settings.Store(stateKey, st)
	return st
}

// statementModel is the model of the table the statement reads or writes:
// its own if lockable, else the lockable table's it names (a DTO,
// Table("customers AS c")); nil for a table expression (its SQL is checked).
func (p *Plugin) statementModel(db *gorm.DB) *model.Model {
	stmt := db.Statement
	if s := stmt.Schema; s != nil {
		if m := p.reg.ModelOf(s, db.NamingStrategy); m.Lockable && stmt.TableExpr == nil {
			return m
		}
	}
	if stmt.TableExpr != nil {
		if table, _, ok := sqlscan.SimpleTable(stmt.TableExpr.SQL); ok && len(stmt.TableExpr.Vars) == 0 {
			return p.reg.TableModel(table)
		}
		return nil
	}
	if stmt.Table != "" {
		return p.reg.TableModel(stmt.Table)
	}
	return nil
}

// bypassed reports whether the statement runs under Bypass, logging it
// once per statement.
func (p *Plugin) bypassed(db *gorm.DB, op opKind) bool {
	ctx := db.Statement.Context
	if ctx == nil {
		return false
	}
	reason, ok := ctx.Value(bypassKey{}).(string) // bypassFrom
	if !ok {
		return false
	}
	if strings.TrimSpace(reason) == "" {
		db.AddError(invalid("Bypass needs a reason"))
		return true
	}
	if _, logged := db.InstanceGet(bypassLogged); !logged {
		db.InstanceSet(bypassLogged, true)
		p.cfg.Logger.InfoContext(db.Statement.Context, "offlinelock: bypass",
			slog.String("op", string(op)), slog.String("table", db.Statement.Table), slog.String("reason", reason))
	}
	return true
}

const bypassLogged = "offlinelock:bypass_logged"

func (st *state) fail(db *gorm.DB, err error) {
	if st.err == nil {
		st.err = err
	}
	db.AddError(err)
}

// begin makes sure the statement runs in a transaction: the caller's (with
// a savepoint, unless GORM began it for this write), or the plugin's own.
func (st *state) begin(db *gorm.DB, savepoint bool) error {
	if _, ok := db.Statement.ConnPool.(gorm.TxCommitter); ok {
		if _, gormsOwn := db.InstanceGet("gorm:started_transaction"); savepoint && !gormsOwn {
			st.savepoint = lockstore.SavepointName
			if st.t != nil {
				st.savepoint, st.savepointDone = st.t.SavepointIn(db.Statement.ConnPool)
			}
			return direct(db).Savepoint(st.savepoint)
		}
		return nil
	}
	fresh := db.Session(&gorm.Session{NewDB: true, Context: db.Statement.Context})
	var tx *gorm.DB
	if st.t != nil && st.t.caps.OwnTx != nil {
		tx, st.txDone = st.t.caps.OwnTx.BeginOwn(fresh)
	} else {
		tx = fresh.Begin()
	}
	if tx.Error != nil {
		return tx.Error
	}
	st.pool, st.ownTx = db.Statement.ConnPool, true
	db.Statement.ConnPool = tx.Statement.ConnPool
	return nil
}

// endStatement is the last callback of every chain (docs/callbacks.md).
func (b *binding) endStatement(db *gorm.DB) {
	p := b.p
	st := statementState(db.Statement)
	if p.spans && (st == nil || !st.noSpans) {
		telemetry.EndSpans(db)
	}
	if st == nil {
		p.lockedByGuard(db) // a write of another table (a join table) the guard refused
		return
	}
	db.Statement.Settings.Delete(stateKey) // it may run again: nothing of this run stays
	if st.prepared {
		unpreparedPool(db, st)
	}
	if st.fastRewrote || st.folded { // the caller's own WHERE and FOR again
		if st.hadWhere {
			db.Statement.Clauses["WHERE"] = st.where
		} else {
			delete(db.Statement.Clauses, "WHERE")
		}
	}
	if st.fastRewrote {
		delete(db.Statement.Clauses, "FOR")
	}
	if st.ownTx || st.savepoint != "" {
		b.endTransaction(db, st)
	}
	if db.Error != nil {
		db.Error = lockstore.BeingWritten(lockstore.ReadOnly(db.Error))
		p.clusterConflict(db, st)
		p.giveBack(db, st)
		p.lockedByGuard(db)
	}
	if db.Error == nil && len(st.required) > 0 && !st.ownTx && st.caps.Certifier != nil && st.caps.Certifier.Certifies() {
		p.watchCommit(db, st) // a write in the caller's transaction, on Galera (topology.go)
	}
	if db.Error != nil || len(st.locked) > 0 && p.tel != nil { // a refusal, or a load's locks (telemetry.go)
		ctx := db.Statement.Context
		if ctx == nil {
			ctx = context.Background()
		}
		// A load's locks only where they are counted or shown
		if db.Error != nil || p.tel.Grants.Enabled(ctx) || trace.SpanFromContext(ctx).IsRecording() {
			p.countStatement(db, st)
		}
	}
	if db.Error != nil && st.restore != nil {
		st.restore()
	}
	if st.err != nil && db.Error != nil && !errors.Is(db.Error, st.err) {
		db.Error = fmt.Errorf("%w; %w", db.Error, st.err)
	}
}

// endTransaction ends the statement's own transaction or savepoint.
func (b *binding) endTransaction(db *gorm.DB, st *state) {
	switch {
	case st.ownTx:
		if tx, ok := db.Statement.ConnPool.(gorm.TxCommitter); ok {
			if db.Error != nil {
				tx.Rollback()
			} else if err := tx.Commit(); err != nil {
				db.AddError(err)
			} else if err := b.p.confirmGrants(db, st); err != nil {
				db.AddError(err)
			}
		}
		if st.txDone != nil {
			st.txDone()
		}
		db.Statement.ConnPool = st.pool
	case st.savepoint != "":
		closeSavepoint(db, st.savepoint)
		if st.savepointDone != nil {
			st.savepointDone()
		}
	}
}

// closeSavepoint rolls back to name if the statement failed, then
// releases it.
func closeSavepoint(db *gorm.DB, name string) {
	if lockstore.TxRolledBack(db.Error) {
		return // gone with the caller's transaction
	}
	c := cleanup(db)
	if db.Error != nil {
		if err := c.RollbackTo(name); err != nil {
			db.AddError(err)
		}
	}
	if err := c.ReleaseSavepoint(name); err != nil {
		db.AddError(err)
	}
}

// giveBack undoes the locks a failed load committed: those taken outside
// any transaction, and a new one-statement grant (fastGrant).
func (p *Plugin) giveBack(db *gorm.DB, st *state) {
	var given []key
	if st.detached {
		for k, n := range st.newly {
			if n {
				given = append(given, k)
				p.hints.drop(st.owner.Session, k)
			}
		}
	}
	if len(given) > 0 {
		if err := st.t.Drop(cleanup(db), given, st.owner.Session); err != nil {
			db.AddError(err)
		}
	}
	if st.fast == fastNone && st.fastTok != "" && st.locked[st.fastKey] {
		p.hints.drop(st.owner.Session, st.fastKey)
		if err := st.t.DropGrant(cleanup(db), st.fastKey, st.fastTok); err != nil {
			db.AddError(err)
		}
	}
}

// ttlFor is the lifetime of a lock taken on m (nil for a lock call):
// WithTTL's, the tag's ttl=…, or Config.TTL, capped by MaxTTL.
func (p *Plugin) ttlFor(db *gorm.DB, m *model.Model) (time.Duration, error) {
	var d time.Duration // WithTTL's, without a call per statement
	var ok bool
	if ctx := db.Statement.Context; ctx != nil {
		d, ok = ctx.Value(ttlKey{}).(time.Duration)
	}
	switch {
	case !ok && m != nil && m.TTL > 0:
		d = m.TTL
	case !ok:
		d = p.cfg.TTL
	case d <= 0:
		return 0, invalid("TTL %v must be positive", d)
	}
	return min(d, p.cfg.MaxTTL), nil
}

// connCtx is the statement's context, with its spanLog if it keeps one.
func connCtx(db *gorm.DB) context.Context {
	ctx := db.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	if _, logged := db.Statement.Settings.Load(telemetry.SpanLogKey); !logged {
		return ctx // TraceStatement began none: WithSpanLog would find none
	}
	return telemetry.WithSpanLog(ctx, db)
}

// ownerOf reads and checks the owner in db's context.
func ownerOf(db *gorm.DB) (Owner, error) {
	var o Owner // OwnerFrom
	if ctx := db.Statement.Context; ctx != nil {
		o, _ = ctx.Value(ownerKey{}).(Owner)
	}
	if o.Session == "" {
		return Owner{}, noOwner("this call")
	}
	if err := model.CheckText("session", o.Session, model.MaxTextLen, false); err != nil {
		return Owner{}, err
	}
	if err := model.CheckText("user", o.User, model.MaxTextLen, true); err != nil {
		return Owner{}, err
	}
	return o, nil
}

// loadAccess is the lock a load takes under m's mode.
func loadAccess(m *model.Model) Access {
	p := m
	if m.Root != nil { // m.Policy(), asked only where it can differ from m
		p = m.Policy()
	}
	if p.Mode == model.ReadWrite {
		return Read
	}
	return Write
}

// accessFor is the access a statement of op on m asks for.
func accessFor(m *model.Model, op opKind) Access {
	if op.loads() {
		return loadAccess(m)
	}
	return Write
}

// snapshot returns a function that puts v back as it is now (a slice's
// elements copied: GORM may scan into its array).

func snapshot(v reflect.Value) func() {
	if !v.IsValid() || !v.CanSet() {
		return nil
	}
	saved := reflect.New(v.Type()).Elem()
	if v.Kind() == reflect.Slice && !v.IsNil() {
		saved.Set(reflect.MakeSlice(v.Type(), v.Len(), v.Len()))
		reflect.Copy(saved, v)
	} else {
		saved.Set(v)
	}
	return func() { v.Set(saved) }
}
