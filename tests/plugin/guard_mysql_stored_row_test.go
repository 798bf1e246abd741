package plugin_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// The row the MySQL/MariaDB guard checks is the row stored: its INSERT
// and UPDATE triggers run AFTER the row is written, so they see the key
// AUTO_INCREMENT gave it and what the schema's own BEFORE triggers made
// of it.

func mysqlDB() database { return databases()[2] }

// execRaw runs sqlText on the plugin's pool, outside the plugin.
func execRaw(t *testing.T, db *gorm.DB, sqlText string, args ...any) error {
	t.Helper()
	sqlDB, err := db.DB()
	require.NoError(t, err)
	_, err = sqlDB.Exec(sqlText, args...)
	return err
}

func countRows(t *testing.T, db *gorm.DB, sqlText string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, plainGORM(t, db).Raw(sqlText, args...).Scan(&n).Error)
	return n
}

// TestGuardChecksTheAutoIncrementKey: martin reserves customer 131 before
// it exists; a raw INSERT without a key, which AUTO_INCREMENT puts on
// 131, is refused and leaves no row; martin's insert of 131 and a raw
// insert that lands on a free key are accepted.
func TestGuardChecksTheAutoIncrementKey(t *testing.T) {
	db, p := gdSetup(t, mysqlDB(), offlinelock.Config{})
	_, err := p.Acquire(as(db, martin), &GdCustomer{ID: 131}, offlinelock.Write)
	require.NoError(t, err)
	require.NoError(t, execRaw(t, db, "ALTER TABLE `gd_customers` AUTO_INCREMENT = 131"))

	err = execRaw(t, db, "INSERT INTO `gd_customers` (name, credit) VALUES ('raw', 1)")
	assert.True(t, refusedByGuard(err, "gd_customers", "131"), "want the guard's refusal of gd_customers 131, got %v", err)
	assert.Contains(t, err.Error(), "Error 1644 (OL423)")
	assert.Equal(t, 0, countRows(t, db, "SELECT COUNT(*) FROM gd_customers WHERE id = 131 OR name = 'raw'"))

	require.NoError(t, as(db, martin).Create(&GdCustomer{ID: 131, Name: "Mine", Credit: 5}).Error, "the holder's insert")
	require.NoError(t, execRaw(t, db, "INSERT INTO `gd_customers` (name, credit) VALUES ('free', 1)"), "a free key")
	assert.Equal(t, 1, countRows(t, db, "SELECT COUNT(*) FROM gd_customers WHERE id > 131 AND name = 'free'"))
	testkit.CustomerUnchanged(t, db)
}

// TestGuardChecksTheRowAfterUserTriggers: the schema's own BEFORE
// triggers, created after the guard's, route a line with qty 99 into
// order 1, which martin holds. A raw insert or update of such a line is
// refused with the line table unchanged; the same writes of lines that
// stay in free order 2 land, and martin's do too.
func TestGuardChecksTheRowAfterUserTriggers(t *testing.T) {
	db, _ := gdSetup(t, mysqlDB(), offlinelock.Config{})
	for _, ev := range []string{"INSERT", "UPDATE"} {
		require.NoError(t, execRaw(t, db, "CREATE TRIGGER `gd_lines_route_"+ev+"` BEFORE "+ev+" ON `gd_lines` FOR EACH ROW "+
			"IF NEW.qty = 99 THEN SET NEW.gd_order_id = 1; END IF"))
	}
	before := countRows(t, db, "SELECT COUNT(*) FROM gd_lines")

	err := execRaw(t, db, "INSERT INTO `gd_lines` (id, gd_order_id, qty) VALUES (10, 2, 99)")
	assert.True(t, refusedByGuard(err, "gd_orders", "1"), "an insert routed into order 1: %v", err)
	err = execRaw(t, db, "UPDATE `gd_lines` SET qty = 99 WHERE id = 2")
	assert.True(t, refusedByGuard(err, "gd_orders", "1"), "an update routed into order 1: %v", err)
	assert.Equal(t, before, countRows(t, db, "SELECT COUNT(*) FROM gd_lines"))
	assert.Equal(t, GdLine{ID: 2, GdOrderID: 2, Qty: 2}, lineOf(t, db, 2))

	require.NoError(t, execRaw(t, db, "INSERT INTO `gd_lines` (id, gd_order_id, qty) VALUES (10, 2, 5)"), "a free line")
	require.NoError(t, execRaw(t, db, "UPDATE `gd_lines` SET qty = 6 WHERE id = 2"), "a free line")
	assert.Equal(t, GdLine{ID: 2, GdOrderID: 2, Qty: 6}, lineOf(t, db, 2))

	m := as(db, martin)
	require.NoError(t, m.Exec("INSERT INTO `gd_lines` (id, gd_order_id, qty) VALUES (11, 2, 99)").Error, "martin's line routed into his order")
	assert.Equal(t, GdLine{ID: 11, GdOrderID: 1, Qty: 99}, lineOf(t, db, 11))
	require.NoError(t, m.Exec("UPDATE `gd_lines` SET qty = 99 WHERE id = 10").Error, "martin's update routed into his order")
	assert.Equal(t, GdLine{ID: 10, GdOrderID: 1, Qty: 99}, lineOf(t, db, 10))
}

