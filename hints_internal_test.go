package offlinelock

import (
	"strconv"
	"testing"
	"time"
)

// TestHintsStayBoundedOverManySessions: a long-running process serves a
// million short sessions, each taking locks and ending (by release, by
// ReleaseAll, or by walking away); the hint table never holds more than
// maxHints locks, nor more sessions than locks.
func TestHintsStayBoundedOverManySessions(t *testing.T) {
	var h hints
	exp := time.Now().Add(time.Hour)
	most := 0
	for i := 0; i < 1_000_000; i++ {
		s := "s" + strconv.Itoa(i)
		k := key{Resource: "docs", ID: strconv.Itoa(i % 1000)}
		h.put(s, k, exp)
		switch i % 3 {
		case 0:
			h.drop(s, k)
		case 1:
			h.dropSession(s)
		} // case 2: the session walks away holding its lock
		if h.n > maxHints || len(h.m) > h.n {
			t.Fatalf("after %d sessions: %d hints in %d sessions, bound %d", i+1, h.n, len(h.m), maxHints)
		}
		most = max(most, len(h.m))
	}
	if most > maxHints {
		t.Fatalf("the table reached %d sessions", most)
	}
	h.put("last", key{Resource: "docs", ID: "1"}, exp)
	h.dropKey(key{Resource: "docs", ID: "1"})
	if _, ok := h.m["last"]; ok {
		t.Fatal("dropKey left an empty session behind")
	}
}
