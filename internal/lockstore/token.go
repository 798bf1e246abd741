package lockstore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// The lock table holds only tokens' hashes (docs/lock-table.md): a token is
// a bearer credential. SHA-256 of its text, unsalted: it is 128 random
// bits, and SQL can compute the same hash to migrate older tables.

// hashLen is the length of tokenHash's result: SHA-256 as hex.
const hashLen = 2 * sha256.Size

// tokenHash is what the lock table holds for token.
func tokenHash(token string) string {
	d := sha256.Sum256([]byte(token)) // tokenDigest
	return hex.EncodeToString(d[:])
}

// tokenDigest is tokenHash as bytes, for a statement that hex-encodes it
// itself (a value GORM's own log shows as <binary>).
func tokenDigest(token string) []byte {
	d := sha256.Sum256([]byte(token))
	return d[:]
}

// legacyToken: v is a token an older version stored in clear (32 hex digits).
func legacyToken(v string) bool {
	return len(v) == tokenLen && isHex(v)
}

// TokenHash is the hash of token the lock table keeps instead of it.
func TokenHash(token string) string { return tokenHash(token) }

// WellFormedToken says whether token is spelt as NewToken spells tokens.
func WellFormedToken(token string) bool { return len(token) == tokenLen && isHex(token) }

// NewToken is a new lock token: 128 bits from crypto/rand, in hex.
func NewToken() (string, error) {
	var b [tokenLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("offlinelock: reading random token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
