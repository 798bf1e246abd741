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
// returns 1 while the session holds a valid Write lock on it; otherwise it
// SIGNALs fenceSQLState, and the write fails, having changed nothing.
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
	return `(res VARBINARY(512), id VARBINARY(1020), me VARBINARY(1020)) RETURNS TINYINT
COMMENT '{version}'
NOT DETERMINISTIC READS SQL DATA
BEGIN
	DECLARE held TINYINT DEFAULT 0;
	DECLARE CONTINUE HANDLER FOR NOT FOUND SET held = 0;
	SELECT 1 INTO held FROM ` + s.table + mysqlPK + `
		WHERE resource = res AND lock_id = id AND holder = '' AND access = 'write' AND session = me AND expires_at > ` + mysqlClock + mysqlShare + `;
	IF held = 0 THEN
		SIGNAL SQLSTATE '` + fenceSQLState + `' SET MESSAGE_TEXT = 'offlinelock: the writer holds no valid Write lock on the record';
	END IF;
	RETURN 1;
END`
}

// FenceCall: the fence function's call for a write of k by session, once
// InstallGuardRoutine installed it.
func (s *mysqlStore) FenceCall(k Key, session string) (clause.Expression, bool) {
	if !s.fenceFn.Load() {
		return nil, false
	}
	return clause.Expr{SQL: s.fenceCallSQL, Vars: []any{k.Resource, k.ID, session}}, true
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
