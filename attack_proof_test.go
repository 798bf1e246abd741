package offlinelock_test

// Attacks on the MariaDB fence function's proof (fence_mysql.go: the
// fence overwrites SET STATEMENT's sql_select_limit blank with a proof of
// the record it checked, and the guard's triggers skip their procedure for
// that record).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// TestMySQLProofIsOneGuardsOnly: several lock tables can guard one table
// side by side (docs/guard.md), each with its own triggers and fence
// function. A fence of one lock table proves the record in that lock table
// only: the other guard's triggers must still call their procedure, which
// refuses a record another session holds in the other lock table.
func TestMySQLProofIsOneGuardsOnly(t *testing.T) { pfOneGuardsOnly(t, database{"mysql", openMySQL}) }

// TestGuardProofIsOneGuardsOnly: the same on PostgreSQL, whose fence
// leaves its proof in offlinelock.proof.
func TestGuardProofIsOneGuardsOnly(t *testing.T) {
	pfOneGuardsOnly(t, database{"postgres", openPostgres})
}

func pfOneGuardsOnly(t *testing.T, d database) {
	db, _ := gdSetup(t, d, offlinelock.Config{}) // martin holds customer 129 in the first lock table
	cfg2 := offlinelock.Config{Table: "ol_" + randomHex(6), Models: []any{&GdCustomer{}},
		Authorize: func(context.Context, string, offlinelock.Lock) error { return nil }, Logger: slog.New(slog.DiscardHandler)}
	db2, p2 := setupOn(t, d.open(t), cfg2)
	require.NoError(t, p2.InstallGuard(db2))
	_, err := p2.Acquire(as(db2, david), &GdCustomer{ID: 129}, offlinelock.Write) // and david in the second
	require.NoError(t, err)

	// Control: martin's unfolded write (a raw Exec: his mark, no fence) is
	// refused by the second guard.
	err = as(db, martin).Transaction(func(tx *gorm.DB) error { return tx.Exec(`UPDATE gd_customers SET credit = 1 WHERE id = 129`).Error })
	require.Error(t, err, "the second guard lets martin's raw write through: the test proves nothing")

	// martin's folded Save: the first lock table's fence proves 129.
	err = as(db, martin).Transaction(func(tx *gorm.DB) error {
		return tx.Save(&GdCustomer{ID: 129, Name: "Acme", Credit: 555}).Error
	})
	assert.Error(t, err, "martin's folded save of a record david holds in the second lock table")
	var got GdCustomer
	require.NoError(t, plainGORM(t, db).First(&got, 129).Error)
	assert.Equal(t, 100, got.Credit, "the second guard's record was written past its guard")
}

// pfRecorder is a GORM logger that keeps the SQL of every statement.
type pfRecorder struct {
	logger.Interface
	mu   sync.Mutex
	sqls []string
}

func (r *pfRecorder) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	sql, _ := fc()
	r.mu.Lock()
	r.sqls = append(r.sqls, sql)
	r.mu.Unlock()
}

// fenced: the statements recorded that carry the blank and call the fence.
func (r *pfRecorder) fenced() (n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sqls {
		if strings.Contains(s, "sql_select_limit=") && strings.Contains(s, "_fence`(") {
			n++
		}
	}
	return n
}

func pfRecorded(db *gorm.DB) (*gorm.DB, *pfRecorder) {
	r := &pfRecorder{Interface: logger.Discard}
	return db.Session(&gorm.Session{Logger: r}), r
}

// pfFence is the name of the fence function of the guard db's plugin installed.
func pfFence(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) string {
	t.Helper()
	var fence []string
	require.NoError(t, db.Raw(`SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE()
		AND ROUTINE_TYPE = 'FUNCTION' AND ROUTINE_NAME LIKE ? AND ROUTINE_DEFINITION LIKE ?`, "ol%_fence", "%`"+p.TableName()+"`%").Scan(&fence).Error)
	require.Len(t, fence, 1)
	return fence[0]
}

