package offlinelock_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// No guard, no grant (issue 48): on PostgreSQL and MariaDB with the guard
// on, a lock is granted only where the guard covers every table that can
// hold a row of its record; elsewhere the grant is refused at once
// (ErrUnguarded, which is ErrUnenforceable too), naming the table and the
// command, with nothing written to the lock table.

// NgRoot is a root; NgPart its member, declared on the member's side
// only (no association on the root), as the Quick start's readers write
// them.
type NgRoot struct {
	ID   uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name string
}

type NgPart struct {
	ID       uint `gorm:"primaryKey"`
	NgRootID uint `lock:"root"`
	Label    string
}

// NgSecret locks on load: its locked loads are grants too.
type NgSecret struct {
	ID   uint `gorm:"primaryKey" lock:"exclusive_read"`
	Note string
}

// ngSetup is the Quick start's setup on d: db.Use with Config{} (a lock
// table of the test's own), AutoMigrate after it, rows written under
// Bypass.
func ngSetup(t *testing.T, d database, cfg offlinelock.Config) (*gorm.DB, *offlinelock.Plugin) {
	t.Helper()
	cfg.Table = "ol_" + randomHex(6)
	db, p := setup(t, d, cfg)
	fcDropCleanup(t, db, &NgPart{}, &NgRoot{}, &NgSecret{})
	require.NoError(t, db.AutoMigrate(&NgRoot{}, &NgPart{}, &NgSecret{}))
	require.NoError(t, admin(db).Create(&NgRoot{ID: 1, Name: "held"}).Error)
	require.NoError(t, admin(db).Create(&NgRoot{ID: 2, Name: "free"}).Error)
	require.NoError(t, admin(db).Create(&NgPart{ID: 1, NgRootID: 1, Label: "a"}).Error)
	require.NoError(t, admin(db).Create(&NgPart{ID: 2, NgRootID: 2, Label: "b"}).Error)
	require.NoError(t, admin(db).Create(&NgSecret{ID: 1, Note: "n"}).Error)
	return db, p
}

// TestQuickStartMemberDeclaredOnItsSideIsGuardedBeforeTheFirstGrant: the
// member table carries the guard before the root's first grant, with no
// Config.Models and no statement of the plugin's on the member but
// AutoMigrate and bypassed writes; another client's write of a member of
// the held root, and moves into and out of it, are refused by the
// database (OL423).
func TestQuickStartMemberDeclaredOnItsSideIsGuardedBeforeTheFirstGrant(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := ngSetup(t, d, offlinelock.Config{})
			gaps, err := p.UnguardedTables(db)
			require.NoError(t, err)
			require.Empty(t, gaps, "every table is covered before the first grant")
			guarded, err := p.GuardedTables(db)
			require.NoError(t, err)
			require.Contains(t, guarded, "ng_parts", "the member's table is guarded before the root's first grant")
			require.Contains(t, guarded, "ng_roots")

			_, err = p.Acquire(as(db, martin), &NgRoot{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			other := plainGORM(t, db)
			for _, q := range []string{
				`UPDATE ng_parts SET label = 'x' WHERE id = 1`,                    // a member of the held root
				`UPDATE ng_parts SET ng_root_id = 2 WHERE id = 1`,                 // moved out of it
				`UPDATE ng_parts SET ng_root_id = 1 WHERE id = 2`,                 // moved into it
				`DELETE FROM ng_parts WHERE id = 1`,                               // deleted
				`INSERT INTO ng_parts (id, ng_root_id, label) VALUES (3, 1, 'c')`, // added
			} {
				err := other.Exec(q).Error
				require.True(t, refusedByGuard(err, "ng_roots", "1"), "%s: want the guard's refusal (OL423), got %v", q, err)
			}
			require.NoError(t, other.Exec(`UPDATE ng_parts SET label = 'y' WHERE id = 2`).Error, "a member of a free root is written")
			var labels []string
			require.NoError(t, other.Raw(`SELECT CONCAT(id, ':', ng_root_id, ':', label) FROM ng_parts ORDER BY id`).Scan(&labels).Error)
			require.Equal(t, []string{"1:1:a", "2:2:y"}, labels)
		})
	}
}

// ngUnguard takes the guard off ng_parts behind the plugin's back, as the
// tables' owner could: PostgreSQL disables its triggers, MariaDB drops
// them.
func ngUnguard(t *testing.T, db *gorm.DB) {
	t.Helper()
	other := plainGORM(t, db)
	if db.Dialector.Name() == "postgres" {
		require.NoError(t, other.Exec(`ALTER TABLE ng_parts DISABLE TRIGGER ALL`).Error)
		return
	}
	var names []string
	require.NoError(t, other.Raw(`SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'ng_parts'`).Scan(&names).Error)
	require.NotEmpty(t, names)
	for _, n := range names {
		require.NoError(t, other.Exec("DROP TRIGGER `"+n+"`").Error)
	}
}

