package plugin_test

// The topologies the pooler and cluster tests start
// (testkit/topology.go), moved here from the root package with them; the
// replica and failover tests use testkit's directly.

import (
	"testing"

	"github.com/offlinelock/offlinelock/internal/testkit"
)

// startPgBouncer starts PgBouncer in transaction mode in front of the main
// PostgreSQL server and returns its port.
func startPgBouncer(t *testing.T) int { return testkit.StartPgBouncer(t) }

// startGalera starts a 3-node MariaDB Galera cluster and returns a DSN
// for each node.
func startGalera(t *testing.T) []string { return testkit.StartGalera(t) }
