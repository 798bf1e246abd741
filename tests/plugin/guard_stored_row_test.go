package plugin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
)

// TestGuardChecksTheRowAsStored: the guard judges the row the database
// stores, after a generated key and after the schema's own BEFORE
// triggers, on PostgreSQL and MariaDB.
func TestGuardChecksTheRowAsStored(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := gdSetup(t, d, offlinelock.Config{})
			plain := plainGORM(t, db)

			// A keyless INSERT whose generated key another session reserved.
			var next uint
			if d.name == "mysql" {
				require.NoError(t, plain.Exec(`ANALYZE TABLE gd_customers`).Error)
				require.NoError(t, plain.Raw(`SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'gd_customers'`).Scan(&next).Error)
			} else {
				require.NoError(t, plain.Exec(`SELECT setval(pg_get_serial_sequence('gd_customers', 'id'), 500)`).Error)
				next = 501
			}
			_, err := p.Acquire(as(db, martin), &GdCustomer{ID: next}, offlinelock.Write)
			require.NoError(t, err)
			err = plain.Exec(`INSERT INTO gd_customers (name, credit) VALUES ('stolen', 1)`).Error
			require.True(t, refusedByGuard(err, "gd_customers", itoa(next)), "a keyless INSERT onto the reserved key %d: %v", next, err)
			var n int64
			require.NoError(t, plain.Raw(`SELECT count(*) FROM gd_customers WHERE name = 'stolen'`).Scan(&n).Error)
			require.Zero(t, n)
			require.NoError(t, plain.Exec(`INSERT INTO gd_customers (name, credit) VALUES ('free', 1)`).Error, "the next key is free")

			// The schema's own BEFORE trigger routes a new line into the
			// held order 1.
			if d.name == "mysql" {
				require.NoError(t, plain.Exec("CREATE TRIGGER ol_test_route BEFORE INSERT ON gd_lines FOR EACH ROW SET NEW.gd_order_id = IF(NEW.qty = 99, 1, NEW.gd_order_id)").Error)
				t.Cleanup(func() { plain.Exec("DROP TRIGGER IF EXISTS ol_test_route") })
			} else {
				require.NoError(t, plain.Exec(`CREATE FUNCTION ol_test_route() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.qty = 99 THEN NEW.gd_order_id := 1; END IF; RETURN NEW; END $$;
					CREATE TRIGGER ol_test_route BEFORE INSERT ON gd_lines FOR EACH ROW EXECUTE PROCEDURE ol_test_route()`).Error)
				t.Cleanup(func() {
					plain.Exec(`DROP TRIGGER IF EXISTS ol_test_route ON gd_lines; DROP FUNCTION IF EXISTS ol_test_route()`)
				})
			}
			err = plain.Exec(`INSERT INTO gd_lines (id, gd_order_id, qty) VALUES (90, 2, 99)`).Error
			require.True(t, refusedByGuard(err, "gd_orders", "1"), "routed into the held root: %v", err)
			require.NoError(t, plain.Raw(`SELECT count(*) FROM gd_lines WHERE id = 90`).Scan(&n).Error)
			require.Zero(t, n)
			require.NoError(t, plain.Exec(`INSERT INTO gd_lines (id, gd_order_id, qty) VALUES (91, 2, 5)`).Error, "a line of the free order")
		})
	}
}
