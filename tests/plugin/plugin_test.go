package plugin_test

// The plugin in GORM: registering it (a bad Config is reported, twice is
// harmless), migrating its lock table, leaving models without the tag
// untouched, the owner every statement on a lockable model needs or the
// Bypass that stands in for it, dry runs, and errors that read well and
// stay matchable through GORM's chain.

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

func TestBadConfigIsReported(t *testing.T) {
	db := openSQLite(t)
	for _, cfg := range []offlinelock.Config{
		{Table: `locks"; DROP TABLE x; --`},
		{TTL: -time.Second},
	} {
		p := offlinelock.New(cfg)
		require.ErrorIs(t, db.Use(p), offlinelock.ErrInvalid)
		_, err := p.Acquire(as(db, martin), &Customer{ID: 1}, offlinelock.Write)
		require.ErrorIs(t, err, offlinelock.ErrInvalid)
	}
}

func TestMigrationIsIdempotentAndSafeInParallel(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, _ := setup(t, d, offlinelock.Config{})
			table := "ol_" + randomHex(6)
			t.Cleanup(func() {
				db.Exec(`DROP TABLE IF EXISTS "` + table + `"`)
				db.Exec(`DROP TABLE IF EXISTS "` + table + `_generation"`)
				db.Exec(`DROP SEQUENCE IF EXISTS "` + table + `_generation"`)
			})
			p := offlinelock.New(offlinelock.Config{Table: table})
			var wg sync.WaitGroup
			errs := make([]error, 8)
			for i := range errs {
				wg.Add(1)
				go func() { defer wg.Done(); errs[i] = p.Migrate(db) }()
			}
			wg.Wait()
			for _, err := range errs {
				require.NoError(t, err)
			}
			require.NoError(t, p.Migrate(db))
			_, err := p.Acquire(as(db, martin), &Customer{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
		})
	}
}

func TestRegisteringTwiceIsHarmless(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		assert.ErrorIs(t, db.Use(p), gorm.ErrRegistered)
		assert.ErrorIs(t, db.Use(offlinelock.New(offlinelock.Config{Table: "ol_other"})), gorm.ErrRegistered)
		seedAccounts(t, db, 1)
		require.NoError(t, as(db, martin).First(&Account{}, 1).Error)
		h, err := p.Holders(db, &Account{ID: 1})
		require.NoError(t, err)
		assert.Len(t, h, 1)
	})
}

// TestUntaggedModelsAreUntouched compares a database with the plugin to
// one without: same SQL, same results, same errors.
func TestUntaggedModelsAreUntouched(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			with, _ := setupModels(t, d, offlinelock.Config{})
			without := d.open(t)
			require.NoError(t, without.AutoMigrate(&Customer{}))
			require.NoError(t, without.Save(&Customer{ID: 1, Name: "Acme"}).Error)
			require.NoError(t, with.Save(&Customer{ID: 1, Name: "Acme"}).Error)
			for _, db := range []*gorm.DB{with, without} {
				var c Customer
				require.NoError(t, db.First(&c, 1).Error)
				assert.Equal(t, "Acme", c.Name)
				assert.ErrorIs(t, db.First(&c, 2).Error, gorm.ErrRecordNotFound)
				require.NoError(t, db.Model(&c).Update("credit", 7).Error)
			}
			sql := func(db *gorm.DB) string {
				return db.ToSQL(func(tx *gorm.DB) *gorm.DB { return tx.Where("name = ?", "x").Find(&[]Customer{}) }) +
					db.ToSQL(func(tx *gorm.DB) *gorm.DB { return tx.Model(&Customer{ID: 1}).Update("name", "y") })
			}
			assert.Equal(t, sql(without), sql(with))
		})
	}
}

func TestNoOwnerReadsAndWritesNothing(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 2)
		before := Account{Name: "untouched"}
		got := before
		require.ErrorIs(t, db.First(&got, 1).Error, offlinelock.ErrNoOwner)
		assert.Equal(t, before, got)
		var list []Account
		require.ErrorIs(t, db.Find(&list).Error, offlinelock.ErrNoOwner)
		assert.Empty(t, list)
		require.ErrorIs(t, db.Create(&Account{ID: 9}).Error, offlinelock.ErrNoOwner)
		var n int64
		require.NoError(t, db.Model(&Account{}).Count(&n).Error)
		assert.EqualValues(t, 2, n, "Count reveals no row and needs no owner")
		all, err := p.List(db, offlinelock.Filter{})
		require.NoError(t, err)
		assert.Empty(t, all)
	})
}

func TestBypassIsLoggedWithItsReason(t *testing.T) {
	var logs bytes.Buffer
	cfg := offlinelock.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	eachDBWithModels(t, cfg, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		logs.Reset()
		ctx := offlinelock.Bypass(context.Background(), "nightly import")
		require.NoError(t, db.WithContext(ctx).Create(&Account{ID: 1, Name: "a"}).Error)
		var a Account
		require.NoError(t, db.WithContext(ctx).First(&a, 1).Error)
		require.NoError(t, db.WithContext(ctx).Model(&a).Update("credit", 5).Error)
		all, err := p.List(db, offlinelock.Filter{})
		require.NoError(t, err)
		assert.Empty(t, all, "a bypass takes no locks")
		assert.Equal(t, 3, strings.Count(logs.String(), `reason="nightly import"`))
		empty := db.WithContext(offlinelock.Bypass(context.Background(), " "))
		require.ErrorIs(t, empty.First(&a, 1).Error, offlinelock.ErrInvalid, "a bypass needs a reason")
	})
}

func TestDryRunWritesNoLocks(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		dry := as(db, martin).Session(&gorm.Session{DryRun: true})
		stmt := dry.First(&Account{}, 1).Statement
		assert.Contains(t, stmt.SQL.String(), "accounts")
		require.NoError(t, dry.Model(&Account{ID: 1}).Update("credit", 1).Error)
		all, err := p.List(db, offlinelock.Filter{})
		require.NoError(t, err)
		assert.Empty(t, all)
	})
}

func TestErrorsStayMatchableUnderGORMs(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedAccounts(t, db, 1)
		other := errors.New("another plugin's error")
		// Another callback adds its error after the plugin's, before the chain ends.
		require.NoError(t, db.Callback().Query().After("gorm:after_query").Register("test:after", func(db *gorm.DB) {
			if db.Statement.Table == "accounts" {
				db.AddError(other)
			}
		}))
		t.Cleanup(func() { db.Callback().Query().Remove("test:after") })
		_, err := p.Acquire(as(db, david), &Account{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		err = as(db, martin).First(&Account{}, 1).Error
		assert.ErrorIs(t, err, offlinelock.ErrLocked)
		assert.ErrorIs(t, err, other)
		var le *offlinelock.LockedError
		assert.ErrorAs(t, err, &le)
	})
}

func TestLockedErrorReadsAsAPersonWouldWantIt(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 5, 0, time.UTC)
	err := error(&offlinelock.LockedError{Resource: "customers", ID: "129", Wanted: offlinelock.Write,
		Holders: []offlinelock.Lock{{Owner: martin, Access: offlinelock.Write, AcquiredAt: at, ExpiresAt: at.Add(30 * time.Minute)}}})
	assert.Equal(t, "customers 129 is locked by martin since 10:00:05 until 10:30:05 (UTC)", err.Error())
	assert.ErrorIs(t, err, offlinelock.ErrLocked)
	assert.NotErrorIs(t, err, offlinelock.ErrNotLocked)
}