// TestGuardRefusesUnderATemporaryLockTable: a user with only DML on the
// business tables and CREATE TEMPORARY TABLES hides the lock table from
// its session with an empty one of the same name and shape. The guard
// notices where it reads the lock table (its seal index is missing) and
// refuses the write of a held record, the row unchanged; a free record
// whose bucket is quiet is written without reading it (live buckets). A
// temporary table of the order table's name, every bucket quiet, hides
// the order itself: every write is refused. Once the temporary tables
// are gone, free writes land again.
func TestGuardRefusesUnderATemporaryLockTable(t *testing.T) {
	db, p := gdSetup(t, mysqlDB(), offlinelock.Config{})
	var dbName string
	require.NoError(t, db.Raw(`SELECT DATABASE()`).Scan(&dbName).Error)
	user := "ol_f_app_" + randomHex(4)
	for _, s := range []string{"CREATE USER '" + user + "'@'%' IDENTIFIED BY 'pw'",
		"GRANT SELECT, INSERT, UPDATE, DELETE ON `" + dbName + "`.gd_customers TO '" + user + "'@'%'",
		"GRANT CREATE TEMPORARY TABLES ON `" + dbName + "`.* TO '" + user + "'@'%'"} {
		require.NoError(t, execRaw(t, db, s))
	}
	t.Cleanup(func() { execRaw(t, db, "DROP USER '"+user+"'@'%'") })
	other, err := sql.Open("mysql", user+":pw@tcp(127.0.0.1:3306)/"+dbName)
	require.NoError(t, err)
	defer other.Close()
	other.SetMaxOpenConns(1) // the temporary table lives on one connection
	shadow := "`" + dbName + "`.`" + lockTableOf(p) + "`"
	_, err = other.Exec("CREATE TEMPORARY TABLE " + shadow + " (resource VARBINARY(512) NOT NULL, lock_id VARBINARY(1020) NOT NULL, holder VARBINARY(1020) NOT NULL, " +
		"access VARCHAR(5), session VARBINARY(1020), user_name VARCHAR(255), acquired_at DATETIME(6), expires_at DATETIME(6), PRIMARY KEY (resource, lock_id, holder), KEY (expires_at))")
	require.NoError(t, err)

	_, err = other.Exec("UPDATE gd_customers SET credit = 7 WHERE id = 129")
	require.Error(t, err, "customer 129 under a temporary lock table")
	assert.Contains(t, err.Error(), "Error 1644 (OL423): offlinelock: the lock table is hidden by a temporary table")
	testkit.CustomerUnchanged(t, db)
	// A free record whose bucket is quiet is written without a read of
	// the lock table (live buckets): the shadow changes nothing for it.
	_, err = other.Exec("UPDATE gd_customers SET credit = 7 WHERE id = 130")
	require.NoError(t, err, "free customer 130: the guard reads none of the shadow")
	assert.Equal(t, 7, countRows(t, db, "SELECT credit FROM gd_customers WHERE id = 130"))
	_, err = other.Exec("UPDATE gd_customers SET credit = 100 WHERE id = 130")
	require.NoError(t, err)

	_, err = other.Exec("DROP TEMPORARY TABLE " + shadow)
	require.NoError(t, err)
	order := "`" + dbName + "`.`" + lockTableOf(p) + "_order`"
	_, err = other.Exec("CREATE TEMPORARY TABLE " + order + " (b BIGINT NOT NULL PRIMARY KEY, live DATETIME(6) NOT NULL)")
	require.NoError(t, err)
	_, err = other.Exec("INSERT INTO " + order + " WITH RECURSIVE d(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM d WHERE n < 31) " +
		"SELECT ((CRC32('gd_customers') & 4194303) << 10) | (a.n * 32 + c.n), '1000-01-01' FROM d a, d c")
	require.NoError(t, err)
	for _, id := range []int{129, 130} {
		_, err = other.Exec("UPDATE gd_customers SET credit = 7 WHERE id = ?", id)
		require.Error(t, err, "customer %d under a temporary order table", id)
		assert.Contains(t, err.Error(), "Error 1644 (OL423): offlinelock: the lock table is hidden by a temporary table")
	}
	testkit.CustomerUnchanged(t, db)
	_, err = other.Exec("DROP TEMPORARY TABLE " + order)
	require.NoError(t, err)
	_, err = other.Exec("UPDATE gd_customers SET credit = 7 WHERE id = 130")
	require.NoError(t, err, "a free record, the temporary tables gone")
	_, err = other.Exec("UPDATE gd_customers SET credit = 7 WHERE id = 129")
	assert.True(t, refusedByGuard(err, "gd_customers", "129"), "want the guard's refusal of gd_customers 129, got %v", err)
	require.NoError(t, as(db, martin).Model(&GdCustomer{ID: 129}).Update("credit", 110).Error, "the holder's write")
}

// TestGuardReadsTheTablesBesideTheLockTableThroughSealedViews: a
// temporary table named like a cascade's child (gd_notes, whose rows a
// delete of a folder cascades to) would hide the real rows from the
// parent's trigger; the trigger reads them through a view of a secret
// name, which a temporary table does not hide.
func TestGuardReadsTheTablesBesideTheLockTableThroughSealedViews(t *testing.T) {
	db, _ := gdSetup(t, mysqlDB(), offlinelock.Config{})
	svc := testkit.MyUser(t, db, `GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.gd_folders TO %s`, `GRANT CREATE TEMPORARY TABLES ON {db}.* TO %s`)
	conn := testkit.Pinned(t, svc)
	ctx := context.Background()
	_, err := conn.ExecContext(ctx, `CREATE TEMPORARY TABLE gd_notes (id BIGINT UNSIGNED PRIMARY KEY, gd_folder_id BIGINT UNSIGNED, text LONGTEXT)`)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, `DELETE FROM gd_folders WHERE id = 1`)
	require.True(t, refusedByGuard(err, "gd_notes", "1"), "want the guard's refusal of martin's note, got %v", err)
	assert.Equal(t, 2, countRows(t, db, "SELECT count(*) FROM gd_notes"))
	_, err = conn.ExecContext(ctx, `DELETE FROM gd_folders WHERE id = 2`)
	require.NoError(t, err, "a folder whose note nobody holds")
}
