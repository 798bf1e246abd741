package offlinelock

import (
	"testing"

	"github.com/offlinelock/offlinelock/internal/watch"
)

// TestWatchNamesAreTheHubs: the public names of Watch's events, reasons
// and limits spell what internal/watch writes and reads (the root keeps
// them as literals, so that go doc shows their values).
func TestWatchNamesAreTheHubs(t *testing.T) {
	for _, c := range [][2]string{
		{string(EventLocked), watch.Locked}, {string(EventReleased), watch.Released},
		{string(EventTakenOver), watch.TakenOver}, {string(EventExpiring), watch.Expiring},
		{string(EventRequested), watch.Requested}, {string(EventViewers), watch.Viewers},
		{ReasonReleased, watch.ReasonReleased}, {ReasonSignedOut, watch.ReasonSignedOut},
		{ReasonExpired, watch.ReasonExpired}, {ReasonTakenOver, watch.ReasonTakenOver},
		{ReasonForceReleased, watch.ReasonForceReleased},
	} {
		if c[0] != c[1] {
			t.Errorf("the root says %q where internal/watch says %q", c[0], c[1])
		}
	}
	if DefaultExpiringWithin != watch.ExpiringWithin || ViewerGone != watch.ViewerGone || RequestsPerMinute != watch.RequestsPerMinute {
		t.Errorf("the limits differ: %v %v %v", DefaultExpiringWithin, ViewerGone, RequestsPerMinute)
	}
}