// requireUnguardedRefusal asserts err is the refusal of a grant for a
// missing guard of table (testkit.RequireUnguardedRefusal).
func requireUnguardedRefusal(t *testing.T, err error, table string) {
	t.Helper()
	testkit.RequireUnguardedRefusal(t, err, table)
}

// TestNoGuardNoGrant: a member table whose guard the owner disabled or
// dropped outside the plugin is found by UnguardedTables (the periodic
// check's read); from then on every grant of the root's records is
// refused (Acquire, TakeOver, Do, a locked load of another resource is
// still granted), the lock table stays as it was, and another client's
// write of the record is not held off by a lock the plugin would have
// claimed. InstallGuard repairs it, and grants are given again. The
// plugin runs with LeaveGuard (the guard is the owner's to install), so
// that it does not repair the table itself on the grant's way
// (TestNoGuardNoGrantRepairsWhatItFinds).
func TestNoGuardNoGrant(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := ngSetup(t, d, offlinelock.Config{LeaveGuard: true, Models: []any{&NgRoot{}, &NgPart{}, &NgSecret{}}})
			require.NoError(t, p.InstallGuard(db))
			_, err := p.Acquire(as(db, martin), &NgRoot{ID: 2}, offlinelock.Write) // shows the coverage
			require.NoError(t, err)
			lockTable := lockTableOf(t, db, p)
			before := lockRows(t, db, lockTable)

			ngUnguard(t, db)
			gaps, err := p.UnguardedTables(db)
			require.NoError(t, err)
			require.Len(t, gaps, 1, "%+v", gaps)
			require.Equal(t, "ng_parts", gaps[0].Table)
			require.Equal(t, []string{"ng_roots"}, gaps[0].Resources)
			want := map[string]string{"postgres": "disabled", "mysql": "dropped"}[d.name]
			require.Equal(t, want, gaps[0].State)

			_, err = p.Acquire(as(db, martin), &NgRoot{ID: 1}, offlinelock.Write)
			requireUnguardedRefusal(t, err, "ng_parts")
			_, err = p.Acquire(as(db, martin), &NgPart{ID: 1, NgRootID: 1}, offlinelock.Write)
			requireUnguardedRefusal(t, err, "ng_parts")
			_, err = p.TakeOver(as(db, martin), &NgRoot{ID: 1}, "")
			requireUnguardedRefusal(t, err, "ng_parts")
			err = p.Do(as(db, martin), &NgRoot{ID: 1}, func(tx *gorm.DB) error { return tx.Model(&NgRoot{ID: 1}).Update("name", "x").Error })
			requireUnguardedRefusal(t, err, "ng_parts")
			err = db.Transaction(func(tx *gorm.DB) error {
				_, err := p.Acquire(as(tx, martin), &NgRoot{ID: 1}, offlinelock.Write)
				return err
			})
			requireUnguardedRefusal(t, err, "ng_parts")
			require.Equal(t, before, lockRows(t, db, lockTable), "nothing written to the lock table")
			locks, err := p.Holders(db, &NgRoot{ID: 1})
			require.NoError(t, err)
			require.Empty(t, locks, "nobody holds ng_roots 1: its writers are not told it is held")

			// A record of a resource the gap does not reach is granted.
			var s NgSecret
			require.NoError(t, as(db, martin).First(&s, 1).Error, "a locked load of a covered table")

			require.NoError(t, p.InstallGuard(db))
			gaps, err = p.UnguardedTables(db)
			require.NoError(t, err)
			require.Empty(t, gaps)
			_, err = p.Acquire(as(db, martin), &NgRoot{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			err = plainGORM(t, db).Exec(`UPDATE ng_parts SET label = 'x' WHERE id = 1`).Error
			require.True(t, refusedByGuard(err, "ng_roots", "1"), "repaired: want the guard's refusal, got %v", err)
		})
	}
}

