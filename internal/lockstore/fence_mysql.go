package lockstore

import (
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

// fenceSQLState is the SQLSTATE of the fence function's refusal.
const fenceSQLState = "OL428"

func (s *mysqlStore) fenceName() string { return s.guardPrefix() + "_fence" }

func (s *mysqlStore) fenceBody() string {
	return `(res VARBINARY(512), id VARBINARY(1020), me VARBINARY(1020), or_free TINYINT) RETURNS TINYINT
COMMENT '{version}'
NOT DETERMINISTIC READS SQL DATA
BEGIN
	DECLARE a VARCHAR(5) DEFAULT NULL;
	DECLARE s VARBINARY(1020);
	DECLARE until DATETIME(6);
	DECLARE other TINYINT DEFAULT 0;
	DECLARE CONTINUE HANDLER FOR NOT FOUND SET a = NULL;
	SELECT access, session, expires_at INTO a, s, until FROM ` + s.table + mysqlPK + `
		WHERE resource = res AND lock_id = id AND holder = ''` + mysqlShare + `;
	IF a = 'write' AND s = me AND until > ` + mysqlClock + ` THEN
		RETURN 1;
	END IF;
	IF or_free AND (a IS NULL OR a = '' OR a = 'write' AND until <= ` + mysqlClock + `) THEN
		RETURN 1;
	END IF;
	IF or_free AND a = 'read' THEN
		SELECT 1 INTO other FROM ` + s.table + mysqlPK + `
			WHERE resource = res AND lock_id = id AND holder <> '' AND expires_at > ` + mysqlClock + ` AND session <> me LIMIT 1` + mysqlShare + `;
		IF other = 0 THEN
			RETURN 1;
		END IF;
	END IF;
	SIGNAL SQLSTATE '` + fenceSQLState + `' SET MESSAGE_TEXT = 'offlinelock: the writer holds no valid Write lock on the record';
END`
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
