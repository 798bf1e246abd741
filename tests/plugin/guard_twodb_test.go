package plugin_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// secondDatabase creates a database of a unique name on db's server,
// dropped after the test, and opens GORM on it.
func secondDatabase(t *testing.T, db *gorm.DB) (*gorm.DB, string) {
	t.Helper()
	name := "ol_second_" + randomHex(4)
	require.NoError(t, db.Exec(`CREATE DATABASE `+name).Error)
	var dsn string
	if db.Dialector.Name() == "mysql" {
		head, tail, ok := strings.Cut(dsnOf("mysql"), ")/")
		require.True(t, ok)
		_, params, _ := strings.Cut(tail, "?")
		dsn = head + ")/" + name + "?" + params
	} else {
		dsn = dsnOf("postgres") + " dbname=" + name
	}
	other, err := gorm.Open(dialectorOf(db.Dialector.Name(), dsn), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	sqlDB, _ := other.DB()
	t.Cleanup(func() {
		sqlDB.Close()
		if db.Dialector.Name() == "postgres" {
			db.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`)
			return
		}
		db.Exec(`DROP DATABASE IF EXISTS ` + name)
	})
	return other, dsn
}

// TestOnePluginTwoDatabases: one Plugin registered on two databases
// installs the guard on each, and each database's guard refuses its own
// held records and lets its free ones be written.
func TestOnePluginTwoDatabases(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			first := d.open(t)
			second, secondDSN := secondDatabase(t, first)
			table := "ol_two_" + randomHex(4)
			p := offlinelock.New(offlinelock.Config{Table: table, Models: []any{&GdCustomer{}}, Logger: slog.New(slog.DiscardHandler)})
			for _, db := range []*gorm.DB{first, second} {
				fcDropCleanup(t, db, &GdCustomer{})
				require.NoError(t, db.AutoMigrate(&GdCustomer{}))
				require.NoError(t, db.Use(p))
				t.Cleanup(func() {
					p.RemoveGuard(db)
					db.Exec(`DROP TABLE IF EXISTS ` + table + `, ` + table + `_generation, ` + table + `_tables`)
				})
				require.NoError(t, admin(db).Create(&[]GdCustomer{{ID: 129, Name: "Acme"}, {ID: 130, Name: "Free"}}).Error)
			}
			_, err := p.Acquire(as(first, martin), &GdCustomer{ID: 129}, offlinelock.Write)
			require.NoError(t, err)
			_, err = p.Acquire(as(second, david), &GdCustomer{ID: 129}, offlinelock.Write)
			require.NoError(t, err, "each database has its own locks")

			for _, c := range []struct {
				dsn    string
				holder string
			}{{dsnOf(d.name), "martin"}, {secondDSN, "david"}} {
				plain, err := gorm.Open(dialectorOf(d.name, c.dsn), &gorm.Config{Logger: logger.Discard})
				require.NoError(t, err)
				sqlDB, _ := plain.DB()
				t.Cleanup(func() { sqlDB.Close() })
				err = plain.Exec(`UPDATE gd_customers SET credit = 1 WHERE id = 129`).Error
				require.ErrorContains(t, err, "OL423")
				require.ErrorContains(t, err, "gd_customers 129 is locked by "+c.holder)
				require.NoError(t, plain.Exec(`UPDATE gd_customers SET credit = 1 WHERE id = 130`).Error, "a free record, on the database whose guard db.Use installed second")
			}
			require.NoError(t, as(second, david).Model(&GdCustomer{ID: 129}).Update("credit", 5).Error, "the holder on the second database")
			require.ErrorIs(t, as(second, martin).Model(&GdCustomer{ID: 129}).Update("credit", 6).Error, offlinelock.ErrLocked)
			tables, err := p.GuardedTables(second)
			require.NoError(t, err)
			require.Equal(t, []string{"gd_customers"}, tables)
		})
	}
}

// TestGuardPerSchema: a lock table per schema (schema-per-tenant, each
// tenant's connection on its own search_path): install, status and
// remove act on the lock table's own schema only.
func TestGuardPerSchema(t *testing.T) {
	admin := openPostgres(t)
	var tenants, plains []*gorm.DB
	var ps []*offlinelock.Plugin
	for i := range 2 {
		schema := "ol_tenant_" + randomHex(4)
		require.NoError(t, admin.Exec(`CREATE SCHEMA `+schema).Error)
		t.Cleanup(func() { admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`) })
		db, err := gorm.Open(dialectorOf("postgres", dsnOf("postgres")+" search_path="+schema), &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		sqlDB, _ := db.DB()
		t.Cleanup(func() { sqlDB.Close() })
		plain, err := gorm.Open(dialectorOf("postgres", dsnOf("postgres")+" search_path="+schema), &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		plainDB, _ := plain.DB()
		t.Cleanup(func() { plainDB.Close() })
		plains = append(plains, plain)
		require.NoError(t, db.AutoMigrate(&GdCustomer{}))
		p := offlinelock.New(offlinelock.Config{Models: []any{&GdCustomer{}}, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, db.Use(p), "tenant %d", i)
		require.NoError(t, plain.Create(&GdCustomer{ID: 129, Name: "Acme"}).Error)
		_, err = p.Acquire(as(db, martin), &GdCustomer{ID: 129}, offlinelock.Write)
		require.NoError(t, err)
		tenants, ps = append(tenants, db), append(ps, p)
	}
	for i, db := range tenants {
		tables, err := ps[i].GuardedTables(db)
		require.NoError(t, err)
		require.Equal(t, []string{"gd_customers"}, tables, "tenant %d counts its own", i)
	}
	require.NoError(t, ps[0].RemoveGuard(tenants[0]))
	tables, err := ps[0].GuardedTables(tenants[0])
	require.NoError(t, err)
	require.Empty(t, tables)
	tables, err = ps[1].GuardedTables(tenants[1])
	require.NoError(t, err)
	require.Equal(t, []string{"gd_customers"}, tables, "the other tenant's guard stays")
	err = plains[1].Exec(`UPDATE gd_customers SET credit = 1 WHERE id = 129`).Error
	require.ErrorContains(t, err, "OL423", "and still refuses")
	require.NoError(t, plains[0].Exec(`UPDATE gd_customers SET credit = 1 WHERE id = 129`).Error, "removed where asked")
}
