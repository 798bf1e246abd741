package lockstore

import (
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
)

// sqlStore is the lock-table SQL every store shares; the stores differ in
// the values below and their own files. One key row per locked record
// (empty holder) serialises every change to its locks; a reader row per
// session holds a Read lock (docs/lock-table.md).
type sqlStore struct {
	table, seq, catalog string   // quoted names
	obs                 Observer // told of every statement (observer.go)

	clock     string              // the database clock at the moment of the statement
	bind      func(string) string // ? placeholders in the database's form
	timeArg   func(time.Time) any // a time as the database takes it
	fenceRead string              // appended to the fence's read of key rows
	// identity is a condition (one ? for the session) telling the guard who
	// writes; "" where the check does not carry it.
	identity string
	nextGens func(Conn, int) ([]int64, error)
	// revision is the guard revision this store installs (GuardRevision;
	// tests set another, SetGuardRevision).
	revision   atomic.Int32
	releaseSQL atomic.Pointer[string] // releaseWrite's statement
	wallClock  atomic.Bool            // statements put the session's timestamp back (Conn.wallClock)

	// Hooks for SQL the defaults cannot use (MySQL); nil or "" keeps the default.
	keysIn         func(list string) string                          // (resource, lock_id) IN … for a keyList
	readersRead    func(Conn) string                                 // appended to reads of reader rows
	fromHint       string                                            // after the table in reads of key and reader rows
	deleteFrom     string                                            // how DELETEs of lock rows begin
	putConflict    string                                            // what putRows does on a key that exists
	putConflictNow func() string                                     // putConflict as it is now (MySQL: on Galera, galeraPutConflict)
	rememberSQL    string                                            // the catalog upsert, (name, spec) as ?
	lockRows       func(Conn, []Key) (map[Key]row, time.Time, error) // lockKeys
	freeWrite      func(Conn, Key, string) (bool, bool, error)       // releaseWrite
	freeKey        func(Conn, Key) (int64, error)                    // deleteKey
	tx             func(Conn, func(Conn) error) error                // the store's own transactions

	// readersIfRead: reader rows are read only under a key row in read mode
	// (MySQL), so REPEATABLE READ takes no next-key locks on others' key rows.
	readersIfRead bool

	// filter is an equality on session or token (one ?) that its index cannot
	// answer, so that a one-record statement is planned on the primary key
	// whatever the statistics; nil is a plain "col = ?".
	filter func(col string) string
}

// observed is c reporting its statements to the store's Observer.
func (t *sqlStore) observed(c Conn) Conn {
	c.obs = t.obs // c.on(t.obs)
	c.wallClock = t.wallClock.Load()
	return c
}

// inKeys is the condition that (resource, lock_id) is one of list.
func (t *sqlStore) inKeys(list string) string {
	if t.keysIn != nil {
		return t.keysIn(list)
	}
	return `(resource, lock_id) IN (VALUES ` + list + `)`
}

// deleting is the start of a DELETE of lock rows, up to its WHERE.
func (t *sqlStore) deleting() string {
	if t.deleteFrom != "" {
		return t.deleteFrom
	}
	return `DELETE FROM ` + t.table
}

// inTx runs fn in c's transaction, or in one of the store's own.
func (t *sqlStore) inTx(c Conn, fn func(Conn) error) error {
	if t.tx != nil {
		return t.tx(c, fn)
	}
	return c.inTx(fn)
}

// eq is "col = ?" in the form filter gives it.
func (t *sqlStore) eq(col string) string {
	if t.filter == nil {
		return col + " = ?"
	}
	return t.filter(col)
}

const (
	accessFree  = ""
	lockColumns = "resource, lock_id, holder, access, session, user_name, token, generation, acquired_at, expires_at"
	sweepBatch  = 1000
	// isLockRow selects the rows that are locks (a key row in write mode,
	// or a reader row), not a key row in read mode or a free one.
	isLockRow = `((holder = '' AND access = 'write') OR holder <> '')`
)

// batchSize bounds the keys per statement: a load of many rows locks them
// in a number of statements that grows with rows/batchSize, not with rows.
const batchSize = 400

// row is one row of the lock table.
type row struct {
	Lock
	holder string
}

func (r row) live(now time.Time) bool { return r.ExpiresAt.After(now) }

