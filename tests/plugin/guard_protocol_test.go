package plugin_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// The guard carries its protocol in the catalog; a node whose code speaks
// an older one never replaces a newer guard: its install fails naming the
// upgrade (ErrGuardProtocol), and the guard goes on refusing held writes
// and letting free ones through (issue 48).
func TestGuardProtocolNewerIsLeftAlone(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := gdSetup(t, d, offlinelock.Config{})
			catalog := lockTableOf(p) + "_tables"
			var spec string
			require.NoError(t, db.Raw(`SELECT spec FROM `+catalog+` WHERE name = 'offlinelock:guard protocol'`).Scan(&spec).Error)
			require.Equal(t, "2", spec, "the install records its protocol")
			before, err := p.GuardedTables(db)
			require.NoError(t, err)

			require.NoError(t, plainGORM(t, db).Exec(`UPDATE `+catalog+` SET spec = '3' WHERE name = 'offlinelock:guard protocol'`).Error)
			err = p.InstallGuard(db)
			require.ErrorIs(t, err, offlinelock.ErrGuardProtocol)
			assert.Contains(t, err.Error(), "protocol 3 is installed and this node speaks 2: upgrade")
			after, err := p.GuardedTables(db)
			require.NoError(t, err)
			assert.Equal(t, before, after, "the newer guard is left as it is")
			held := testkit.RawOn("UPDATE `gd_customers` SET credit = 1 WHERE id = 129")(t, db, p)
			assert.True(t, refusedByGuard(held, "gd_customers", "129"), "got %v", held)
			assert.NoError(t, testkit.RawOn("UPDATE `gd_customers` SET credit = 1 WHERE id = 130")(t, db, p))
		})
	}
}

// A node started against a guard of a newer protocol serves its
// statements but grants nothing, naming the upgrade (issue 48).
func TestGuardProtocolNewerRefusesGrantsOnly(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := gdSetup(t, d, offlinelock.Config{})
			catalog := lockTableOf(p) + "_tables"
			require.NoError(t, plainGORM(t, db).Exec(`UPDATE `+catalog+` SET spec = '3' WHERE name = 'offlinelock:guard protocol'`).Error)
			node := d.open(t)
			p2 := offlinelock.New(offlinelock.Config{Table: lockTableOf(p), Models: []any{&GdCustomer{}, &GdOrder{}, &GdLine{}, &GdNote{}}})
			useErr := node.Use(p2)
			t.Logf("db.Use: %v", useErr)
			_, err := p2.Acquire(as(node, david), &GdCustomer{ID: 130}, offlinelock.Write)
			require.Error(t, err, "no grant from a node that does not speak the guard's protocol")
			assert.ErrorIs(t, err, offlinelock.ErrUnenforceable)
			assert.Contains(t, err.Error(), "Upgrade this node")
			var held int64
			require.NoError(t, db.Raw(`SELECT COUNT(*) FROM `+lockTableOf(p)+` WHERE lock_id = '130' AND holder = ''`).Scan(&held).Error)
			assert.Zero(t, held, "nothing written to the lock table")
			assert.NoError(t, as(node, david).Model(&testkit.GdTag{ID: 1}).Update("name", "served").Error, "a write of an untagged table is served")
			var c GdCustomer
			assert.NoError(t, as(node, david).First(&c, 130).Error, "a read is served")
		})
	}
}
