package main

import (
	"net/http"
	"strings"
	"testing"

	"gorm.io/gorm"
)

// TestAdminsTakeOver: the operator may take over anyone's order lock, a
// client only its own; the old holder's token writes nothing afterwards.
func TestAdminsTakeOver(t *testing.T) {
	eachDatabase(t, func(t *testing.T, dsn string, _ func() *gorm.DB) {
		base := start(t, dsn)
		old := take(t, base, "usr_client_1", "ord_99182")
		bearer := func(user, token string) map[string]string {
			return map[string]string{"Authorization": "Bearer " + user, "Lock-Token": token, "Content-Type": "application/json"}
		}
		if resp, body := do(t, "POST", base+"/orders/ord_99182/lock/takeover", strings.NewReader(`{}`), bearer("usr_client_2", "")); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("another client's take-over: %d %s", resp.StatusCode, body)
		}
		resp, body := do(t, "POST", base+"/orders/ord_99182/lock/takeover", strings.NewReader(`{"reason": "customer called"}`), bearer("admin", ""))
		if resp.StatusCode != http.StatusCreated || len(resp.Header.Get("Lock-Token")) != 32 {
			t.Fatalf("the operator's take-over: %d %s", resp.StatusCode, body)
		}
		if resp, body := do(t, "PATCH", base+"/orders/ord_99182", strings.NewReader(`{"status": "PAID"}`), bearer("usr_client_1", old)); resp.StatusCode != http.StatusLocked {
			t.Fatalf("the old holder's write: %d %s", resp.StatusCode, body)
		}
		if resp, body := do(t, "PATCH", base+"/orders/ord_99182", strings.NewReader(`{"status": "PAID"}`), bearer("admin", resp.Header.Get("Lock-Token"))); resp.StatusCode != http.StatusOK {
			t.Fatalf("the operator's write: %d %s", resp.StatusCode, body)
		}
	})
}