// TestMySQLProofEndsWithItsStatement: whatever ends a statement whose fence
// left its proof (success, a duplicate key, a lock wait timeout, the
// binary protocol's prepared statements, PREPARE/EXECUTE), the connection
// is left with no proof, so that the next statement on it, whoever's, is
// checked by the guard.
func TestMySQLProofEndsWithItsStatement(t *testing.T) {
	db, p := gdSetup(t, database{"mysql", openMySQL}, offlinelock.Config{})
	fence := pfFence(t, db, p)
	require.NoError(t, admin(db).Create(&GdCustomer{ID: 131, Name: "Other", Credit: 100}).Error)
	prefix := offlinelock.MariaDBIdentityPrefix(offlinelock.GuardKeyOf(p, db), martin.Session, true)
	proved := "`" + fence + "`('gd_customers', '129', '" + martin.Session + "', 0) = 1"

	ctx := context.Background()
	sqlDB, err := db.DB()
	require.NoError(t, err)
	conn, err := sqlDB.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	limit := func(what string) {
		t.Helper()
		var l string
		require.NoError(t, conn.QueryRowContext(ctx, `SELECT @@session.sql_select_limit`).Scan(&l))
		require.Equal(t, "18446744073709551615", l, "a proof outlived its statement: %s", what)
		// and david's unfenced write of martin's record on this connection is refused
		_, err := conn.ExecContext(ctx, "SET STATEMENT max_join_size="+fmt.Sprint(offlinelock.SessionMark(offlinelock.GuardKeyOf(p, db), david.Session, false))+
			" FOR UPDATE gd_customers SET credit = 666 WHERE id = 129")
		require.True(t, refusedByGuard(err, "gd_customers", "129"), "%s: david's write after it: %v", what, err)
	}
	exec := func(q string, args ...any) error {
		_, err := conn.ExecContext(ctx, q, args...)
		return err
	}
	require.NoError(t, exec(`SET SESSION innodb_lock_wait_timeout = 1`))
	require.NoError(t, exec(`BEGIN`))

	require.NoError(t, exec(prefix+`UPDATE gd_customers SET credit = 101 WHERE id = 129 AND `+proved))
	limit("success, text protocol")
	require.NoError(t, exec(prefix+`UPDATE gd_customers SET credit = ? WHERE id = 129 AND `+proved, 102))
	limit("success, binary protocol")
	err = exec(prefix + `UPDATE gd_customers SET id = 130 WHERE id = 129 AND ` + proved)
	require.ErrorContains(t, err, "1062")
	limit("duplicate key after the fence")
	err = exec(prefix+`UPDATE gd_customers SET id = ? WHERE id = 129 AND `+proved, 130)
	require.ErrorContains(t, err, "1062")
	limit("duplicate key after the fence, binary protocol")
	require.NoError(t, exec(`PREPARE pf FROM '`+strings.ReplaceAll(prefix+`UPDATE gd_customers SET credit = 103 WHERE id = 129 AND `+proved, "'", "''")+`'`))
	require.NoError(t, exec(`EXECUTE pf`))
	limit("PREPARE/EXECUTE")
	require.NoError(t, exec(`DEALLOCATE PREPARE pf`))

	// a lock wait after the fence: another transaction holds row 131
	blocker, err := sqlDB.Conn(ctx)
	require.NoError(t, err)
	defer blocker.Close()
	_, err = blocker.ExecContext(ctx, `BEGIN`)
	require.NoError(t, err)
	_, err = blocker.ExecContext(ctx, `SELECT id FROM gd_customers WHERE id = 131 FOR UPDATE`)
	require.NoError(t, err)
	err = exec(prefix + `UPDATE gd_customers SET credit = 104 WHERE id IN (129, 131) AND ` + proved + ` ORDER BY id`)
	require.ErrorContains(t, err, "1205")
	_, err = blocker.ExecContext(ctx, `ROLLBACK`)
	require.NoError(t, err)
	limit("lock wait timeout after the fence")
	require.NoError(t, exec(`ROLLBACK`))
}

