package plugin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// MariaDB: the guard judges a lock's expiry by the server's wall clock,
// never by the statement's time, which any client sets without a
// privilege. Each way a session sets its time, with each held shape, is
// refused; the same shape of a free record lands.
func TestGuardClockIsNotTheClients(t *testing.T) {
	const future = "2147483647" // 2038: every lock would look expired
	clocks := []struct{ name, set, prefix string }{
		{"SET timestamp", "SET timestamp = " + future, ""},
		{"SET STATEMENT timestamp", "", "SET STATEMENT timestamp = " + future + " FOR "},
		{"a time zone far east, and the time", "SET time_zone = '+13:00', timestamp = " + future, ""},
		{"a time zone far west", "SET time_zone = '-12:59'", ""},
	}
	shapes := []struct{ name, held, free, resource, id string }{
		{"UPDATE", "UPDATE gd_customers SET credit = 1 WHERE id = 129", "UPDATE gd_customers SET credit = 1 WHERE id = 130", "gd_customers", "129"},
		{"DELETE", "DELETE FROM gd_customers WHERE id = 129", "DELETE FROM gd_customers WHERE id = 130", "gd_customers", "129"},
		{"REPLACE", "REPLACE INTO gd_customers (id, name, credit) VALUES (129, 'x', 1)", "REPLACE INTO gd_customers (id, name, credit) VALUES (130, 'x', 1)", "gd_customers", "129"},
		{"upsert", "INSERT INTO gd_customers (id, name, credit) VALUES (129, 'x', 1) ON DUPLICATE KEY UPDATE credit = 1",
			"INSERT INTO gd_customers (id, name, credit) VALUES (130, 'x', 1) ON DUPLICATE KEY UPDATE credit = 1", "gd_customers", "129"},
		{"multi-table UPDATE", "UPDATE gd_customers c JOIN gd_orders o ON o.id = 1 SET c.credit = 1 WHERE c.id = 129",
			"UPDATE gd_customers c JOIN gd_orders o ON o.id = 1 SET c.credit = 1 WHERE c.id = 130", "gd_customers", "129"},
		{"a member", "UPDATE gd_lines SET qty = 0 WHERE id = 1", "UPDATE gd_lines SET qty = 0 WHERE id = 2", "gd_orders", "1"},
		{"a move into a held aggregate", "UPDATE gd_lines SET gd_order_id = 1 WHERE id = 2", "UPDATE gd_lines SET qty = 3 WHERE id = 2", "gd_orders", "1"},
		{"a key reserved ahead", "INSERT INTO gd_customers (id, name, credit) VALUES (131, 'x', 0)",
			"INSERT INTO gd_customers (id, name, credit) VALUES (132, 'x', 0)", "gd_customers", "131"},
		{"a cascade from an untagged parent", "DELETE FROM gd_folders WHERE id = 1", "DELETE FROM gd_folders WHERE id = 2", "gd_notes", "1"},
	}
	db, p := gdSetup(t, database{"mysql", openMySQL}, offlinelock.Config{})
	_, err := p.Acquire(as(db, martin), &GdCustomer{ID: 131}, offlinelock.Write)
	require.NoError(t, err)
	var before int64
	require.NoError(t, db.Raw(`SELECT COUNT(*) FROM `+lockTableOf(p)).Scan(&before).Error)
	svc := testkit.MyUser(t, db, `GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.* TO %s`)
	sqlDB, err := svc.DB()
	require.NoError(t, err)
	for _, clock := range clocks {
		for _, s := range shapes {
			t.Run(clock.name+"/"+s.name, func(t *testing.T) {
				c, err := sqlDB.Conn(context.Background())
				require.NoError(t, err)
				defer c.Close()
				defer c.ExecContext(context.Background(), "SET timestamp = DEFAULT, time_zone = DEFAULT") // the pool's next user
				if clock.set != "" {
					_, err := c.ExecContext(context.Background(), clock.set)
					require.NoError(t, err)
				}
				tx, err := c.BeginTx(context.Background(), nil)
				require.NoError(t, err)
				defer tx.Rollback() // the free write is undone: every case starts from the same rows
				_, err = tx.Exec(clock.prefix + s.held)
				assert.True(t, refusedByGuard(err, s.resource, s.id), "want the guard's refusal of %s %s, got %v", s.resource, s.id, err)
				_, err = tx.Exec(clock.prefix + s.free)
				assert.NoError(t, err, "the same shape of a free record")
			})
		}
	}
	testkit.CustomerUnchanged(t, db)
	assert.Equal(t, uint(1), lineOf(t, db, 1).GdOrderID)
	assert.Equal(t, uint(2), lineOf(t, db, 2).GdOrderID)
	var after int64
	require.NoError(t, db.Raw(`SELECT COUNT(*) FROM `+lockTableOf(p)).Scan(&after).Error)
	assert.Equal(t, before, after, "the lock table is unchanged")
}
