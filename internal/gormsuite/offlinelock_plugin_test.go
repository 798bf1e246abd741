package tests_test

// offlinelock: this file is not part of GORM's tests. It registers the
// offlinelock plugin on the suite's shared DB (opened, pinged and migrated
// by init() in tests_test.go) before any test runs. TestMain runs after every
// init() of the package, so no file-ordering trick is involved. Set
// OFFLINELOCK_GORM_SUITE_PLAIN=1 to run GORM's suite without the plugin.

import (
	"log"
	"os"
	"testing"

	"github.com/offlinelock/offlinelock"
)

// offlinelockTable is the plugin's lock table in the suite's database.
const offlinelockTable = "offlinelock_gorm_suite"

func TestMain(m *testing.M) {
	if os.Getenv("OFFLINELOCK_GORM_SUITE_PLAIN") == "1" {
		log.Println("offlinelock: plugin NOT registered (OFFLINELOCK_GORM_SUITE_PLAIN=1)")
	} else {
		if err := DB.Use(offlinelock.New(offlinelock.Config{Table: offlinelockTable})); err != nil {
			log.Printf("offlinelock: registering the plugin failed: %v", err)
			os.Exit(1)
		}
		if DB.Callback().Query().Get("offlinelock:before_query") == nil {
			log.Printf("offlinelock: plugin registered but its callbacks are missing")
			os.Exit(1)
		}
		log.Printf("offlinelock: plugin registered, lock table %q", offlinelockTable)
	}
	os.Exit(m.Run())
}
