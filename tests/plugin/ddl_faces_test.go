package plugin_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock"
)

// TestFailClosedDDLFacesInEverySpelling: DDL that gives a lockable table
// another face (a view, rule, trigger, function) is refused however it is
// spelt: comments before and between its words, after another statement
// in the same text, MariaDB's view options, mysqldump's executable
// comment. The object is not created; the same DDL over an untagged table
// runs. Under Strict, a rename or an INHERIT of a lockable table is
// refused too, and a rename of an untagged one runs.
func TestFailClosedDDLFacesInEverySpelling(t *testing.T) {
	views := []struct {
		name, sql string
		on        []string // databases that take the spelling; nil: all
		want      error    // ErrUnenforceable unless set
	}{
		{"plain", "CREATE VIEW v_face AS SELECT * FROM accounts", nil, nil},
		{"leading comment", "/* report */ CREATE VIEW v_face AS SELECT * FROM accounts", nil, nil},
		{"line comment first", "-- report\nCREATE VIEW v_face AS SELECT * FROM accounts", nil, nil},
		{"comments between the words", "CREATE /* x */ OR /* y */ REPLACE /* z */ VIEW v_face AS SELECT * FROM accounts", []string{"postgres", "mysql"}, nil},
		{"after another statement", "SELECT 1; CREATE VIEW v_face AS SELECT * FROM accounts", []string{"postgres", "mysql"}, offlinelock.ErrStrict}, // the SELECT makes it a raw statement first
		{"view options", "CREATE ALGORITHM=MERGE SQL SECURITY INVOKER VIEW v_face AS SELECT * FROM accounts", []string{"mysql"}, nil},
		{"definer", "CREATE DEFINER=CURRENT_USER VIEW v_face AS SELECT * FROM accounts", []string{"mysql"}, nil},
		{"executable comment", "/*!50001 CREATE ALGORITHM=UNDEFINED */ /*!50001 VIEW v_face AS SELECT * FROM accounts */", []string{"mysql"}, nil},
		{"temporary", "CREATE TEMP VIEW v_face AS SELECT * FROM accounts", []string{"postgres", "sqlite"}, nil},
	}
	takes := func(on []string, db string) bool {
		for _, d := range on {
			if d == db {
				return true
			}
		}
		return on == nil
	}
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, _ := setupModels(t, d, offlinelock.Config{Strict: true, Models: []any{&Account{}}})
			require.NoError(t, db.Exec("DROP VIEW IF EXISTS v_face").Error)
			viewExists := func() bool {
				var n int
				return db.Raw("SELECT count(*) FROM v_face").Scan(&n).Error == nil
			}
			for _, c := range views {
				if !takes(c.on, d.name) {
					continue
				}
				t.Run(c.name, func(t *testing.T) {
					want := c.want
					if want == nil {
						want = offlinelock.ErrUnenforceable
					}
					err := as(db, martin).Exec(c.sql).Error
					require.ErrorIs(t, err, want)
					require.ErrorContains(t, err, "accounts")
					require.False(t, viewExists(), "the view was not created")
				})
			}
			t.Run("over an untagged table it runs", func(t *testing.T) {
				require.NoError(t, as(db, martin).Exec("/* report */ CREATE VIEW v_face AS SELECT * FROM customers").Error)
				require.True(t, viewExists())
				require.NoError(t, db.Exec("DROP VIEW v_face").Error)
			})
			renames := map[string][]string{
				"sqlite":   {"ALTER TABLE accounts RENAME TO accounts_old", "/* x */ ALTER TABLE accounts RENAME TO accounts_old"},
				"postgres": {"ALTER TABLE accounts RENAME TO accounts_old", "ALTER TABLE customers INHERIT accounts"},
				"mysql":    {"ALTER TABLE accounts RENAME TO accounts_old", "RENAME TABLE accounts TO accounts_old", "/*!40000 RENAME TABLE accounts TO accounts_old */"},
			}
			for _, sql := range renames[d.name] {
				t.Run("strict: "+sql, func(t *testing.T) {
					err := as(db, martin).Exec(sql).Error
					require.ErrorIs(t, err, offlinelock.ErrStrict)
					require.True(t, db.Migrator().HasTable("accounts"), "not renamed")
				})
			}
			t.Run("strict: a rename of an untagged table runs", func(t *testing.T) {
				require.NoError(t, as(db, martin).Exec("ALTER TABLE customers RENAME TO customers_old").Error)
				require.NoError(t, db.Exec("ALTER TABLE customers_old RENAME TO customers").Error)
			})
			t.Run("under Bypass the migration runs", func(t *testing.T) {
				require.NoError(t, admin(db).Exec("CREATE VIEW v_face AS SELECT * FROM accounts").Error)
				require.NoError(t, db.Exec("DROP VIEW v_face").Error)
			})
		})
	}
}

