package lockstore

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"strings"

	"gorm.io/gorm/clause"
)

// The fence in the write's own statement on MySQL/MariaDB: a function the
// guard installs beside its procedure, called in the write's WHERE:
//
//	UPDATE docs SET … WHERE id = 7 AND `ol…_fence`('docs', '7', 'M1')
//
// It reads the record's key row LOCK IN SHARE MODE (a locking read
// whatever the transaction's isolation level, held until it ends) and
// returns 1 while the session holds a valid Write lock on it, or, asked
// with or_free for a row the write may create, while no other session
// holds a live lock on it; otherwise it SIGNALs fenceSQLState, and the
// write fails, having changed nothing.
//
// Why a function that refuses, where PostgreSQL's fold is a condition
// that matches no row: MySQL reports a row that a write leaves as it was
// as 0 rows affected (without CLIENT_FOUND_ROWS), so 0 rows cannot tell a
// lost lock from an unchanged row without another statement; an error
// can. And a function that is missing (a guard removed behind the
// plugin's back) fails the write too (1305): the fold fails closed.

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

// The fence's proof: a fenced write's statement carries sql_select_limit
// = fencedBlank in its SET STATEMENT (mariadbIdentityPrefix), and the fence
// function, once it has share-locked the record's key row and found it the
// writer's (or, or_free, no other session's), overwrites the blank with
// proofOf(record). The server puts sql_select_limit back when the
// statement ends, so the proof lasts for that statement alone, and the
// function writes none where it sees no blank (MySQL 8.0's SET_VAR, a
// statement sent by hand), since nothing would put it back. The guard's
// triggers skip their procedure for a row whose record is the proof's:
// what the procedure would check, the function has checked, and the row
// lock it took holds it until the transaction ends. Any other row, and
// every write without a proof, is checked as before. Every value is at or
// above 2^63, so no row limit the variable could set is ever reached.
//
// Like the session's mark, a proof is keyed (guard_key.go): a client that
// cannot read the guard's key cannot write one by hand.
//
// The blank is keyed too, and is what tells the guard's procedure that
// the plugin fences the write itself (it then reads the key row without a
// lock: fence.go holds no key row across a save's hooks): 2^63 plus 60
// bits of SHA-256 of the key, shifted once (even: never a proof). A client
// without the key cannot send it, so it cannot choose the read without a
// lock, which an old REPEATABLE READ snapshot would pass.
func fencedBlank(key string) string {
	h := sha256.Sum256([]byte("offlinelock fenced\x00" + key))
	return strconv.FormatUint(binary.BigEndian.Uint64(h[:8])>>4<<1|1<<63, 10)
}

// proofOf is the proof of the record (res, id) in this store's lock table,
// as SQL: 2^63, plus 60 bits of SHA-256(proof key, lock table NUL res NUL
// id) shifted left once, plus 1. The proof key (guard_key.go) makes it
// something only the guard's own routines can compute. The lock table is
// part of it because several lock tables can guard one table side by
// side (docs/guard.md): a record one lock table's fence proved may be
// another session's in the other, whose triggers must still call their
// procedure.
func (s *mysqlStore) proofOf(pk, res, id string) string {
	return "(CONV(LEFT(SHA2(CONCAT(" + sqlLiteral(pk) + ", " + sqlLiteral(s.lockName()) + ", 0x00, " + res + ", 0x00, " + id + "), 256), 15), 16, 10) << 1 | 9223372036854775809)"
}

// unproved is the trigger's condition for calling the guard's procedure
// on the record (res, id): the statement holds no proof of it. The first
// test spares writes that carry no proof the hash.
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

// FenceRefused: err is the fence function's refusal. An error saying the
// function is gone (1305: the guard was removed by another process) is
// not, and fails the write as it is; the store then stops folding the
// fence until the guard is installed again.
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