func scanRow(rows *sql.Rows, more ...any) (row, error) {
	var r row
	var acquired, expires any
	err := rows.Scan(append([]any{&r.Resource, &r.ID, &r.holder, &r.Access, &r.Owner.Session, &r.Owner.User,
		&r.Token, &r.Generation, &acquired, &expires}, more...)...)
	if err != nil {
		return r, err
	}
	if r.AcquiredAt, err = scanTime(acquired); err != nil {
		return r, err
	}
	r.ExpiresAt, err = scanTime(expires)
	return r, err
}

// sortKeys orders keys by resource then id, dropping duplicates: every batch
// takes key rows in this order, so none wait on each other in opposite ones.
func sortKeys(keys []Key) []Key {
	keys = slices.Clone(keys)
	slices.SortFunc(keys, func(a, b Key) int {
		if c := strings.Compare(a.Resource, b.Resource); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return slices.Compact(keys)
}

func chunks(keys []Key) [][]Key {
	var out [][]Key
	for len(keys) > batchSize {
		out = append(out, keys[:batchSize])
		keys = keys[batchSize:]
	}
	if len(keys) > 0 {
		out = append(out, keys)
	}
	return out
}

// keyList renders "(?, ?), (?, ?) …" for keys, with their arguments.
func keyList(keys []Key) (string, []any) {
	args := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		args = append(args, k.Resource, k.ID)
	}
	return repeated("(?, ?)", len(keys)), args
}

// repeated is n copies of item, comma-separated.
func repeated(item string, n int) string {
	return strings.TrimSuffix(strings.Repeat(item+", ", n), ", ")
}

// lockKeys takes the key rows of keys for the transaction, creating free
// ones, and returns them with the database's clock.
func (t *sqlStore) lockKeys(c Conn, keys []Key) (map[Key]row, time.Time, error) {
	if t.lockRows != nil {
		return t.lockRows(c, keys)
	}
	_, args := keyList(keys)
	q := t.bind(`INSERT INTO ` + t.table + ` (` + lockColumns + `) VALUES ` + repeated(`(?, ?, '', '', '', '', '', 0, `+t.clock+`, `+t.clock+`)`, len(keys)) + `
ON CONFLICT (resource, lock_id, holder) DO UPDATE SET holder = excluded.holder
RETURNING ` + lockColumns + `, ` + t.clock)
	return queryKeyRows(c, q, args)
}

// queryKeyRows runs a query that returns key rows followed by the database
// clock, and returns them by key with the latest clock reading.
func queryKeyRows(c Conn, q string, args []any) (map[Key]row, time.Time, error) {
	rows := map[Key]row{}
	var now time.Time
	_, err := c.Query(q, args, func(r *sql.Rows) error {
		var kr row
		var acquired, expires, clock any
		err := r.Scan(&kr.Resource, &kr.ID, &kr.holder, &kr.Access, &kr.Owner.Session, &kr.Owner.User,
			&kr.Token, &kr.Generation, &acquired, &expires, &clock)
		if err != nil {
			return err
		}
		if kr.AcquiredAt, err = scanTime(acquired); err != nil {
			return err
		}
		if kr.ExpiresAt, err = scanTime(expires); err != nil {
			return err
		}
		n, err := scanTime(clock)
		if n.After(now) {
			now = n
		}
		rows[Key{kr.Resource, kr.ID}] = kr
		return err
	})
	return rows, now, err
}

// readersOf returns the reader rows of keys, live or not.
func (t *sqlStore) readersOf(c Conn, keys []Key) (map[Key][]row, error) {
	out := make(map[Key][]row)
	if len(keys) == 0 {
		return out, nil
	}
	list, args := keyList(keys)
	q := `SELECT ` + lockColumns + ` FROM ` + t.table + t.fromHint + ` WHERE holder <> '' AND ` + t.inKeys(list) + ` ORDER BY resource, lock_id, holder`
	if t.readersRead != nil {
		q += t.readersRead(c)
	}
	_, err := c.Query(t.bind(q), args, func(r *sql.Rows) error {
		rw, err := scanRow(r)
		k := Key{rw.Resource, rw.ID}
		out[k] = append(out[k], rw)
		return err
	})
	return out, err
}

// putRows writes key rows and reader rows, inserting or overwriting.
func (t *sqlStore) putRows(c Conn, rows []row) error {
	if len(rows) == 0 {
		return nil
	}
	args := make([]any, 0, 10*len(rows))
	for _, r := range rows {
		args = append(args, r.Resource, r.ID, r.holder, string(r.Access), r.Owner.Session, r.Owner.User, r.Token, r.Generation,
			t.timeArg(r.AcquiredAt), t.timeArg(r.ExpiresAt))
	}
	conflict := `ON CONFLICT (resource, lock_id, holder) DO UPDATE SET access = excluded.access, session = excluded.session,
	user_name = excluded.user_name, token = excluded.token, generation = excluded.generation,
	acquired_at = excluded.acquired_at, expires_at = excluded.expires_at`
	if t.putConflict != "" {
		conflict = t.putConflict
	}
	if t.putConflictNow != nil {
		conflict = t.putConflictNow()
	}
	_, err := c.Exec(t.bind(`INSERT INTO `+t.table+` (`+lockColumns+`) VALUES `+repeated("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", len(rows))+`
`+conflict), args...)
	return err
}

// dropReaders deletes the reader rows of keys: all of them, or (with a
// non-zero before) only those expired by then.
func (t *sqlStore) dropReaders(c Conn, keys []Key, before time.Time) error {
	if len(keys) == 0 {
		return nil
	}
	list, args := keyList(keys)
	q := t.deleting() + ` WHERE holder <> '' AND ` + t.inKeys(list)
	if !before.IsZero() {
		q += ` AND expires_at <= ?`
		args = append(args, t.timeArg(before))
	}
	_, err := c.Exec(t.bind(q), args...)
	return err
}

// decideMany grants, refreshes or refuses locks on sorted keys with their key
// rows held, all or nothing: the first key held by another is its *Conflict.
func (t *sqlStore) decideMany(c Conn, keys []Key, o Owner, access Access, ttl time.Duration) ([]Granted, error) {
	krs, now, err := t.lockKeys(c, keys)
	if err != nil {
		return nil, err
	}
	var readKeys []Key
	for _, k := range keys {
		kr := krs[k]
		if !(kr.Access == Write && kr.live(now)) && !(t.readersIfRead && kr.Access != Read) {
			readKeys = append(readKeys, k)
		}
	}
	readers, err := t.readersOf(c, readKeys)
	if err != nil {
		return nil, err
	}
	plans := make([]plan, 0, len(keys))
	fresh := 0
	for _, k := range keys {
		pl, err := planFor(k, krs[k], readers[k], o, access, now, now.Add(ttl))
		if err != nil {
			return nil, err
		}
		if pl.newGen {
			fresh++
		}
		plans = append(plans, pl)
	}
	gens, err := t.nextGens(c, fresh)
	if err != nil {
		return nil, err
	}
	got, err := t.apply(c, plans, gens, o, now)
	if err == nil {
		countPlans(c, plans)
	}
	return got, err
}

// countPlans counts the upgrades and expiry takeovers among applied plans.
func countPlans(c Conn, plans []plan) {
	obs := observer(c.obs)
	for _, pl := range plans {
		if pl.upgrade {
			obs.Upgraded(c.ctx, pl.k.Resource)
		}
		if pl.takeover {
			obs.TakenOver(c.ctx, pl.k.Resource)
		}
	}
}

// plan is what decideMany writes for one key.
type plan struct {
	k                    Key
	lock                 Lock   // as the table holds it: Token is a hash
	token                string // a new grant's token, for its holder only
	keyRow               *row   // the key row to write
	newGen               bool
	dropAll, dropExpired bool
	upgrade              bool // the only reader takes Write (telemetry)
	takeover             bool // another session's expired Write lock is taken over (telemetry)
}

// planFor decides one key from its key row and readers: o's lock or a *Conflict.
func planFor(k Key, kr row, readers []row, o Owner, access Access, now, exp time.Time) (plan, error) {
	if kr.Access == Write && kr.live(now) {
		if kr.Owner.Session != o.Session {
			return plan{}, refused(k, access, []Lock{kr.Lock})
		}
		l := kr.Lock // a writer asking for Read keeps its Write lock
		l.Owner.User = o.User
		l.ExpiresAt = later(l.ExpiresAt, exp)
		return plan{k: k, lock: l, keyRow: &row{Lock: l}}, nil
	}
	var own *Lock
	var others []Lock
	expired := false
	for _, r := range readers {
		switch {
		case !r.live(now):
			expired = true
		case r.Owner.Session == o.Session:
			own = &r.Lock
		default:
			others = append(others, r.Lock)
		}
	}
	if access == Write && len(others) > 0 {
		return plan{}, refused(k, access, others)
	}
	pl := plan{k: k, lock: Lock{Resource: k.Resource, ID: k.ID, Access: access, Owner: o, AcquiredAt: now, ExpiresAt: exp}}
	pl.takeover = kr.Access == Write && kr.Owner.Session != o.Session
	pl.upgrade = own != nil && access == Write
	if own != nil && access == Read {
		pl.lock.Token, pl.lock.Generation, pl.lock.AcquiredAt = own.Token, own.Generation, own.AcquiredAt
		pl.lock.ExpiresAt = later(own.ExpiresAt, exp)
	} else {
		if own != nil { // an upgrade keeps the token its client already has
			pl.lock.Token = own.Token
		} else {
			var err error
			if pl.token, err = NewToken(); err != nil {
				return plan{}, err
			}
			pl.lock.Token = tokenHash(pl.token)
		}
		pl.newGen = true
	}
	if access == Write {
		pl.keyRow = &row{Lock: pl.lock}
		pl.dropAll = len(readers) > 0
		return pl, nil
	}
	keyExp := pl.lock.ExpiresAt
	for _, r := range others {
		keyExp = later(keyExp, r.ExpiresAt)
	}
	pl.keyRow = &row{Lock: Lock{Resource: k.Resource, ID: k.ID, Access: Read, AcquiredAt: now, ExpiresAt: keyExp}}
	pl.dropExpired = expired
	return pl, nil
}

// apply writes plans, with gens as the fresh generations, and returns the
// locks, with their tokens where they are new.
func (t *sqlStore) apply(c Conn, plans []plan, gens []int64, o Owner, now time.Time) ([]Granted, error) {
	var dropAll, dropExpired []Key
	var puts []row
	out := make([]Granted, 0, len(plans))
	for i := range plans {
		pl := &plans[i]
		if pl.newGen {
			pl.lock.Generation, gens = gens[0], gens[1:]
			if pl.lock.Access == Write {
				pl.keyRow.Generation = pl.lock.Generation
			}
		}
		if pl.dropAll {
			dropAll = append(dropAll, pl.k)
		}
		if pl.dropExpired {
			dropExpired = append(dropExpired, pl.k)
		}
		kr := *pl.keyRow
		if kr.Access == Read {
			kr.Owner, kr.Token, kr.Generation = Owner{}, "", 0
		}
		puts = append(puts, kr)
		if pl.lock.Access == Read {
			puts = append(puts, row{Lock: pl.lock, holder: o.Session})
		}
		g := Granted{Lock: pl.lock, Fresh: pl.newGen, Hash: pl.lock.Token}
		g.Token = pl.token
		out = append(out, g)
	}
	if err := t.dropReaders(c, dropAll, time.Time{}); err != nil {
		return nil, err
	}
	if err := t.dropReaders(c, dropExpired, now); err != nil {
		return nil, err
	}
	return out, t.putRows(c, puts)
}

// Check sorts keys into those the session holds a valid Write lock on and
// those nobody holds; another's key is a *Conflict. share (the fence)
// reads the key rows with fenceRead.
func (t *sqlStore) Check(c Conn, keys []Key, o Owner, share bool) (mine, free []Key, err error) {
	c = t.observed(c)
	keys = sortKeys(keys)
	for _, batch := range chunks(keys) {
		krs, now, err := t.keyRows(c, batch, share, o.Session)
		if err != nil {
			return nil, nil, err
		}
		var reading []Key
		for _, k := range batch {
			kr, ok := krs[k]
			switch {
			case !ok || !kr.live(now) || kr.Access == accessFree:
				free = append(free, k)
			case kr.Access == Write && kr.Owner.Session == o.Session:
				mine = append(mine, k)
			case kr.Access == Write:
				return nil, nil, refused(k, Write, []Lock{kr.Lock})
			default:
				reading = append(reading, k)
			}
		}
		readers, err := t.readersOf(c, reading)
		if err != nil {
			return nil, nil, err
		}
		for _, k := range reading {
			var live []Lock
			for _, r := range readers[k] {
				if r.live(now) {
					live = append(live, r.Lock)
				}
			}
			var others []Lock
			for _, l := range live {
				if l.Owner.Session != o.Session {
					others = append(others, l)
				}
			}
			if len(others) > 0 {
				return nil, nil, refused(k, Write, others)
			}
			free = append(free, k) // read by the session alone: it holds no Write lock
		}
	}
	return mine, free, nil
}

// keyRows reads the key rows of keys with the database's clock.
func (t *sqlStore) keyRows(c Conn, keys []Key, share bool, session string) (map[Key]row, time.Time, error) {
	list, args := keyList(keys)
	where := ` WHERE holder = '' AND `
	if t.identity != "" && session != "" {
		where += t.identity + ` AND `
		args = append([]any{postgresIdentity(session, true)}, args...) // the check's writes are fenced
	}
	q := `SELECT ` + lockColumns + `, ` + t.clock + ` FROM ` + t.table + t.fromHint + where + t.inKeys(list)
	q += ` ORDER BY resource, lock_id` // the one order every batch takes key rows in
	if share {
		q += t.fenceRead
	}
	return queryKeyRows(c, t.bind(q), args)
}

// clockAt reads the database clock.
func (t *sqlStore) clockAt(c Conn) (time.Time, error) {
	var v any
	_, err := c.Query(`SELECT `+t.clock, nil, func(r *sql.Rows) error { return r.Scan(&v) })
	if err != nil {
		return time.Time{}, err
	}
	return scanTime(v)
}

// deleteReaders removes the reader rows of k, or only those of one session.
func (t *sqlStore) deleteReaders(c Conn, k Key, session string) (int64, error) {
	q := t.deleting() + ` WHERE resource = ? AND lock_id = ? AND holder <> ''`
	args := []any{k.Resource, k.ID}
	if session != "" {
		q += ` AND holder = ?`
		args = append(args, session)
	}
	return c.Exec(t.bind(q), args...)
}

// DropGrant deletes the Write lock on k if its token is still token, that
// is, if the grant that made it is the one being undone.
func (t *sqlStore) DropGrant(c Conn, k Key, token string) error {
	c = t.observed(c)
	_, err := c.Exec(t.bind(t.deleting()+` WHERE resource = ? AND lock_id = ? AND holder = '' AND `+t.eq("token")), k.Resource, k.ID, tokenHash(token))
	return err
}

func (t *sqlStore) deleteKey(c Conn, k Key) (int64, error) {
	if t.freeKey != nil {
		return t.freeKey(c, k)
	}
	return c.Exec(t.bind(t.deleting()+` WHERE resource = ? AND lock_id = ?`), k.Resource, k.ID)
}

// releaseWrite deletes the session's Write lock on k in one statement and
// reports whether there was one and whether it was still valid.
func (t *sqlStore) releaseWrite(c Conn, k Key, session string) (found, valid bool, held time.Duration, err error) {
	if t.freeWrite != nil {
		found, valid, err = t.freeWrite(c, k, session)
		return found, valid, HeldUnknown, err
	}
	_, err = c.Query(t.releaseStatement(), []any{k.Resource, k.ID, session}, func(r *sql.Rows) error {
		var exp, now, acq any
		if err := r.Scan(&exp, &now, &acq); err != nil {
			return err
		}
		e, err1 := scanTime(exp)
		n, err2 := scanTime(now)
		a, err3 := scanTime(acq)
		found, valid, held = true, e.After(n), n.Sub(a)
		return errors.Join(err1, err2, err3)
	})
	return found, valid, held, err
}

// releaseStatement is releaseWrite's statement, built once, not at every
// release.
func (t *sqlStore) releaseStatement() string {
	if q := t.releaseSQL.Load(); q != nil {
		return *q
	}
	q := t.bind(`DELETE FROM ` + t.table + ` WHERE resource = ? AND lock_id = ? AND holder = '' AND access = 'write' AND ` + t.eq("session") + `
RETURNING expires_at, ` + t.clock + `, acquired_at`)
	t.releaseSQL.Store(&q)
	return q
}

// List returns the locks that match f, without their tokens.
func (t *sqlStore) List(c Conn, f Filter) ([]Lock, error) {
	c = t.observed(c)
	q := `SELECT ` + lockColumns + `, reason FROM ` + t.table + ` WHERE ` + isLockRow
	var args []any
	for _, cond := range []struct{ col, val string }{
		{"resource", f.Resource}, {"lock_id", f.ID}, {"session", f.Session}, {"user_name", f.User},
	} {
		if cond.val != "" {
			q += ` AND ` + cond.col + ` = ?`
			args = append(args, cond.val)
		}
	}
	if f.Expired {
		q += ` AND expires_at <= ` + t.clock
	} else {
		q += ` AND expires_at > ` + t.clock
	}
	q += ` ORDER BY resource, lock_id, holder`
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	return t.queryLocks(c, q, args, nil)
}

// queryLocks appends to out the locks q reads (lockColumns, reason),
// without their tokens.
func (t *sqlStore) queryLocks(c Conn, q string, args []any, out []Lock) ([]Lock, error) {
	_, err := c.Query(t.bind(q), args, func(r *sql.Rows) error {
		var reason string
		rw, err := scanRow(r, &reason)
		rw.Token = ""
		rw.Reason = reasonOf(reason, rw.Generation)
		out = append(out, rw.Lock)
		return err
	})
	return out, err
}

func (t *sqlStore) ListKeys(c Conn, keys []Key) ([]Lock, error) {
	c = t.observed(c)
	var out []Lock
	for len(keys) > 0 {
		batch := keys[:min(len(keys), 100)]
		keys = keys[len(batch):]
		conds := make([]string, len(batch))
		args := make([]any, 0, 2*len(batch))
		for i, k := range batch {
			conds[i] = `(resource = ? AND lock_id = ?)`
			args = append(args, k.Resource, k.ID)
		}
		q := `SELECT ` + lockColumns + `, reason FROM ` + t.table + ` WHERE ` + isLockRow + ` AND (` + strings.Join(conds, ` OR `) +
			`) AND expires_at > ` + t.clock + ` ORDER BY resource, lock_id, holder`
		var err error
		if out, err = t.queryLocks(c, q, args, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// The reason column holds "<generation>:<reason>", so a later grant's lock
// shows none (reasonOf).

func (t *sqlStore) SetReason(c Conn, l Lock, reason string) error {
	c = t.observed(c)
	_, err := c.Exec(t.bind(`UPDATE `+t.table+` SET reason = ? WHERE resource = ? AND lock_id = ? AND `+t.eq("session")+` AND generation = ?`),
		strconv.FormatInt(l.Generation, 10)+":"+reason, l.Resource, l.ID, l.Owner.Session, l.Generation)
	return err
}

// reasonOf is the reason of the row of generation whose column holds v.
func reasonOf(v string, generation int64) string {
	g, r, ok := strings.Cut(v, ":")
	if !ok || g != strconv.FormatInt(generation, 10) {
		return ""
	}
	return r
}

// reasonColumn adds the reason column to a lock table an older version
// made, when has says it lacks it (the DDL is each database's).
func reasonColumn(c Conn, has func() (bool, error), ddl string) error {
	ok, err := has()
	if err != nil || ok {
		return err
	}
	_, err = c.Exec(ddl)
	return err
}

// Remember writes catalog rows.
func (t *sqlStore) Remember(c Conn, rows []CatalogRow) error {
	c = t.observed(c)
	q := `INSERT INTO ` + t.catalog + ` AS c (name, spec) VALUES (?, ?)
ON CONFLICT (name) DO UPDATE SET spec = excluded.spec WHERE c.spec <> excluded.spec`
	if t.rememberSQL != "" {
		q = t.rememberSQL
	}
	for _, r := range rows {
		if _, err := c.Exec(t.bind(q), strings.ToLower(r.Name), string(r.Spec)); err != nil {
			return err
		}
	}
	return nil
}

// Catalog reads the catalog.
func (t *sqlStore) Catalog(c Conn) ([]CatalogRow, error) {
	c = t.observed(c)
	var out []CatalogRow
	// The guard's own rows start with "offlinelock:", which no table's name does.
	_, err := c.Query(t.bind(`SELECT name, spec FROM `+t.catalog+` WHERE name NOT LIKE ? ORDER BY name`), []any{guardRowPrefix + "%"}, func(r *sql.Rows) error {
		var name, spec string
		err := r.Scan(&name, &spec)
		out = append(out, CatalogRow{Name: name, Spec: []byte(spec)})
		return err
	})
	return out, err
}

// SavepointIn is the one name every savepoint of the plugin takes where
// savepoints of one name nest.
func (t *sqlStore) SavepointIn(gorm.ConnPool) (string, func()) { return SavepointName, noop }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// scanTime reads a time the database returned.
func scanTime(v any) (time.Time, error) {
	switch x := v.(type) {
	case time.Time:
		return x.UTC(), nil
	case string:
		return parseSQLiteTime(x)
	case []byte:
		return parseSQLiteTime(string(x))
	}
	return time.Time{}, fmt.Errorf("offlinelock: unexpected time value %T", v)
}

func parseSQLiteTime(s string) (time.Time, error) {
	t, err := time.ParseInLocation(sqliteTime, s, time.UTC)
	if err != nil {
		return time.Time{}, fmt.Errorf("offlinelock: bad time %q in lock table: %w", s, err)
	}
	return t, nil
}

// batchGrant takes the Write locks of keys in one statement where each is
// free, expired or o's, and adds them to got; a lock with another hash than
// the one sent was o's before.
type batchGrant func(c Conn, keys []Key, o Owner, ttl time.Duration, got map[Key]Granted) error

// batchTokens are the new tokens of a batch grant, one per key, and the
// hashes it sends.
func batchTokens(keys []Key) (tokens, hashes map[Key]string, err error) {
	tokens, hashes = make(map[Key]string, len(keys)), make(map[Key]string, len(keys))
	for _, k := range keys {
		if tokens[k], err = NewToken(); err != nil {
			return nil, nil, err
		}
		hashes[k] = tokenHash(tokens[k])
	}
	return tokens, hashes, nil
}

// grantedRow is a batch grant's row as its holder sees it: with its token
// only if the grant is fresh.
func grantedRow(l Lock, tokens, hashes map[Key]string) Granted {
	k := Key{l.Resource, l.ID}
	g := Granted{Lock: l, Hash: l.Token, Fresh: l.Token == hashes[k]}
	g.Token = ""
	if g.Fresh {
		g.Token = tokens[k]
	}
	return g
}

// grantWrites grants one batch statement per batch of sorted keys; the rest
// go through the serialised path. Several keys are all or nothing in one
// transaction.
func (t *sqlStore) grantWrites(c Conn, keys []Key, o Owner, ttl time.Duration, batch batchGrant) (map[Key]Granted, error) {
	got := map[Key]Granted{}
	run := func(c Conn) error {
		var rest []Key
		batches := [][]Key{keys} // one key: no sorting, no chunks
		if len(keys) > 1 {
			batches = chunks(sortKeys(keys))
		}
		for _, b := range batches {
			if err := batch(c, b, o, ttl, got); err != nil {
				return err
			}
			for _, k := range b {
				if _, ok := got[k]; !ok {
					rest = append(rest, k)
				}
			}
		}
		if len(rest) == 0 {
			return nil
		}
		more, err := t.decide(c, rest, o, Write, ttl)
		maps.Copy(got, more)
		return err
	}
	if len(keys) == 1 {
		return got, run(c)
	}
	return got, c.inTx(run)
}

// decide grants keys in batches through the serialised path, in c's
// transaction (or one of its own): it sees every holder exactly.
func (t *sqlStore) decide(c Conn, keys []Key, o Owner, access Access, ttl time.Duration) (map[Key]Granted, error) {
	got := make(map[Key]Granted, len(keys))
	err := t.inTx(c, func(c Conn) error {
		for _, batch := range chunks(sortKeys(keys)) {
			gs, err := t.decideMany(c, batch, o, access, ttl)
			if err != nil {
				return err
			}
			for _, g := range gs {
				got[Key{g.Resource, g.ID}] = g
			}
		}
		return nil
	})
	return got, err
}

// Release gives up session's lock on k: a Write lock in one statement, a
// Read lock with the key row held.
func (t *sqlStore) Release(c Conn, k Key, session string) (time.Duration, error) {
	c = t.observed(c)
	found, valid, held, err := t.releaseWrite(c, k, session)
	if err != nil {
		return 0, err
	}
	if !found {
		err = t.inTx(c, func(c Conn) error {
			var err error
			found, valid, held, err = t.releaseRead(c, k, session)
			return err
		})
		if err != nil {
			return 0, err
		}
	}
	if !found {
		return 0, notHeld(k)
	}
	if !valid {
		return 0, fmt.Errorf("%w: the lock on %s %s had expired", ErrNotLocked, k.Resource, k.ID)
	}
	return held, nil
}

func (t *sqlStore) releaseRead(c Conn, k Key, session string) (found, valid bool, held time.Duration, err error) {
	_, now, err := t.lockKeys(c, []Key{k})
	if err != nil {
		return false, false, 0, err
	}
	readers, err := t.readersOf(c, []Key{k})
	if err != nil {
		return false, false, 0, err
	}
	others := 0
	for _, r := range readers[k] {
		switch {
		case r.Owner.Session == session:
			found, valid, held = true, r.live(now), now.Sub(r.AcquiredAt)
		case r.live(now):
			others++
		}
	}
	if !found {
		return false, false, 0, nil
	}
	if others == 0 { // the last reader leaves: the record is free
		_, err = t.deleteKey(c, k)
	} else {
		_, err = t.deleteReaders(c, k, session)
	}
	return found, valid, held, err
}

func notHeld(k Key) error {
	return fmt.Errorf("%w: %s %s", ErrNotLocked, k.Resource, k.ID)
}

// ForceRelease removes every lock on k once allow approved its live
// holders.
func (t *sqlStore) ForceRelease(c Conn, k Key, allow func(now time.Time, held []Lock) error) error {
	c = t.observed(c)
	return t.inTx(c, func(c Conn) error {
		krs, now, err := t.lockKeys(c, []Key{k})
		if err != nil {
			return err
		}
		var held []Lock
		if kr := krs[k]; kr.Access == Write && kr.live(now) {
			held = []Lock{kr.Lock}
		} else {
			readers, err := t.readersOf(c, []Key{k})
			if err != nil {
				return err
			}
			for _, r := range readers[k] {
				if r.live(now) {
					held = append(held, r.Lock)
				}
			}
		}
		if len(held) == 0 {
			return notHeld(k)
		}
		for i := range held {
			held[i].Token = ""
		}
		if err := allow(now, held); err != nil {
			return err
		}
		_, err = t.deleteKey(c, k)
		return err
	})
}

// Shorten cuts session's Write lock on k to end at now+ttl (to the
// millisecond) when that is sooner than its expiry.
func (t *sqlStore) Shorten(c Conn, k Key, session string, ttl time.Duration) (Lock, time.Time, error) {
	c = t.observed(c)
	var out Lock
	var now time.Time
	err := t.inTx(c, func(c Conn) error {
		krs, n, err := t.lockKeys(c, []Key{k})
		if err != nil {
			return err
		}
		kr := krs[k]
		if kr.Access != Write || kr.Owner.Session != session || !kr.live(n) {
			return notHeld(k)
		}
		if until := n.Add(ttl).Truncate(time.Millisecond); until.Before(kr.ExpiresAt) {
			q := `UPDATE ` + t.table + t.fromHint + ` SET expires_at = ? WHERE resource = ? AND lock_id = ? AND holder = '' AND access = 'write' AND ` + t.eq("session")
			if _, err := c.Exec(t.bind(q), t.timeArg(until), k.Resource, k.ID, session); err != nil {
				return err
			}
			kr.ExpiresAt = until
		}
		kr.Token = ""
		out, now = kr.Lock, n
		return nil
	})
	return out, now, err
}

// ByToken returns the live lock whose token is token, found by its hash
// through the token index, without its token.
func (t *sqlStore) ByToken(c Conn, token string) (*Lock, error) {
	c = t.observed(c)
	var found *Lock
	hash := tokenHash(token)
	_, err := c.Query(t.bind(`SELECT `+lockColumns+` FROM `+t.table+
		` WHERE token = ? AND expires_at > `+t.clock+` AND `+isLockRow+` ORDER BY resource, lock_id`),
		[]any{hash}, func(r *sql.Rows) error {
			rw, err := scanRow(r)
			if err == nil && found == nil && rw.Token == hash {
				rw.Token = ""
				found = &rw.Lock
			}
			return err
		})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("%w: no live lock has this token", ErrNotLocked)
	}
	return found, nil
}

// Drop deletes session's locks on keys, by plain DELETE: for databases
// that serialise writers. PostgreSQL takes the key rows first (its own).
func (t *sqlStore) Drop(c Conn, keys []Key, session string) error {
	c = t.observed(c)
	for _, batch := range chunks(sortKeys(keys)) {
		list, args := keyList(batch)
		q := t.deleting() + ` WHERE ` + t.inKeys(list) + ` AND ` + t.eq("session")
		if _, err := c.Exec(t.bind(q), append(args, session)...); err != nil {
			return err
		}
	}
	return nil
}

// Tokens are 128 bits from crypto/rand, as 32 hex digits.
const tokenLen = 32

var errGenerationCounter = errors.New("offlinelock: generation counter missing; was the plugin initialised with db.Use?")

// liveByResource counts the live locks (Write locks and readers, not the
// key rows of read locks) per resource: the live-locks gauge.
func (t *sqlStore) LiveByResource(c Conn) (map[string]int64, error) {
	c = t.observed(c)
	out := map[string]int64{}
	_, err := c.Query(`SELECT resource, COUNT(*) FROM `+t.table+` WHERE expires_at > `+t.clock+
		` AND ((holder = '' AND access = 'write') OR holder <> '') GROUP BY resource`, nil, func(r *sql.Rows) error {
		var resource string
		var n int64
		err := r.Scan(&resource, &n)
		out[resource] = n
		return err
	})
	return out, err
}