// TestNoGuardNoGrantRepairsWhatItFinds: with the plugin installing the
// guard (the default), a table found uncovered by the check is guarded
// again on its next grant's way, before the grant: the grant is given
// with the guard in place, and another client's write of the held
// record is refused.
func TestNoGuardNoGrantRepairsWhatItFinds(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := ngSetup(t, d, offlinelock.Config{})
			require.NoError(t, p.InstallGuard(db)) // after the installs AutoMigrate started in the background
			ngUnguard(t, db)
			gaps, err := p.UnguardedTables(db)
			require.NoError(t, err)
			require.Len(t, gaps, 1)
			_, err = p.Acquire(as(db, martin), &NgRoot{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			gaps, err = p.UnguardedTables(db)
			require.NoError(t, err)
			require.Empty(t, gaps, "repaired before the grant")
			err = plainGORM(t, db).Exec(`UPDATE ng_parts SET label = 'x' WHERE id = 1`).Error
			require.True(t, refusedByGuard(err, "ng_roots", "1"), "want the guard's refusal, got %v", err)
		})
	}
}

// TestNoGuardNoGrantOnLockedLoads: a load that locks (exclusive_read) is a
// grant, refused as Acquire is when its table is not covered; nothing is
// read into the destination and nothing written to the lock table.
func TestNoGuardNoGrantOnLockedLoads(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := ngSetup(t, d, offlinelock.Config{LeaveGuard: true, Models: []any{&NgRoot{}, &NgPart{}, &NgSecret{}}})
			require.NoError(t, p.InstallGuard(db))
			other := plainGORM(t, db)
			if d.name == "postgres" {
				require.NoError(t, other.Exec(`ALTER TABLE ng_secrets DISABLE TRIGGER ALL`).Error)
			} else {
				var names []string
				require.NoError(t, other.Raw(`SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'ng_secrets'`).Scan(&names).Error)
				for _, n := range names {
					require.NoError(t, other.Exec("DROP TRIGGER `"+n+"`").Error)
				}
			}
			_, err := p.UnguardedTables(db)
			require.NoError(t, err)
			lockTable := lockTableOf(t, db, p)
			before := lockRows(t, db, lockTable)
			for name, load := range map[string]func(tx *gorm.DB, s *NgSecret) error{
				"First": func(tx *gorm.DB, s *NgSecret) error { return tx.First(s, 1).Error },
				"Find":  func(tx *gorm.DB, s *NgSecret) error { return tx.Where("id = ?", 1).Find(s).Error },
				"Take":  func(tx *gorm.DB, s *NgSecret) error { return tx.Take(s, "id = ?", 1).Error },
				"in a tx": func(tx *gorm.DB, s *NgSecret) error {
					return tx.Transaction(func(tx *gorm.DB) error { return tx.First(s, 1).Error })
				},
			} {
				var s NgSecret
				err := load(as(db, martin), &s)
				requireUnguardedRefusal(t, err, "ng_secrets")
				require.Empty(t, s.Note, "%s: nothing read", name)
			}
			require.Equal(t, before, lockRows(t, db, lockTable))
		})
	}
}

// TestNoGuardNoGrantWhereTheGuardIsLeftUninstalled: with LeaveGuard (the
// guard is somebody else's to install) on tables nobody guarded, the
// grant is refused, naming the command; once installed, it is given.
func TestNoGuardNoGrantWhereTheGuardIsLeftUninstalled(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			table := "ol_" + randomHex(6)
			db := d.open(t)
			fcDropCleanup(t, db, &NgPart{}, &NgRoot{}, &NgSecret{})
			require.NoError(t, db.AutoMigrate(&NgRoot{}, &NgPart{}))
			require.NoError(t, db.Create(&NgRoot{ID: 1}).Error)
			db, p := setupOn(t, db, offlinelock.Config{Table: table, LeaveGuard: true, Models: []any{&NgRoot{}, &NgPart{}}})
			_, err := p.Acquire(as(db, martin), &NgRoot{ID: 1}, offlinelock.Write)
			requireUnguardedRefusal(t, err, "ng_parts")
			require.Empty(t, lockRows(t, db, table))
			gaps, err := p.UnguardedTables(db)
			require.NoError(t, err)
			var names []string
			for _, g := range gaps {
				names = append(names, g.Table)
			}
			require.Equal(t, []string{"ng_parts", "ng_roots"}, names)

			require.NoError(t, p.InstallGuard(db))
			_, err = p.Acquire(as(db, martin), &NgRoot{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
		})
	}
}

