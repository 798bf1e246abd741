package lockstore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// The lock table never holds a token, only its hash: a token is a bearer
// credential (whoever has it writes and unlocks), and a read of the table,
// a backup of it or a log of its rows must give nobody a usable one. Every
// statement sends tokenHash(token) where it writes or looks up a token, and
// LockByToken hashes what it is given, so the hash read from the table is
// not itself a token (it is refused as one).
//
// SHA-256 with no salt and no slow hash: a token is 128 bits from
// crypto/rand, so there is nothing to guess and no dictionary to precompute.
// The hash is of the token's text (its 32 hex digits), which SQL can
// compute too: the migration of rows written by older versions, which hold
// the token itself, does it in SQL where the database can (tokenMigration).

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

// legacyToken says whether a token column value was written by a version
// that stored tokens themselves: 32 hex digits, where a hash has 64 and a
// row without a token none.
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