// TestFailClosedDynamicSQL: SQL that no static reading can bound is
// refused under Strict (Exec) and in raw reads while a table is locked on
// load; the same forms over a literal the plugin can read, and plain raw
// reads of untagged tables, run.
func TestFailClosedDynamicSQL(t *testing.T) {
	dynamic := map[string][]string{
		"postgres": {
			`SELECT query_to_xml('select * from acc' || 'ounts', true, false, '')`,
			`SELECT table_to_xml('accounts', true, false, '')`,
			`SELECT * FROM schema_to_xml('public', true, false, '')`,
			"DO $$ BEGIN EXECUTE format('UPDATE %I SET credit = 0', 'acc' || 'ounts'); END $$",
			"CREATE FUNCTION f_face() RETURNS void LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'UPDATE ' || quote_ident('acc' || 'ounts') || ' SET credit = 0'; END $$",
		},
		"mysql": {
			"EXECUTE IMMEDIATE CONCAT('UPDATE acc', 'ounts SET credit = 0')",
			"PREPARE s FROM @q",
			"CREATE PROCEDURE p_face() BEGIN SET @q = CONCAT('UPDATE acc', 'ounts SET credit = 0'); PREPARE s FROM @q; EXECUTE s; END",
		},
	}
	for _, d := range databases() {
		if dynamic[d.name] == nil {
			continue
		}
		t.Run(d.name, func(t *testing.T) {
			db, _ := setupModels(t, d, offlinelock.Config{Strict: true, Models: []any{&Account{}}})
			require.NoError(t, admin(db).Create(&Account{ID: 1, Credit: 100}).Error)
			for _, sql := range dynamic[d.name] {
				t.Run(sql, func(t *testing.T) {
					err := as(db, martin).Exec(sql).Error
					require.ErrorIs(t, err, offlinelock.ErrStrict)
					var rows []map[string]any
					err = as(db, martin).Raw(sql).Scan(&rows).Error
					require.Error(t, err)
					require.True(t, errors.Is(err, offlinelock.ErrUnenforceable) || errors.Is(err, offlinelock.ErrStrict), "%v", err)
				})
			}
			var a Account
			require.NoError(t, admin(db).First(&a, 1).Error)
			require.Equal(t, 100, a.Credit, "nothing ran")
			var n int
			require.NoError(t, as(db, martin).Raw("SELECT count(*) FROM customers").Scan(&n).Error, "a raw read of an untagged table runs")
		})
	}
}

