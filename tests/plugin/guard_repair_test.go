package plugin_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// TestGuardRepairsItself: a routine replaced by a no-op that keeps its
// version comment, a trigger disabled or dropped: GuardStatus names it,
// the held record is then writable (the attack), and InstallGuard puts
// the guard back by its definitions, not by its comment.
func TestGuardRepairsItself(t *testing.T) {
	type damage struct {
		name, state string
		do          func(t *testing.T, plain *gorm.DB)
	}
	cases := map[string][]damage{
		"postgres": {
			{"a trigger function replaced by a no-op, its comment kept", "replaced", func(t *testing.T, plain *gorm.DB) {
				require.NoError(t, plain.Exec(`DO $$ DECLARE f regprocedure; BEGIN FOR f IN SELECT t.tgfoid::regprocedure FROM pg_trigger t WHERE t.tgrelid = 'gd_customers'::regclass AND t.tgname LIKE 'ol%\_upd' LOOP EXECUTE format('CREATE OR REPLACE FUNCTION %s RETURNS trigger LANGUAGE plpgsql AS $b$ BEGIN RETURN NULL; END $b$', f); END LOOP; END $$`).Error)
			}},
			{"a trigger disabled", "disabled", func(t *testing.T, plain *gorm.DB) {
				require.NoError(t, plain.Exec(`DO $$ DECLARE n name; BEGIN FOR n IN SELECT t.tgname FROM pg_trigger t WHERE t.tgrelid = 'gd_customers'::regclass AND t.tgname LIKE 'ol%\_upd' LOOP EXECUTE format('ALTER TABLE gd_customers DISABLE TRIGGER %I', n); END LOOP; END $$`).Error)
			}},
			{"a trigger dropped", "dropped", func(t *testing.T, plain *gorm.DB) {
				require.NoError(t, plain.Exec(`DO $$ DECLARE n name; BEGIN FOR n IN SELECT t.tgname FROM pg_trigger t WHERE t.tgrelid = 'gd_customers'::regclass AND t.tgname LIKE 'ol%\_upd' LOOP EXECUTE format('DROP TRIGGER %I ON gd_customers', n); END LOOP; END $$`).Error)
			}},
		},
		"mysql": {
			{"the check procedure replaced by a no-op, its comment kept", "replaced", func(t *testing.T, plain *gorm.DB) {
				var name, comment string
				// This lock table's procedure: the one its trigger of gd_customers calls.
				require.NoError(t, plain.Raw(`SELECT r.ROUTINE_NAME, r.ROUTINE_COMMENT FROM information_schema.ROUTINES r JOIN information_schema.TRIGGERS g
					ON g.TRIGGER_SCHEMA = r.ROUTINE_SCHEMA AND g.ACTION_STATEMENT LIKE CONCAT('%CALL ', CHAR(96), r.ROUTINE_NAME, CHAR(96), '%')
					WHERE r.ROUTINE_SCHEMA = DATABASE() AND r.ROUTINE_TYPE = 'PROCEDURE' AND g.EVENT_OBJECT_TABLE = 'gd_customers' AND g.EVENT_MANIPULATION = 'UPDATE' LIMIT 1`).Row().Scan(&name, &comment))
				require.NoError(t, plain.Exec("CREATE OR REPLACE PROCEDURE `"+name+"`(res VARBINARY(512), id VARBINARY(1020)) COMMENT '"+comment+"' BEGIN END").Error)
			}},
			{"a trigger dropped beside the others", "dropped", func(t *testing.T, plain *gorm.DB) {
				var name string
				require.NoError(t, plain.Raw(`SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'gd_customers' AND EVENT_MANIPULATION = 'UPDATE'`).Row().Scan(&name))
				require.NoError(t, plain.Exec("DROP TRIGGER `"+name+"`").Error)
			}},
		},
	}
	for _, d := range serverDatabases() {
		for _, c := range cases[d.name] {
			t.Run(d.name+"/"+c.name, func(t *testing.T) {
				table := "ol_repair_" + randomHex(4)
				db, p := gdSetup(t, d, offlinelock.Config{Table: table})
				plain := plainGORM(t, db)
				state := func() string {
					states, err := p.GuardStatus(db)
					require.NoError(t, err)
					for _, s := range states {
						if s.Table == "gd_customers" {
							return s.State
						}
					}
					return "absent"
				}
				require.Equal(t, "ok", state())
				c.do(t, plain)
				require.Equal(t, c.state, state())
				require.NoError(t, plain.Exec(`UPDATE gd_customers SET credit = 5 WHERE id = 129`).Error, "the damage lets a held record be written")

				require.NoError(t, p.InstallGuard(db))
				require.Equal(t, "ok", state())
				err := plain.Exec(`UPDATE gd_customers SET credit = 6 WHERE id = 129`).Error
				require.True(t, refusedByGuard(err, "gd_customers", "129"), "repaired: %v", err)
			})
		}
	}
}
