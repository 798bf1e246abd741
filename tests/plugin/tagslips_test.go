package plugin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
)

// Models whose lock tag the plugin never reads (issue 36).
type (
	SlipInGorm struct {
		ID   uint `gorm:"primaryKey;lock:exclusive_write"`
		Name string
	}
	SlipPlural struct {
		ID   uint `gorm:"primaryKey" locks:"exclusive_write"`
		Name string
	}
	SlipCase struct {
		ID   uint `gorm:"primaryKey" Lock:"exclusive_write"`
		Name string
	}
)

// TestSlippedLockTagsAreErrors: a model whose tags show a lock tag the
// plugin does not read (inside the gorm tag, another spelling) makes
// db.Use fail when listed in Config.Models, and every lock call on it,
// with ErrInvalid naming the model, the field and the way to write it. A
// model with no lock tag at all makes db.Use fail when listed in
// Config.Models. A correctly tagged model beside them works, and an
// untagged model not listed still takes explicit locks.
func TestSlippedLockTagsAreErrors(t *testing.T) {
	slips := []struct {
		model any
		says  string
	}{
		{&SlipInGorm{ID: 1}, `field ID has its lock tag inside the gorm tag, which the plugin does not read: write it as a tag of its own`},
		{&SlipPlural{ID: 1}, `field ID has a tag "locks", which the plugin does not read: the tag is "lock"`},
		{&SlipCase{ID: 1}, `field ID has a tag "Lock", which the plugin does not read: the tag is "lock"`},
	}
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			for _, s := range slips {
				p := offlinelock.New(offlinelock.Config{Table: "ol_" + randomHex(6), Models: []any{s.model}})
				err := d.open(t).Use(p)
				require.ErrorIs(t, err, offlinelock.ErrInvalid)
				require.ErrorContains(t, err, "is not lockable")
				require.ErrorContains(t, err, s.says)
			}
			// A model with no lock tag at all, listed in Config.Models,
			// was meant to be lockable too.
			err := d.open(t).Use(offlinelock.New(offlinelock.Config{Table: "ol_" + randomHex(6), Models: []any{&Counter{}}}))
			require.ErrorIs(t, err, offlinelock.ErrInvalid)
			require.ErrorContains(t, err, "counters is not lockable: no lock tag on its primary key (model Counter;")
			db, p := setup(t, d, offlinelock.Config{Models: []any{&Doc{}}})
			for _, s := range slips {
				_, err := p.Acquire(as(db, martin), s.model, offlinelock.Write)
				require.ErrorIs(t, err, offlinelock.ErrInvalid, "%T", s.model)
				require.ErrorContains(t, err, s.says)
				_, err = p.Holders(as(db, martin), s.model)
				require.ErrorIs(t, err, offlinelock.ErrInvalid, "%T", s.model)
			}
			fcDropCleanup(t, db, &Doc{}, &Counter{})
			require.NoError(t, db.AutoMigrate(&Doc{}, &Counter{}))
			require.NoError(t, admin(db).Create(&Doc{ID: 1, Title: "t"}).Error)
			_, err = p.Acquire(as(db, martin), &Doc{ID: 1}, offlinelock.Write)
			require.NoError(t, err, "a correctly tagged model")
			require.ErrorIs(t, as(db, david).Save(&Doc{ID: 1, Title: "x"}).Error, offlinelock.ErrLocked)
			_, err = p.Acquire(as(db, martin), &Counter{ID: 1}, offlinelock.Write)
			require.NoError(t, err, "an untagged model takes explicit locks")
		})
	}
}