// TestMySQLProofHoldsAgainstRowsOfOtherRecords: the plugin's folded writes
// that reach a row of a record other than the one their fence proved: a
// primary key changed to another's record, a member moved from another's
// root, an upsert that lands on another row through another unique key.
// Each is refused and changes nothing.
func TestMySQLProofHoldsAgainstRowsOfOtherRecords(t *testing.T) {
	db, p := gdSetup(t, database{"mysql", openMySQL}, offlinelock.Config{})
	fence := pfFence(t, db, p)
	for _, target := range []any{&GdCustomer{ID: 130}, &GdOrder{ID: 2}} {
		_, err := p.Acquire(as(db, david), target, offlinelock.Write)
		require.NoError(t, err)
	}
	rec, r := pfRecorded(as(db, martin))

	// A primary key changed to a record david holds: the fence proves 129,
	// the trigger checks the new key.
	err := rec.Model(&GdCustomer{ID: 129}).Updates(map[string]any{"id": 130}).Error
	assert.True(t, errors.Is(err, offlinelock.ErrLocked) || errors.Is(err, offlinelock.ErrInvalid), "a key changed onto david's record: %v", err)
	err = rec.Model(&GdCustomer{ID: 129}).Updates(&GdCustomer{ID: 130, Name: "x"}).Error
	assert.True(t, errors.Is(err, offlinelock.ErrLocked) || errors.Is(err, offlinelock.ErrInvalid), "a key changed onto david's record (struct): %v", err)

	// A member of david's order 2, saved and deleted as if martin's order
	// 1's: the fence (if any) proves order 1, the trigger checks order 2.
	err = rec.Save(&GdLine{ID: 2, GdOrderID: 1, Qty: 9}).Error
	assert.Error(t, err, "a member of david's order moved to martin's")
	err = rec.Delete(&GdLine{ID: 2, GdOrderID: 1}).Error
	assert.Error(t, err, "a member of david's order deleted as martin's")
	// Writes of several rows carry the blank but no fence: nothing proves.
	err = rec.Model(&GdCustomer{}).Where("id IN ?", []uint{129, 130}).Update("credit", 1).Error
	assert.Error(t, err, "martin's update of his record and david's")
	err = rec.Where("id IN ?", []uint{129, 130}).Delete(&GdCustomer{}).Error
	assert.Error(t, err, "martin's delete of his record and david's")
	t.Logf("folded statements: %d", r.fenced())

	// The upsert the plugin folds, both fences, for martin's record 131
	// (no row yet), landing through a unique key on david's 130 (raw: the
	// plugin refuses such an upsert itself).
	require.NoError(t, admin(db).Exec(`ALTER TABLE gd_customers ADD UNIQUE KEY pf_name (name)`).Error)
	_, err = p.Acquire(as(db, martin), &GdCustomer{ID: 131}, offlinelock.Write)
	require.NoError(t, err)
	call := func(free int) string {
		return fmt.Sprintf("`%s`('gd_customers', '131', '%s', %d)", fence, martin.Session, free)
	}
	for _, upd := range []string{"credit = VALUES(credit)", "id = VALUES(id), credit = VALUES(credit)"} {
		err = as(db, martin).Exec(offlinelock.MariaDBIdentityPrefix(offlinelock.GuardKeyOf(p, db), martin.Session, true) +
			`INSERT INTO gd_customers (id, name, credit) VALUES (IF(` + call(1) + `, 131, NULL), 'Free', 7) ON DUPLICATE KEY UPDATE ` +
			upd + `, id = IF(` + call(0) + `, id, NULL)`).Error
		assert.True(t, errors.Is(err, offlinelock.ErrLocked) || strings.Contains(fmt.Sprint(err), "OL423"), "%s: %v", upd, err)
	}

	var c []GdCustomer
	require.NoError(t, plainGORM(t, db).Order("id").Find(&c).Error)
	assert.Equal(t, []GdCustomer{{ID: 129, Name: "Acme", Credit: 100}, {ID: 130, Name: "Free", Credit: 100}}, c)
	var l GdLine
	require.NoError(t, plainGORM(t, db).First(&l, 2).Error)
	assert.Equal(t, GdLine{ID: 2, GdOrderID: 2, Qty: 2}, l)
}
