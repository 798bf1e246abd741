package offlinelock

import (
	"database/sql"
	"slices"
	"strings"
	"time"
)

// batchSize bounds the keys per statement: a load of many rows locks them
// in a number of statements that grows with rows/batchSize, not with rows.
const batchSize = 400

// sortKeys orders keys by resource, then id, and drops duplicates. Every
// batch takes its key rows in this order, so two batches never wait on each
// other in opposite orders.
func sortKeys(keys []key) []key {
	keys = slices.Clone(keys)
	slices.SortFunc(keys, func(a, b key) int {
		if c := strings.Compare(a.resource, b.resource); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	return slices.Compact(keys)
}

func chunks(keys []key) [][]key {
	var out [][]key
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
func keyList(keys []key) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, 2*len(keys))
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?)")
		args = append(args, k.resource, k.id)
	}
	return b.String(), args
}

// fastWriteMany grants or refreshes Write locks on keys in one statement
// where each key is free, expired, or already written by the session (see
// fastWrite). It returns the locks it got; the other keys need decideMany.
// PostgreSQL only.
func (t *lockTable) fastWriteMany(c conn, keys []key, o Owner, ttl time.Duration) (map[key]Lock, map[key]string, error) {
	resources, ids, tokens := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		tok, err := newToken()
		if err != nil {
			return nil, nil, err
		}
		resources[i], ids[i], tokens[i] = k.resource, k.id, tok
	}
	sent := make(map[key]string, len(keys))
	for i, k := range keys {
		sent[k] = tokens[i]
	}
	q := `INSERT INTO ` + t.table + ` AS l (` + lockColumns + `)
SELECT k.resource, k.lock_id, '', 'write', $4, $5, k.token, nextval('` + unquote(t.seq) + `'), clock_timestamp(), clock_timestamp() + $6 * interval '1 microsecond'
FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS k(resource, lock_id, token, ord) ORDER BY k.ord
ON CONFLICT (resource, lock_id, holder) DO UPDATE SET ` + writeRefresh + `
WHERE ` + writeGrantable + `
RETURNING ` + lockColumns
	got := make(map[key]Lock, len(keys))
	_, err := c.query(q, []any{resources, ids, tokens, o.Session, o.User, ttl.Microseconds()}, func(r *sql.Rows) error {
		rw, err := scanRow(r)
		got[key{rw.Resource, rw.ID}] = rw.Lock
		return err
	})
	return got, sent, err
}

// writeRefresh and writeGrantable are the ON CONFLICT part of every
// one-statement Write acquire: a free key, an expired one, or one the same
// session writes is granted; re-acquiring keeps token, generation and
// acquisition time and never shortens the expiry.
const (
	writeSame    = `l.access = 'write' AND l.session = EXCLUDED.session AND l.expires_at > clock_timestamp()`
	writeRefresh = `
	token       = CASE WHEN ` + writeSame + ` THEN l.token ELSE EXCLUDED.token END,
	generation  = CASE WHEN ` + writeSame + ` THEN l.generation ELSE EXCLUDED.generation END,
	acquired_at = CASE WHEN ` + writeSame + ` THEN l.acquired_at ELSE EXCLUDED.acquired_at END,
	access = 'write', session = EXCLUDED.session, user_name = EXCLUDED.user_name,
	expires_at = GREATEST(EXCLUDED.expires_at, CASE WHEN l.access = 'write' AND l.session = EXCLUDED.session THEN l.expires_at END)`
	writeGrantable = `l.access = '' OR (l.access = 'write' AND (l.session = EXCLUDED.session OR l.expires_at <= clock_timestamp()))`
)

// dropSessionKeys deletes the session's locks on keys, Write or Read.
func (t *lockTable) dropSessionKeys(c conn, keys []key, session string) error {
	for _, batch := range chunks(sortKeys(keys)) {
		list, args := keyList(batch)
		q := `DELETE FROM ` + t.table + ` WHERE (resource, lock_id) IN (VALUES ` + list + `) AND session = ?`
		if t.d.dollar {
			q = `WITH keys AS (SELECT resource, lock_id FROM ` + t.table + ` WHERE holder = '' AND (resource, lock_id) IN (VALUES ` + list +
				`) ORDER BY resource, lock_id FOR UPDATE) DELETE FROM ` + t.table + ` WHERE (resource, lock_id) IN (SELECT resource, lock_id FROM keys) AND session = ?`
		}
		if _, err := c.exec(t.d.bind(q), append(args, session)...); err != nil {
			return err
		}
	}
	return nil
}

