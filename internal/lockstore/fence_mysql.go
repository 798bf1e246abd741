package lockstore

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"strings"

	"gorm.io/gorm/clause"
)

// The fence function (docs/guard.md), called in the write's WHERE:
//
//	UPDATE docs SET … WHERE id = 7 AND `ol…_fence`('docs', '7', 'M1')
//
// It share-locks the record's key row and returns 1 while the session
// holds it (or, with or_free, no other session does), else SIGNALs
// fenceSQLState: MySQL's 0 rows affected cannot tell a lost lock from an
// unchanged row. A missing function fails the write too (1305).

// Certifies is Certifier's: the store is on a Galera node (galera.go),
// where the fence writes the key rows it checked.
func (s *mysqlStore) Certifies() bool { return s.galera.Load() }

// fenceSQLState is the SQLSTATE of the fence function's refusal.
const fenceSQLState = "OL428"

func (s *mysqlStore) fenceName() string { return s.guardPrefix() + "_fence" }

func (s *mysqlStore) fenceBody(key string) string {
	return `(res VARBINARY(512), id VARBINARY(1020), me VARBINARY(1020), or_free TINYINT) RETURNS TINYINT
COMMENT '{version}'
NOT DETERMINISTIC READS SQL DATA
BEGIN
	DECLARE a VARCHAR(5) DEFAULT NULL;
	DECLARE s VARBINARY(1020);
	DECLARE until DATETIME(6);
	DECLARE other TINYINT DEFAULT 0;
	DECLARE ok BOOL DEFAULT FALSE;
	` + mysqlGuardClockDecl + `
	DECLARE CONTINUE HANDLER FOR NOT FOUND SET a = NULL;
	` + mysqlGuardClockSet + `
	SELECT access, session, expires_at INTO a, s, until FROM ` + s.table + mysqlPK + `
		WHERE resource = res AND lock_id = id AND holder = ''` + mysqlShare + `;
	IF a = 'write' AND s = me AND until > clock THEN
		SET ok = TRUE;
	ELSEIF or_free AND (a IS NULL OR a = '' OR a = 'write' AND until <= clock) THEN
		SET ok = TRUE;
	ELSEIF or_free AND a = 'read' THEN
		SELECT 1 INTO other FROM ` + s.table + mysqlPK + `
			WHERE resource = res AND lock_id = id AND holder <> '' AND expires_at > clock AND session <> me LIMIT 1` + mysqlShare + `;
		SET ok = other = 0;
	END IF;
	IF ok THEN
		IF @@session.sql_select_limit = ` + fencedBlank(key) + ` THEN
			SET SESSION sql_select_limit = ` + s.proofOf(proofKey(key), "res", "id") + `;
		END IF;
		RETURN 1;
	END IF;
	SIGNAL SQLSTATE '` + fenceSQLState + `' SET MESSAGE_TEXT = 'offlinelock: the writer holds no valid Write lock on the record';
END`
}

// fencedBlank is the keyed sql_select_limit a fenced write carries; the
// fence function overwrites it with proofOf(record), for that statement
// alone, and the triggers skip a proved record (docs/guard.md, "The fence
// function's proof"). 2^63 plus 60 bits of SHA-256 of the key, shifted
// once (even: never a proof).
func fencedBlank(key string) string {
	h := sha256.Sum256([]byte("offlinelock fenced\x00" + key))
	return strconv.FormatUint(binary.BigEndian.Uint64(h[:8])>>4<<1|1<<63, 10)
}

// proofOf is the proof of record (res, id), as SQL: 2^63 + 60 bits of
// SHA-256(proof key, lock table NUL res NUL id) shifted left once, + 1.
// The lock table is in it: several lock tables may guard one table.
func (s *mysqlStore) proofOf(pk, res, id string) string {
	return "(CONV(LEFT(SHA2(CONCAT(" + sqlLiteral(pk) + ", " + sqlLiteral(s.lockName()) + ", 0x00, " + res + ", 0x00, " + id + "), 256), 15), 16, 10) << 1 | 9223372036854775809)"
}

// unproved: the statement holds no proof of record (res, id); the first
// test spares writes without a proof the hash.
func (s *mysqlStore) unproved(pk, res, id string) string {
	return "(@@session.sql_select_limit >> 62 <> 2 OR NOT (@@session.sql_select_limit <=> " + s.proofOf(pk, res, id) + "))"
}

// FenceCall: the fence function's call for a write of k by session, once
// InstallGuardRoutine installed it.
func (s *mysqlStore) FenceCall(k Key, session string, orFree bool) (clause.Expression, bool) {
	if !s.fenceFn.Load() {
		return nil, false
	}
	free := 0
	if orFree {
		free = 1
	}
	return clause.Expr{SQL: s.fenceCallSQL, Vars: []any{k.Resource, k.ID, session, free}}, true
}

// FenceRefused: err is the fence function's refusal. A missing function
// (1305) is not: the write fails, and folding stops until a reinstall.
func (s *mysqlStore) FenceRefused(err error) bool {
	me, ok := mysqlErrorOf(err)
	switch {
	case !ok:
		return false
	case me.sqlState == fenceSQLState:
		return true
	case me.number == 1305 && strings.Contains(me.message, s.fenceName()):
		s.fenceFn.Store(false) // the write fails as it is, closed
	}
	return false
}
