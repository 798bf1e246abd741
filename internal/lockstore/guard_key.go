package lockstore

import (
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
)

// The guard's key: 32 random bytes (hex), one per lock table, kept in its
// catalog under guardKeyName and made by the first install. The holder's
// right to write past the guard is keyed on it, so that only a role that
// may read the catalog (the application's, the owner's) can claim a
// session or a fence's proof; a client with DML on the business tables
// alone can compute neither from the public values they are made of
// (session ids, table names, keys). Never printed, logged or traced.
//
//   - PostgreSQL: the plugin's set_config carries the claim followed by
//     '/' and hex(SHA-256(key || claim)), computed inside the plugin's own
//     statement from the catalog (postgresSetIdentity); the guard's
//     functions, running as their owner, read the key and check it.
//   - MySQL/MariaDB: a statement's mark is keyed (sessionMark), computed by
//     the plugin from the key it read at db.Use; the guard's routines and
//     triggers carry the key (the procedure and fence function) or a key
//     derived from it (the triggers' proof check) in their bodies, which a
//     user without privileges on them cannot read.
const guardKeyName = guardRowPrefix + "guard key"

// guardRowPrefix begins the name of every catalog row of the guard's own.
const guardRowPrefix = "offlinelock:"

// newGuardKey is a fresh key from crypto/rand.
func newGuardKey() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// GuardKey reads the lock table's guard key from its catalog: "" before
// the first install.
func (t *sqlStore) GuardKey(c Conn) (string, error) {
	if c.plan != nil && (c.plan.key != "" || c.plan.fresh) {
		return c.plan.key, nil // made by the plan, not written; or no catalog yet
	}
	c = t.observed(c)
	var key string
	_, err := c.Query(t.bind(`SELECT spec FROM `+t.catalog+` WHERE name = ?`), []any{guardKeyName}, func(r *sql.Rows) error { return r.Scan(&key) })
	return key, err
}

// guardKeyIn reads the guard key of the catalog named catalog, making it
// first if there is none (insert is the dialect's INSERT that ignores a
// row another node made meanwhile, with the catalog and ? for name and
// key).
func (t *sqlStore) guardKeyIn(c Conn, insert string) (string, error) {
	key, err := t.GuardKey(c)
	if err != nil || key != "" {
		return key, err
	}
	made := newGuardKey()
	if _, err := c.Exec(t.bind(insert), guardKeyName, made); err != nil {
		return "", err
	}
	if c.plan != nil {
		c.plan.key = made
	}
	return t.GuardKey(c)
}

// proofKey is the key the triggers' proof check carries (MySQL): derived
// from the guard key, so that a trigger body read by a user with TRIGGER
// on one table gives away no session's mark.
func proofKey(key string) string {
	h := sha256.Sum256([]byte("offlinelock proof\x00" + key))
	return hex.EncodeToString(h[:])
}
