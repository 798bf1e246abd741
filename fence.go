package offlinelock

import (
	"reflect"
	"strings"
	"sync"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The fence, folded into the write. A verified save would otherwise cost a
// statement of its own after the write: read the key row FOR SHARE, so
// that a takeover of an expired lock either committed before the check
// (and the save fails) or waits for the save's commit. When nothing but
// GORM's own work can run between the write and its commit, the same
// check and the same row lock can ride in the write's WHERE:
//
//	UPDATE docs SET … WHERE id = 7 AND EXISTS (SELECT 1 FROM locks WHERE …
//	    AND session = 'M1' AND expires_at > clock_timestamp() FOR SHARE)
//
// It changes no row unless the session's Write lock is valid at the moment
// of the write, and from then on the key row is row-locked until commit,
// so no takeover can commit in between. The price is that a takeover of
// that record waits for the save's commit, not only for its last round
// trip; so the fold is used only when that wait is GORM's own work: no
// After hook of the model and no callback of anyone else in the chain
// (a hook or another plugin's callback could run for as long as it likes
// with the row locked). A write that changes no row is checked on its own,
// to tell a missing row from a lost lock.
//
// On MySQL the fold is the guard's fence function (lockstore.FenceCall),
// which refuses with an error rather than matching no row: MySQL reports
// an unchanged row as 0 rows, so only an error tells a lost lock from an
// unchanged row without another statement. There it also rides, twice, in
// the holder's upsert of one record (foldUpsert).

// foldFence puts the fence of a write of one record by key (the hint
// path) into the write's WHERE, when canFold says it may.
func (b *binding) foldFence(db *gorm.DB, st *state, k key) {
	caps := st.caps
	var cond clause.Expression
	if caps.Folder != nil {
		cond = caps.Folder.FenceCondition(k, st.owner.Session)
	} else if c, ok := caps.FenceCall.FenceCall(k, st.owner.Session, false); ok {
		cond, st.foldRefuses = c, true
	} else {
		return
	}
	db.Statement.AddClause(clause.Where{Exprs: []clause.Expression{cond}})
	st.folded = true
}

// foldUpsert folds the fence of a MySQL upsert of one record by key (the
// hint path) into the statement, twice, when canFold says it may and the
// store has its fence function: in the key's value, the record must not be
// another session's (a new row needs no lock); in the ON DUPLICATE KEY
// UPDATE part, which MySQL runs only for a row that exists, it must be the
// session's:
//
//	INSERT INTO docs (title, id) VALUES ('t', IF(fence('docs', '7', 'M1', 1) = 1, 7, NULL))
//	ON DUPLICATE KEY UPDATE title = VALUES(title), id = IF(fence('docs', '7', 'M1', 0) = 1, id, NULL)
//
// Each refuses with an error, so the write fails whatever its row count
// says (an upsert's cannot tell an insert from an update). It reports
// whether it folded; the store's clause builders write both
// (lockstore.Signer), and the fence trusts the fold only if they did.
func (b *binding) foldUpsert(db *gorm.DB, st *state, k key) bool {
	fc := st.caps.FenceCall
	if fc == nil || !b.canFold(db, st, opCreate) || !oneValue(db.Statement.ReflectValue) {
		return false
	}
	mine, ok := fc.FenceCall(k, st.owner.Session, false)
	notTheirs, _ := fc.FenceCall(k, st.owner.Session, true)
	if !ok {
		return false
	}
	st.upsertFence, st.valuesFence = mine, notTheirs
	st.folded, st.foldRefuses = true, true
	return true
}

// oneValue: v is one record (not a slice or array of several).
func oneValue(v reflect.Value) bool {
	k := v.Kind()
	return k != reflect.Slice && k != reflect.Array || v.Len() == 1
}

// prepareWrite runs a write whose fence rides in its WHERE (st.folded)
// prepared, on a store that keeps statements prepared: on SQLite,
// compiling the write's lock-check subquery costs more than running it.
// Just before gorm:update; unpreparedWrite puts the transaction back just
// after, before anything else (associations, hooks, commit) runs on it.
func (b *binding) prepareWrite(db *gorm.DB) {
	st := statementState(db.Statement)
	if st == nil || !st.folded || st.prepared || db.Error != nil || db.DryRun {
		return
	}
	if pool, ok := lockstore.PreparedWriteTx(db, st.t.Store); ok {
		st.preparedTx = [2]gorm.ConnPool{db.Statement.ConnPool, pool}
		db.Statement.ConnPool, st.prepared = pool, true
	}
}

// unpreparedWrite is prepareWrite's undoing, just after gorm:update: the
// transaction put back, if its wrapping is still there.
func unpreparedWrite(db *gorm.DB) {
	if st := statementState(db.Statement); st != nil && st.prepared && st.preparedTx[1] != nil {
		st.prepared = false
		if db.Statement.ConnPool == st.preparedTx[1] {
			db.Statement.ConnPool = st.preparedTx[0]
		}
		st.preparedTx = [2]gorm.ConnPool{}
	}
}

// canFold says whether the fence of a write of one record by key can ride
// in the write's WHERE: the store can, the caller gave the write no WHERE
// of its own, and nothing but GORM's and the plugin's own callbacks run
// between the write and its commit (the model has no After hook that
// runs, it saves no associations, and the chain holds no callback of
// anyone else).
func (b *binding) canFold(db *gorm.DB, st *state, op opKind) bool {
	p := b.p
	caps := st.caps
	switch {
	case op == opCreate: // an upsert (write.go's hint path): MySQL's only (foldUpsert)
		if caps.FenceCall == nil || p.cfg.DisableGuard {
			return false
		}
	case caps.Folder == nil && (caps.FenceCall == nil || p.cfg.DisableGuard):
		return false
	}
	s := db.Statement.Schema
	if callerWhere(db.Statement) || s == nil || len(s.Relationships.Relations) > 0 {
		return false
	}
	var proc any
	switch op {
	case opCreate:
		if !db.Statement.SkipHooks && (s.AfterSave || s.AfterCreate) {
			return false
		}
		proc = db.Callback().Create()
	case opUpdate:
		if !db.Statement.SkipHooks && (s.AfterSave || s.AfterUpdate) {
			return false
		}
		proc = db.Callback().Update()
	default:
		if !db.Statement.SkipHooks && s.AfterDelete {
			return false
		}
		proc = db.Callback().Delete()
	}
	return p.chains.own(proc)
}

// refusedAtFence turns the refusal of a folded fence that refuses with an
// error (lockstore.FenceCall) into the error the fence's own statement
// would have given, naming the holder; the write changed nothing. It
// reports whether it did.
func (b *binding) refusedAtFence(db *gorm.DB, st *state) bool {
	p := b.p
	fc := st.caps.FenceCall
	if !st.foldRefuses || db.Error == nil || fc == nil || !fc.FenceRefused(db.Error) {
		return false
	}
	_, free, err := st.t.check(st.t.direct(db), st.required, st.owner, false)
	switch {
	case err != nil:
	case len(free) > 0:
		err = b.notLocked(db, st, st.op, free)
	default: // valid again by now, but not when the write looked
		err = notLockedForWrite(st.op, st.required)
	}
	st.fenceFailed = true
	p.tel.FenceFailed(ctxOf(db), db, st.m.LockResource(), string(st.op))
	st.err, db.Error = err, err
	return true
}

// runsHooks says whether GORM runs a hook of the model's for op, before
// or after the write (hooks are not skipped). The hint path (write.go)
// is taken only without them, so that a write it refuses has run no code
// of the caller's.
func runsHooks(db *gorm.DB, op opKind) bool {
	s := db.Statement.Schema
	if s == nil || db.Statement.SkipHooks {
		return false
	}
	switch op {
	case opCreate:
		return s.BeforeSave || s.BeforeCreate || s.AfterCreate || s.AfterSave
	case opUpdate:
		return s.BeforeSave || s.BeforeUpdate || s.AfterUpdate || s.AfterSave
	}
	return s.BeforeDelete || s.AfterDelete
}

// callerWhere says whether the caller gave the write a WHERE of its own
// (Where, Or, Not, Clauses): its terms and ours share one WHERE with no
// parentheses around each, so an Or, or a term that closes GORM's
// parenthesis, could match the row without the fence. The fence is folded
// only beside the conditions GORM itself adds (the primary key, soft
// delete) after this callback.
func callerWhere(stmt *gorm.Statement) bool {
	c, ok := stmt.Clauses["WHERE"]
	if !ok {
		return false
	}
	where, ok := c.Expression.(clause.Where)
	return !ok || len(where.Exprs) > 0
}

// chainCache remembers ownChain's verdict per callback processor. Every
// Register, Replace and Remove appends to the processor's callbacks, so
// their count tells a verdict that still holds from one to read again.
type chainCache struct {
	mu sync.Mutex
	m  map[any]chainVerdict
}

type chainVerdict struct {
	callbacks int // len(processor.callbacks) when judged
	own       bool
}

// own is ownChain's verdict on proc, judged again only when proc's
// callbacks changed: their count is len(processor.callbacks), read by
// reflection; a processor without that shape is never the plugin's own.
func (c *chainCache) own(proc any) bool {
	v := reflect.ValueOf(proc)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return false
	}
	cbs := v.Elem().FieldByName("callbacks")
	if cbs.Kind() != reflect.Slice {
		return false
	}
	n := cbs.Len()
	c.mu.Lock()
	verdict, ok := c.m[proc]
	c.mu.Unlock()
	if ok && verdict.callbacks == n {
		return verdict.own
	}
	verdict = chainVerdict{callbacks: n, own: ownChain(proc)}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[any]chainVerdict{}
	}
	c.m[proc] = verdict
	c.mu.Unlock()
	return verdict.own
}