// lockKeys takes the key rows of keys for the rest of the transaction,
// creating free ones where there are none, and returns them with the
// database's clock.
func (t *lockTable) lockKeys(c conn, keys []key) (map[key]row, time.Time, error) {
	var b strings.Builder
	args := make([]any, 0, 2*len(keys))
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`(?, ?, '', '', '', '', '', 0, ` + t.d.now + `, ` + t.d.now + `)`)
		args = append(args, k.resource, k.id)
	}
	q := t.d.bind(`INSERT INTO ` + t.table + ` (` + lockColumns + `) VALUES ` + b.String() + `
ON CONFLICT (resource, lock_id, holder) DO UPDATE SET holder = excluded.holder
RETURNING ` + lockColumns + `, ` + t.d.now)
	return queryKeyRows(c, q, args)
}

// queryKeyRows runs a query that returns key rows followed by the database
// clock, and returns them by key with the latest clock reading.
func queryKeyRows(c conn, q string, args []any) (map[key]row, time.Time, error) {
	rows := map[key]row{}
	var now time.Time
	_, err := c.query(q, args, func(r *sql.Rows) error {
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
		rows[key{kr.Resource, kr.ID}] = kr
		return err
	})
	return rows, now, err
}

// readersOf returns the reader rows of keys, live or not.
func (t *lockTable) readersOf(c conn, keys []key) (map[key][]row, error) {
	out := make(map[key][]row)
	if len(keys) == 0 {
		return out, nil
	}
	list, args := keyList(keys)
	_, err := c.query(t.d.bind(`SELECT `+lockColumns+` FROM `+t.table+` WHERE holder <> '' AND (resource, lock_id) IN (VALUES `+list+`) ORDER BY resource, lock_id, holder`),
		args, func(r *sql.Rows) error {
			rw, err := scanRow(r)
			k := key{rw.Resource, rw.ID}
			out[k] = append(out[k], rw)
			return err
		})
	return out, err
}

// nextGenerations returns n fresh generation numbers.
func (t *lockTable) nextGenerations(c conn, n int) ([]int64, error) {
	if n == 0 {
		return nil, nil
	}
	gens := make([]int64, 0, n)
	var err error
	if t.d.dollar {
		_, err = c.query(`SELECT nextval('`+unquote(t.seq)+`') FROM generate_series(1, $1)`, []any{n}, func(r *sql.Rows) error {
			var g int64
			err := r.Scan(&g)
			gens = append(gens, g)
			return err
		})
	} else {
		var last int64
		_, err = c.query(`UPDATE `+t.seq+` SET n = n + ? WHERE id = 1 RETURNING n`, []any{n}, func(r *sql.Rows) error { return r.Scan(&last) })
		for g := last - int64(n) + 1; g <= last; g++ {
			gens = append(gens, g)
		}
	}
	if err == nil && len(gens) != n {
		err = errGenerationCounter
	}
	return gens, err
}

// putRows writes key rows and reader rows, inserting or overwriting.
func (t *lockTable) putRows(c conn, rows []row) error {
	if len(rows) == 0 {
		return nil
	}
	var b strings.Builder
	args := make([]any, 0, 10*len(rows))
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
		args = append(args, r.Resource, r.ID, r.holder, string(r.Access), r.Owner.Session, r.Owner.User, r.Token, r.Generation,
			t.d.timeArg(r.AcquiredAt), t.d.timeArg(r.ExpiresAt))
	}
	_, err := c.exec(t.d.bind(`INSERT INTO `+t.table+` (`+lockColumns+`) VALUES `+b.String()+`
ON CONFLICT (resource, lock_id, holder) DO UPDATE SET access = excluded.access, session = excluded.session,
	user_name = excluded.user_name, token = excluded.token, generation = excluded.generation,
	acquired_at = excluded.acquired_at, expires_at = excluded.expires_at`), args...)
	return err
}

