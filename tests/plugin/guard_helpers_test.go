package plugin_test

// Helpers of the guard's tests moved here from the library's folder
// because they use only its public API (issue 49), named as the root
// package's helpers and models (guard_test.go, guard_order_test.go,
// guard_forge_test.go, cascade_parent_test.go, attack_fold_test.go,
// mysql_statements_test.go, db_test.go, noguard_nogrant_test.go); the
// models and setups both use live once in internal/testkit
// (models_guard.go, roles.go).

import (
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// The guard's models and setups are testkit's (models_guard.go), shared
// with the root package's tests.
type (
	// GdCustomer is a root locked by Acquire (exclusive_write).
	GdCustomer = testkit.GdCustomer
	// GdOrder is a root with members (GdLine) and tags (many2many).
	GdOrder = testkit.GdOrder
	// GdLine is a member of its order's aggregate.
	GdLine = testkit.GdLine
	// GdNote is locked by Acquire; its folder's delete cascades to it.
	GdNote = testkit.GdNote
)

// gdSetup is testkit.GdSetup on d: martin holds customer 129, order 1
// and note 1 (customer 130, order 2, note 2 free).
func gdSetup(t *testing.T, d database, cfg offlinelock.Config) (*gorm.DB, *offlinelock.Plugin) {
	return testkit.GdSetup(t, d.open(t), cfg)
}

// lineOf reads line id through another client (testkit.LineOf).
func lineOf(t *testing.T, db *gorm.DB, id uint) GdLine { return testkit.LineOf(t, db, id) }

// mysqlDatabase is MariaDB (or MySQL), skipped without its DSN.
func mysqlDatabase() database { return databases()[2] }

func openMySQL(t testing.TB) *gorm.DB { return testkit.OpenMySQL(t) }

// lockTableOf is p's lock table's name (Config.Table), as the root's test
// hook Plugin.TableName gives it: the notes table among p's feature tables
// is named "<Config.Table>_notes" (docs/lock-table.md, docs/guard.md).
func lockTableOf(p *offlinelock.Plugin) string {
	for _, name := range p.FeatureTables() {
		if table, ok := strings.CutSuffix(name, "_notes"); ok {
			return table
		}
	}
	panic("offlinelock: no notes table among the feature tables")
}

// requireUnguardedRefusal asserts err is the refusal of a grant for a
// missing guard of table (testkit.RequireUnguardedRefusal).
func requireUnguardedRefusal(t *testing.T, err error, table string) {
	t.Helper()
	testkit.RequireUnguardedRefusal(t, err, table)
}