// ownChain reports whether every callback registered on a GORM callback
// processor is GORM's or the plugin's, none replaced. GORM does not list
// its callbacks, so this reads the processor's unexported fields; if their
// shape ever changes, it answers false and the fence keeps its own
// statement.
func ownChain(proc any) bool {
	v := reflect.ValueOf(proc)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return false
	}
	cbs := v.Elem().FieldByName("callbacks")
	if cbs.Kind() != reflect.Slice {
		return false
	}
	for i := 0; i < cbs.Len(); i++ {
		c := cbs.Index(i)
		if c.Kind() != reflect.Pointer || c.IsNil() || c.Elem().Kind() != reflect.Struct {
			return false
		}
		name, replace := c.Elem().FieldByName("name"), c.Elem().FieldByName("replace")
		if name.Kind() != reflect.String || replace.Kind() != reflect.Bool || replace.Bool() {
			return false
		}
		if n := name.String(); !strings.HasPrefix(n, "gorm:") && !strings.HasPrefix(n, "offlinelock:") {
			return false
		}
	}
	return true
}

// The writer's identity, carried to the guard inside statements the plugin
// already sends (internal/lockstore's signing.go): the store writes it,
// the plugin says who sends a statement and what it folded into it.

// registerIdentity has the store sign db's writes, once per database
// (with the callbacks).
func (b *binding) registerIdentity(db *gorm.DB) {
	if s := b.t.caps.Signer; s != nil && !b.p.cfg.DisableGuard {
		s.SignWrites(db, writer{b})
	}
}

