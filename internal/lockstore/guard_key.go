package lockstore

import (
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
)

// The guard's key: 32 random bytes (hex) per lock table, in its catalog,
// made by the first install. Writing past the guard needs it, so only a
// role that reads the catalog can claim a session or a fence's proof.
// Never printed, logged or traced. PostgreSQL signs claims in the
// plugin's statement (postgresSetIdentity); MySQL keys the mark
// (sessionMark) and the routines carry the key in their bodies.
const guardKeyName = guardRowPrefix + "guard key"

// guardRowPrefix begins the name of every catalog row of the guard's own.
const guardRowPrefix = "offlinelock:"

// newGuardKey is a fresh key from crypto/rand.
func newGuardKey() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// GuardKey reads the lock table's guard key: "" before the first install.
func (t *sqlStore) GuardKey(c Conn) (string, error) {
	if c.plan != nil && (c.plan.key != "" || c.plan.fresh) {
		return c.plan.key, nil // made by the plan, not written; or no catalog yet
	}
	c = t.observed(c)
	var key string
	_, err := c.Query(t.bind(`SELECT spec FROM `+t.catalog+` WHERE name = ?`), []any{guardKeyName}, func(r *sql.Rows) error { return r.Scan(&key) })
	return key, err
}

// guardKeyIn reads the guard key, making it first if there is none (insert
// ignores another node's row; ? for name and key).
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

// proofKey is the triggers' key (MySQL), derived so that a trigger body
// gives away no session's mark.
func proofKey(key string) string {
	h := sha256.Sum256([]byte("offlinelock proof\x00" + key))
	return hex.EncodeToString(h[:])
}