// TestFailClosedRetargetingClauses: a clause that makes a write land on
// another table (clause.Insert{Table}, clause.Update{Table}, a DELETE's
// clause.From) is the write of that table: on a lockable table it is
// refused before any hook, and the table is unchanged; on an untagged one
// it runs.
func TestFailClosedRetargetingClauses(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{Models: []any{&Account{}}}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&Account{ID: 1, Name: "a", Credit: 100}).Error)
		require.NoError(t, admin(db).Create(&Customer{ID: 1, Name: "c", Credit: 100}).Error)
		accounts := clause.Table{Name: "accounts"}
		m := as(db, martin)
		cases := map[string]func() error{
			"update": func() error {
				return m.Model(&Customer{}).Clauses(clause.Update{Table: accounts}).Where("id = ?", 1).Update("credit", 0).Error
			},
			"insert": func() error {
				return m.Clauses(clause.Insert{Table: accounts}).Create(&Customer{ID: 7, Name: "x", Credit: 7}).Error
			},
			"delete": func() error {
				return m.Clauses(clause.From{Tables: []clause.Table{accounts}}).Delete(&Customer{}, 1).Error
			},
		}
		for name, write := range cases {
			t.Run(name, func(t *testing.T) {
				require.ErrorIs(t, write(), offlinelock.ErrUnenforceable)
				var got []Account
				require.NoError(t, admin(db).Order("id").Find(&got).Error)
				require.Len(t, got, 1)
				require.Equal(t, 100, got[0].Credit)
			})
		}
		t.Run("onto an untagged table it runs", func(t *testing.T) {
			require.NoError(t, m.Model(&Customer{}).Clauses(clause.Update{Table: clause.Table{Name: "customers"}}).Where("id = ?", 1).Update("credit", 5).Error)
			var c Customer
			require.NoError(t, db.First(&c, 1).Error)
			require.Equal(t, 5, c.Credit)
		})
	})
}

// TestFailClosedRandomOrderWithLimit: a locking load, or a write, ordered
// by a random expression with a LIMIT is refused (the rows checked need not
// be the rows returned or changed), with no lock left; the same with a
// column order runs, a column whose name contains "rand" included.
func TestFailClosedRandomOrderWithLimit(t *testing.T) {
	random := map[string]string{"sqlite": "random()", "postgres": "random()", "mysql": "RAND()"}
	eachDBWithModels(t, offlinelock.Config{Models: []any{&Account{}, &Doc{}}}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 3)
		name := db.Dialector.Name()
		m := as(db, martin)
		var a Account
		require.ErrorIs(t, m.Order(random[name]).First(&a).Error, offlinelock.ErrUnenforceable)
		require.ErrorIs(t, m.Order(random[name]).Limit(2).Find(&[]Account{}).Error, offlinelock.ErrUnenforceable)
		locks, err := p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		require.Empty(t, locks, "no lock left")
		require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "t"}).Error)
		_, err = p.Acquire(m, &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		if name == "mysql" { // UPDATE … ORDER BY … LIMIT is MySQL's
			err := m.Model(&Doc{}).Where("id > ?", 0).Order(random[name]).Limit(1).Update("title", "x").Error
			require.ErrorIs(t, err, offlinelock.ErrUnenforceable)
		}
		var d Doc
		require.NoError(t, db.First(&d, 1).Error)
		require.Equal(t, "t", d.Title)
		require.NoError(t, m.Order("id desc").First(&a).Error, "a column order runs")
		require.NoError(t, m.Order("name").Limit(1).Find(&[]Account{}).Error)
	})
}

// LongNamed is lockable, with a table name longer than PostgreSQL keeps.
type LongNamed struct {
	ID uint `gorm:"primaryKey" lock:"exclusive_read"`
	N  int
}

func (LongNamed) TableName() string {
	return "long_named_records_of_an_application_that_likes_descriptive_names_a_lot"
}

// TestFailClosedTruncatedNames: PostgreSQL reads any identifier by its
// first 63 bytes, so a longer spelling of a long lockable table's name is
// that table, for Strict and for raw reads alike; a name that differs
// within those bytes is another table.
func TestFailClosedTruncatedNames(t *testing.T) {
	db, _ := setup(t, database{"sqlite", openSQLite}, offlinelock.Config{Strict: true, Models: []any{&LongNamed{}}})
	name := LongNamed{}.TableName()
	other := name[:63] + "_but_longer_still"
	err := as(db, martin).Exec("UPDATE " + other + " SET n = 1").Error
	require.ErrorIs(t, err, offlinelock.ErrStrict)
	err = as(db, martin).Exec("UPDATE x" + name[1:63] + " SET n = 1").Error
	require.NotErrorIs(t, err, offlinelock.ErrStrict, "another table")
}