// TestNoGuardNoGrantWhereTheGuardCannotFollowOnMariaDB: a schema whose
// foreign-key actions the guard cannot follow (two levels of actions)
// fails the install, and the grants of the table's records are refused,
// not given with a warning; a plain client's cascading update of the
// record is then no write of a held record.
func TestNoGuardNoGrantWhereTheGuardCannotFollowOnMariaDB(t *testing.T) {
	table := "ol_" + randomHex(6)
	db := openMySQL(t)
	drop := func() {
		db.Connection(func(c *gorm.DB) error {
			c.Exec(`SET FOREIGN_KEY_CHECKS = 0`)
			c.Exec(`DROP TABLE IF EXISTS ng_kids, ng_moms, ng_grans`)
			return c.Exec(`SET FOREIGN_KEY_CHECKS = 1`).Error
		})
	}
	drop()
	t.Cleanup(drop)
	for _, q := range []string{
		`CREATE TABLE ng_grans (id INT PRIMARY KEY) ENGINE=InnoDB`,
		`CREATE TABLE ng_moms (id INT PRIMARY KEY, code VARCHAR(20) NOT NULL UNIQUE, gran_id INT NULL,
			CONSTRAINT ng_moms_gran FOREIGN KEY (gran_id) REFERENCES ng_grans (id) ON DELETE CASCADE) ENGINE=InnoDB`,
		`CREATE TABLE ng_kids (id INT UNSIGNED PRIMARY KEY, mom_id INT NULL, note VARCHAR(20) NOT NULL DEFAULT '',
			CONSTRAINT ng_kids_mom FOREIGN KEY (mom_id) REFERENCES ng_moms (id) ON DELETE CASCADE) ENGINE=InnoDB`,
		`INSERT INTO ng_grans VALUES (1)`,
		`INSERT INTO ng_moms VALUES (1, 'a', 1)`,
		`INSERT INTO ng_kids VALUES (1, 1, 'k')`,
	} {
		require.NoError(t, db.Exec(q).Error, q)
	}
	cfg := offlinelock.Config{Table: table, Models: []any{&NgKid{}}}
	p := offlinelock.New(cfg)
	err := db.Use(p)
	require.ErrorContains(t, err, "ng_moms_gran", "db.Use names the constraint it cannot follow")
	t.Cleanup(func() {
		db.Exec("DROP TABLE IF EXISTS `" + table + "`, `" + table + "_generation`, `" + table + "_tables`, `" + table + "_notes`, `" + table + "_order`")
	})

	// The same with the table made after db.Use: the install on the way
	// of a statement fails, and the grant is refused.
	table2 := "ol_" + randomHex(6)
	db2 := openMySQL(t)
	db2, p2 := setupOn(t, db2, offlinelock.Config{Table: table2, Models: []any{&NgSecret{}}})
	_, err = p2.Acquire(as(db2, martin), &NgKid{ID: 1}, offlinelock.Write)
	requireUnguardedRefusal(t, err, "ng_kids")
	require.ErrorContains(t, err, "cannot be guarded")
	require.ErrorContains(t, err, "ng_moms_gran")
	require.Empty(t, lockRows(t, db2, table2), "nothing written to the lock table")
	gaps, err := p2.UnguardedTables(db2)
	require.NoError(t, err)
	require.Len(t, gaps, 1)
	require.Equal(t, "unguardable", gaps[0].State)
	require.Equal(t, []string{"ng_kids"}, gaps[0].Resources)
	require.NoError(t, plainGORM(t, db2).Exec(`DELETE FROM ng_grans WHERE id = 1`).Error, "nobody holds the kid: its cascading delete is a free record's")
}

// NgKid is lockable; the schema's two levels of ON DELETE CASCADE reach
// it (ng_grans → ng_moms → ng_kids).
type NgKid struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	MomID *int
	Note  string
}

// lockTableOf is p's lock table's name (its catalog is <table>_tables).
func lockTableOf(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) string {
	t.Helper()
	return offlinelock.LockTableOf(p)
}

