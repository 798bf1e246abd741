package lockstore

import (
	"strings"
	"testing"
)

// The engines that speak a supported server's protocol without being it
// are named, and the supported servers pass (issue 48).
func TestRefuseEngine(t *testing.T) {
	for _, tc := range []struct{ version, refused string }{
		{"PostgreSQL 15.14 (Debian 15.14-0+deb12u1) on x86_64-pc-linux-gnu", ""},
		{"10.11.19-MariaDB-0+deb12u1", ""},
		{"8.0.36", ""},
		{"CockroachDB CCL v23.2.4 (x86_64-pc-linux-gnu, built 2024/04/08 21:41:08, go1.21.8 X:nocoverageredesign)", "CockroachDB is not supported"},
		{"PostgreSQL 11.2-YB-2.20.1.0-b0 on x86_64-pc-linux-gnu", "YugabyteDB is not supported"},
		{"8.0.11-TiDB-v7.5.0", "TiDB is not supported"},
	} {
		err := refuseEngine(tc.version)
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.version, err)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s: want %q, got %v", tc.version, tc.refused, err)
		}
	}
}