// rawIdentity gives a raw write (Exec) by a session its identity
// (lockstore.Signer's SignRaw; lockstore.EndRawTx ends what it began).
func (b *binding) rawIdentity(db *gorm.DB) {
	if b.t == nil || b.t.caps.Signer == nil || b.p.cfg.DisableGuard || db.Error != nil || db.DryRun {
		return // no store: a plugin that failed to initialise refuses elsewhere
	}
	b.t.caps.Signer.SignRaw(db, writer{b})
}

// writer is the plugin's side of a signed write (lockstore.Writer).
type writer struct{ b *binding }

// Writer is lockstore.Writer's: the owner in stmt's context; a write the
// plugin checks again before commit (fence.go) is fenced.
func (w writer) Writer(stmt *gorm.Statement) (string, bool) {
	var o Owner
	if stmt.Context != nil { // OwnerFrom, inline: on every write's path
		o, _ = stmt.Context.Value(ownerKey{}).(Owner)
	}
	_, fenced := stmt.Settings.Load(stateKey)
	return o.Session, fenced
}

// GuardKey is lockstore.Writer's.
func (w writer) GuardKey() string {
	if k := w.b.guard.MarkKey.Load(); k != nil { // inline: on every write's path
		return *k
	}
	return ""
}

// Upsert is lockstore.Writer's: the fences foldUpsert chose.
func (w writer) Upsert(stmt *gorm.Statement) (string, clause.Expression, clause.Expression, *int) {
	st := statementState(stmt)
	if st == nil || len(st.m.PK) == 0 {
		return "", nil, nil, nil
	}
	return st.m.PK[0].DBName, st.valuesFence, st.upsertFence, &st.upsertFolds
}

// Conn is lockstore.Writer's.
func (w writer) Conn(db *gorm.DB) lockstore.Conn { return direct(db) }