// TestStartUnderTrafficRefusesWhatItCannotRepair: a node starting while
// the guard of a table needs a repair and another client's transaction
// holds that table: db.Use waits no longer than the install's own lock
// timeout, and succeeds; the grants of the records the table holds are
// refused (nothing written to the lock table), those of other tables
// are given; once the transaction ends, the repair is made and the grant
// given.
func TestStartUnderTrafficRefusesWhatItCannotRepair(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := ngSetup(t, d, offlinelock.Config{})
			require.NoError(t, p.InstallGuard(db)) // after the installs AutoMigrate started in the background
			lockTable := offlinelock.LockTableOf(p)
			ngUnguard(t, db)
			tx := plainGORM(t, db).Begin()
			require.NoError(t, tx.Error)
			defer tx.Rollback()
			require.NoError(t, tx.Exec(`UPDATE ng_parts SET label = 't' WHERE id = 2`).Error)

			db2 := d.open(t)
			p2 := offlinelock.New(offlinelock.Config{Table: lockTable, Logger: slog.New(slog.DiscardHandler)})
			start := time.Now()
			require.NoError(t, db2.Use(p2), "db.Use does not fail for a table in use")
			require.Less(t, time.Since(start), 7*time.Second, "db.Use waits at most the install's lock timeout (5 s)")

			t.Logf("db.Use %v", time.Since(start))
			start = time.Now()
			_, err := p2.Acquire(as(db2, martin), &NgRoot{ID: 1}, offlinelock.Write)
			requireUnguardedRefusal(t, err, "ng_parts")
			t.Logf("refusal %v", time.Since(start))
			require.Less(t, time.Since(start), 2*time.Second, "refused at once: no second wait for the table in use")
			require.Empty(t, lockRows(t, db2, lockTable), "nothing written to the lock table")
			start = time.Now()
			var s NgSecret
			require.NoError(t, as(db2, martin).First(&s, 1).Error, "a record of a covered table is granted")
			t.Logf("other grant %v", time.Since(start))
			require.Less(t, time.Since(start), 2*time.Second, "other tables are served without waiting")
			start = time.Now()

			require.NoError(t, tx.Rollback().Error)
			require.NoError(t, p2.InstallGuard(db2))
			t.Logf("install %v", time.Since(start))
			_, err = p2.Acquire(as(db2, martin), &NgRoot{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			err = plainGORM(t, db).Exec(`UPDATE ng_parts SET label = 'x' WHERE id = 1`).Error
			require.True(t, refusedByGuard(err, "ng_roots", "1"), "repaired: want the guard's refusal, got %v", err)
		})
	}
}

// TestNoGuardNoGrantUnderLeastPrivilegeOnPostgres: the documented
// least-privileged steps, the owner's install first, before the
// application has declared anything (no Config.Models): the install
// guards nothing, the DML-only application starts, and its first grant
// is refused, naming the command, with nothing written to the lock
// table. The owner's install, run again once the application has
// declared its tables, guards them; the grant is then given, and another
// client's write of the held record is refused.
func TestNoGuardNoGrantUnderLeastPrivilegeOnPostgres(t *testing.T) {
	table := "ol_lp_" + randomHex(4)
	owner := openPostgres(t)
	fcDropCleanup(t, owner, &NgPart{}, &NgRoot{}, &NgSecret{})
	require.NoError(t, plainGORM(t, owner).AutoMigrate(&NgRoot{}, &NgPart{}))
	ownerP := offlinelock.New(offlinelock.Config{Table: table, LeaveGuard: true, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, owner.Use(ownerP))
	t.Cleanup(func() {
		ownerP.RemoveGuard(owner)
		for _, suffix := range []string{"", "_generation", "_tables", "_notes"} {
			owner.Exec(`DROP TABLE IF EXISTS "` + table + suffix + `"`)
		}
		owner.Exec(`DROP SEQUENCE IF EXISTS "` + table + `_generation"`)
	})
	require.NoError(t, ownerP.InstallGuard(owner), "the owner's install with nothing declared")
	declared, err := ownerP.DeclaredTables(owner)
	require.NoError(t, err)
	require.Empty(t, declared)

	_, app := pgRole(t, owner, `GRANT USAGE ON SCHEMA public TO %s`,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ng_roots, ng_parts, `+table+`, `+table+`_tables TO %s`,
		`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO %s`)
	appP := offlinelock.New(offlinelock.Config{Table: table, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, app.Use(appP), "the application's db.Use starts")
	require.NoError(t, admin(app).Create(&NgRoot{ID: 1}).Error)
	require.NoError(t, admin(app).Create(&NgPart{ID: 1, NgRootID: 1, Label: "a"}).Error)

	_, err = appP.Acquire(as(app, martin), &NgRoot{ID: 1}, offlinelock.Write)
	requireUnguardedRefusal(t, err, "ng_parts")
	require.Empty(t, lockRows(t, owner, table), "nothing written to the lock table")

	declared, err = ownerP.DeclaredTables(owner)
	require.NoError(t, err)
	require.Equal(t, []string{"ng_parts", "ng_roots"}, declared, "the application declared its tables")
	require.NoError(t, ownerP.InstallGuard(owner), "the owner's install, again")
	gaps, err := appP.UnguardedTables(app) // what a readiness check, or the periodic check, reads
	require.NoError(t, err)
	require.Empty(t, gaps)
	_, err = appP.Acquire(as(app, martin), &NgRoot{ID: 1}, offlinelock.Write)
	require.NoError(t, err)
	err = plainGORM(t, owner).Exec(`UPDATE ng_parts SET label = 'x' WHERE id = 1`).Error
	require.True(t, refusedByGuard(err, "ng_roots", "1"), "want the guard's refusal, got %v", err)
}
