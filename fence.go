package offlinelock

import (
	"reflect"
	"strings"
	"sync"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The fence, folded into the write's own WHERE when nothing but GORM's
// work runs before its commit (docs/callbacks.md, "The folded fence"; on
// MySQL the guard's fence function, docs/guard.md).

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

// foldUpsert folds the fence of a MySQL upsert of one record by key into
// the statement twice (docs/guard.md, "The fence function"): in the key's
// value (not another session's) and in ON DUPLICATE KEY UPDATE (the
// session's). lockstore.Signer's clause builders write both; the fence
// trusts the fold only if they did. It reports whether it folded.
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

// prepareWrite runs a folded write prepared where the store keeps
// statements prepared (SQLite: compiling the subquery costs more than
// running it); unpreparedWrite, just after gorm:update, puts it back.
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

// unpreparedWrite puts back the transaction prepareWrite wrapped.
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
// in its WHERE: the store can, the caller gave no WHERE, and nothing but
// GORM's and the plugin's callbacks run before commit (no After hook, no
// associations, no one else's callback in the chain).
func (b *binding) canFold(db *gorm.DB, st *state, op opKind) bool {
	caps, s := st.caps, db.Statement.Schema
	if fn := caps.FenceCall != nil && !b.p.cfg.DisableGuard; !fn && (op == opCreate || caps.Folder == nil) {
		return false // an upsert folds on MySQL only (foldUpsert)
	}
	if callerWhere(db.Statement) || s == nil || len(s.Relationships.Relations) > 0 {
		return false
	}
	_, after, proc := hooksOf(db, op)
	return !after && b.p.chains.own(proc)
}

// refusedAtFence turns a folded fence's refusal (lockstore.FenceCall)
// into the error the fence's own statement gives, and reports whether.
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

// hooksOf says whether GORM runs a hook of the model's before op and
// after it, and gives op's callback processor (for chains.own).
func hooksOf(db *gorm.DB, op opKind) (before, after bool, proc any) {
	s := db.Statement.Schema
	hooks := s != nil && !db.Statement.SkipHooks
	switch op {
	case opCreate:
		proc = db.Callback().Create()
		before, after = hooks && (s.BeforeSave || s.BeforeCreate), hooks && (s.AfterSave || s.AfterCreate)
	case opUpdate:
		proc = db.Callback().Update()
		before, after = hooks && (s.BeforeSave || s.BeforeUpdate), hooks && (s.AfterSave || s.AfterUpdate)
	default:
		proc = db.Callback().Delete()
		before, after = hooks && s.BeforeDelete, hooks && s.AfterDelete
	}
	return before, after, proc
}

// callerWhere says whether the caller gave the write a WHERE of its own:
// an Or beside the fence, unparenthesised, could match without it.
func callerWhere(stmt *gorm.Statement) bool {
	c, ok := stmt.Clauses["WHERE"]
	if !ok {
		return false
	}
	where, ok := c.Expression.(clause.Where)
	return !ok || len(where.Exprs) > 0
}

// chainCache remembers, per GORM callback processor, whether its chain is
// GORM's and the plugin's alone, judged again when its count of callbacks
// (every Register, Replace and Remove appends one) changed.
type chainCache struct {
	mu sync.Mutex
	m  map[any]chainVerdict
}

type chainVerdict struct {
	callbacks int // len(processor.callbacks) when judged
	own       bool
}

// own is the cached verdict on proc. GORM lists no callbacks: this reads
// the processor's unexported fields, and any other shape answers false
// (the fence keeps its own statement).
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
	verdict = chainVerdict{callbacks: n, own: ownCallbacks(cbs)}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[any]chainVerdict{}
	}
	c.m[proc] = verdict
	c.mu.Unlock()
	return verdict.own
}

// ownCallbacks: every callback is GORM's or the plugin's, none replaced.
func ownCallbacks(cbs reflect.Value) bool {
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

// The writer's identity rides in statements the plugin already sends
// (internal/lockstore's signing.go): the plugin says who sends each.

// registerIdentity has the store sign db's writes, once per database.
func (b *binding) registerIdentity(db *gorm.DB) {
	if s := b.t.caps.Signer; s != nil && !b.p.cfg.DisableGuard {
		s.SignWrites(db, writer{b})
	}
}

// rawIdentity gives a raw write (Exec) its identity (Signer.SignRaw).
func (b *binding) rawIdentity(db *gorm.DB) {
	if b.t == nil || b.t.caps.Signer == nil || b.p.cfg.DisableGuard || db.Error != nil || db.DryRun {
		return // no store: a plugin that failed to initialise refuses elsewhere
	}
	b.t.caps.Signer.SignRaw(db, writer{b})
}

// writer is the plugin's side of a signed write (lockstore.Writer).
type writer struct{ b *binding }

// Writer is lockstore.Writer's: the owner in stmt's context, and whether
// the plugin fences the write.
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