// dropReaders deletes the reader rows of keys: all of them, or (with a
// non-zero before) only those expired by then.
func (t *lockTable) dropReaders(c conn, keys []key, before time.Time) error {
	if len(keys) == 0 {
		return nil
	}
	list, args := keyList(keys)
	q := `DELETE FROM ` + t.table + ` WHERE holder <> '' AND (resource, lock_id) IN (VALUES ` + list + `)`
	if !before.IsZero() {
		q += ` AND expires_at <= ?`
		args = append(args, t.d.timeArg(before))
	}
	_, err := c.exec(t.d.bind(q), args...)
	return err
}

// decideMany grants, refreshes or refuses locks on sorted keys with their
// key rows held, so that it sees every holder exactly, in a fixed number of
// statements. It refuses all or nothing: on the first key held by someone
// else it returns that key's *LockedError and writes no lock.
// It also reports, per lock, whether it was newly granted.
func (t *lockTable) decideMany(c conn, keys []key, o Owner, access Access, ttl time.Duration) ([]Lock, []bool, error) {
	krs, now, err := t.lockKeys(c, keys)
	if err != nil {
		return nil, nil, err
	}
	exp := now.Add(ttl)
	type plan struct {
		k                    key
		lock                 Lock
		keyRow               *row // the key row to write
		newGen               bool
		dropAll, dropExpired bool
	}
	var plans []plan
	var readKeys []key
	for _, k := range keys {
		if kr := krs[k]; !(kr.Access == Write && kr.live(now)) {
			readKeys = append(readKeys, k)
		}
	}
	readers, err := t.readersOf(c, readKeys)
	if err != nil {
		return nil, nil, err
	}
	fresh := 0
	for _, k := range keys {
		kr := krs[k]
		if kr.Access == Write && kr.live(now) {
			if kr.Owner.Session != o.Session {
				return nil, nil, refused(k, access, []Lock{kr.Lock})
			}
			l := kr.Lock // a writer asking for Read keeps its Write lock
			l.Owner.User = o.User
			l.ExpiresAt = later(l.ExpiresAt, exp)
			plans = append(plans, plan{k: k, lock: l, keyRow: &row{Lock: l}})
			continue
		}
		var own *Lock
		var others []Lock
		expired := false
		for _, r := range readers[k] {
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
			return nil, nil, refused(k, access, others)
		}
		pl := plan{k: k, lock: Lock{Resource: k.resource, ID: k.id, Access: access, Owner: o, AcquiredAt: now, ExpiresAt: exp}}
		if own != nil && access == Read {
			pl.lock.Token, pl.lock.Generation, pl.lock.AcquiredAt = own.Token, own.Generation, own.AcquiredAt
			pl.lock.ExpiresAt = later(own.ExpiresAt, exp)
		} else {
			if own != nil { // an upgrade keeps the token its client already has
				pl.lock.Token = own.Token
			} else if pl.lock.Token, err = newToken(); err != nil {
				return nil, nil, err
			}
			pl.newGen = true
			fresh++
		}
		if access == Write {
			pl.keyRow = &row{Lock: pl.lock}
			pl.dropAll = len(readers[k]) > 0
		} else {
			keyExp := pl.lock.ExpiresAt
			for _, r := range others {
				keyExp = later(keyExp, r.ExpiresAt)
			}
			pl.keyRow = &row{Lock: Lock{Resource: k.resource, ID: k.id, Access: Read, AcquiredAt: now, ExpiresAt: keyExp}}
			pl.dropExpired = expired
		}
		plans = append(plans, pl)
	}

	gens, err := t.nextGenerations(c, fresh)
	if err != nil {
		return nil, nil, err
	}
	var dropAll, dropExpired []key
	var puts []row
	out := make([]Lock, 0, len(plans))
	newly := make([]bool, 0, len(plans))
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
		out = append(out, pl.lock)
		newly = append(newly, pl.newGen)
	}
	if err := t.dropReaders(c, dropAll, time.Time{}); err != nil {
		return nil, nil, err
	}
	if err := t.dropReaders(c, dropExpired, now); err != nil {
		return nil, nil, err
	}
	return out, newly, t.putRows(c, puts)
}
