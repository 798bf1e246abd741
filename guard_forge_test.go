package offlinelock_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// The holder's right is not forgeable (issue 33, family 7): what lets a
// write past the guard as a session (PostgreSQL's offlinelock.session and
// offlinelock.proof, MariaDB's max_join_size mark and sql_select_limit
// proof) is keyed with the guard's key, which a role with DML on the
// business tables alone cannot read. Such a client that claims the
// holder's session, in every form it can compute from public values (the
// session id, the lock table's name, the record), is refused; and a claim
// of the plugin's fenced branch does not buy a read of an old snapshot.

// forgeCase is one forged claim: the settings a client sends before, or
// the prefix it puts on, its write of a held record.
type forgeCase struct{ name, claim string }

// TestGuardRightIsNotForgeableOnPostgres: an ordinary role sets the
// identity and proof the plugin sets, as they were before the key and
// with a signature it made up, and is refused the held record; the key is
// closed to it.
func TestGuardRightIsNotForgeableOnPostgres(t *testing.T) {
	db, p, table := gdSubSetup(t)
	_, w := pgRole(t, db, testkit.PGWriterGrants...)
	require.ErrorContains(t, w.Exec(`SELECT spec FROM `+table+`_tables`).Error, "42501", "the catalog, and the key in it, are closed to it")

	unkeyed := func(claim string) string {
		h := sha256.Sum256([]byte(claim))
		return claim + "/" + hex.EncodeToString(h[:])
	}
	proof := strconv.Itoa(len(table)) + ":" + table + "2:M112:gd_customers129" // the proof (FenceCondition) of martin's 129, from public values
	cases := []forgeCase{
		{"the session, as before the key", `SELECT set_config('offlinelock.session', 's:M1', false)`},
		{"the fenced session", `SELECT set_config('offlinelock.session', 'f:M1', false)`},
		{"a signature without the key", `SELECT set_config('offlinelock.session', '` + unkeyed("s:M1") + `', false)`},
		{"a zero signature", `SELECT set_config('offlinelock.session', 's:M1/` + strings.Repeat("0", 64) + `', false)`},
		{"a fence's proof", `SELECT set_config('offlinelock.session', '` + unkeyed("f:M1") + `', false), set_config('offlinelock.proof', '` + proof + `', false)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, w.Exec(c.claim).Error)
			t.Cleanup(func() { w.Exec(`RESET offlinelock.session; RESET offlinelock.proof`) })
			err := w.Exec(`UPDATE gd_customers SET credit = 0 WHERE id = 129`).Error
			require.True(t, refusedByGuard(err, "gd_customers", "129"), "want the guard's refusal, got %v", err)
			err = w.Exec(`DELETE FROM gd_lines WHERE id = 1`).Error
			require.True(t, refusedByGuard(err, "gd_orders", "1"), "a member: want the guard's refusal, got %v", err)
			require.NoError(t, w.Exec(`UPDATE gd_customers SET credit = 1 WHERE id = 130`).Error, "a free record")
		})
	}
	t.Run("an old snapshot with a fenced claim", func(t *testing.T) {
		conn := testkit.Pinned(t, w)
		ctx := context.Background()
		_, err := conn.ExecContext(ctx, `BEGIN ISOLATION LEVEL REPEATABLE READ`)
		require.NoError(t, err)
		defer conn.ExecContext(ctx, `ROLLBACK`)
		var n int
		require.NoError(t, conn.QueryRowContext(ctx, `SELECT count(*) FROM gd_customers`).Scan(&n)) // the snapshot
		_, err = p.Acquire(as(db, martin), &GdCustomer{ID: 130}, offlinelock.Write)
		require.NoError(t, err)
		t.Cleanup(func() { p.Release(as(db, martin), &GdCustomer{ID: 130}) })
		_, err = conn.ExecContext(ctx, `SELECT set_config('offlinelock.session', 'f:M1', true)`)
		require.NoError(t, err)
		_, err = conn.ExecContext(ctx, `UPDATE gd_customers SET credit = 0 WHERE id = 130`)
		require.True(t, refusedByGuard(err, "gd_customers", "130") || strings.Contains(fmt.Sprint(err), "40001"), "want a refusal, got %v", err)
	})
	// the plugin's own writes, signed in the database, still pass
	require.NoError(t, as(db, martin).Model(&GdCustomer{ID: 129}).Update("credit", 55).Error)
	var credit []int
	require.NoError(t, db.Raw(`SELECT credit FROM gd_customers ORDER BY id`).Scan(&credit).Error)
	require.Equal(t, []int{55, 1}, credit)
}

// TestGuardRightIsNotForgeableOnMariaDB: a user with DML on two business
// tables sends the marks and proofs the plugin sends, computed as they
// were before the key, and is refused; the fenced bit does not spare it
// the locking read (an old REPEATABLE READ snapshot sees the grant).
func TestGuardRightIsNotForgeableOnMariaDB(t *testing.T) {
	table := "ol_forge_" + randomHex(4)
	db, p := gdSetup(t, database{"mysql", openMySQL}, offlinelock.Config{Table: table})
	require.NotEmpty(t, offlinelock.GuardKeyOf(p, db), "db.Use read the guard's key")
	svc := testkit.MyUser(t, db, `GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.gd_customers TO %s`, `GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.gd_lines TO %s`)
	require.ErrorContains(t, svc.Exec(`SELECT spec FROM `+table+`_tables`).Error, "1142", "the catalog, and the key in it, are closed to it")

	mark := func(fenced bool) string {
		return strconv.FormatUint(offlinelock.SessionMark("", martin.Session, fenced), 10)
	}
	proofOf := func(res, id string) string {
		h := sha256.Sum256([]byte(table + "\x00" + res + "\x00" + id))
		return strconv.FormatUint(binary.BigEndian.Uint64(h[:8])>>4<<1|1<<63|1, 10)
	}
	cases := []forgeCase{
		{"the session's mark, as before the key", "SET STATEMENT max_join_size=" + mark(false) + " FOR "},
		{"the fenced mark", "SET STATEMENT max_join_size=" + mark(true) + " FOR "},
		{"a proof", "SET STATEMENT max_join_size=" + mark(true) + ", sql_select_limit=" + proofOf("gd_customers", "129") + " FOR "},
		{"a member's proof", "SET STATEMENT max_join_size=" + mark(true) + ", sql_select_limit=" + proofOf("gd_orders", "1") + " FOR "},
		{"the unkeyed blank", "SET STATEMENT max_join_size=" + mark(true) + ", sql_select_limit=9223372036854775808 FOR "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := svc.Exec(c.claim + `UPDATE gd_customers SET credit = 0 WHERE id = 129`).Error
			require.True(t, refusedByGuard(err, "gd_customers", "129"), "want the guard's refusal, got %v", err)
			err = svc.Exec(c.claim + `DELETE FROM gd_lines WHERE id = 1`).Error
			require.True(t, refusedByGuard(err, "gd_orders", "1"), "a member: want the guard's refusal, got %v", err)
			require.NoError(t, svc.Exec(c.claim+`UPDATE gd_customers SET credit = 1 WHERE id = 130`).Error, "a free record")
		})
	}
	t.Run("an old snapshot with the fenced mark", func(t *testing.T) {
		conn := testkit.Pinned(t, svc)
		ctx := context.Background()
		_, err := conn.ExecContext(ctx, `SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ`)
		require.NoError(t, err)
		_, err = conn.ExecContext(ctx, `START TRANSACTION WITH CONSISTENT SNAPSHOT`)
		require.NoError(t, err)
		defer conn.ExecContext(ctx, `ROLLBACK`)
		var n int
		require.NoError(t, conn.QueryRowContext(ctx, `SELECT count(*) FROM gd_customers`).Scan(&n))
		_, err = p.Acquire(as(db, martin), &GdCustomer{ID: 130}, offlinelock.Write)
		require.NoError(t, err)
		t.Cleanup(func() { p.Release(as(db, martin), &GdCustomer{ID: 130}) })
		_, err = conn.ExecContext(ctx, `SET @offlinelock_fenced = 1`) // the variable the trigger hands the procedure: set again by it
		require.NoError(t, err)
		_, err = conn.ExecContext(ctx, "SET STATEMENT max_join_size="+strconv.FormatUint(offlinelock.SessionMark("", "nobody", true), 10)+
			", sql_select_limit=9223372036854775808 FOR UPDATE gd_customers SET credit = 0 WHERE id = 130")
		require.True(t, refusedByGuard(err, "gd_customers", "130"), "want the guard's refusal, got %v", err)
	})
	require.NoError(t, as(db, martin).Model(&GdCustomer{ID: 129}).Update("credit", 55).Error, "the holder's own write")
	var credit []int
	require.NoError(t, db.Raw(`SELECT credit FROM gd_customers ORDER BY id`).Scan(&credit).Error)
	require.Equal(t, []int{55, 1}, credit)
	var qty int
	require.NoError(t, db.Raw(`SELECT count(*) FROM gd_lines WHERE id = 1`).Scan(&qty).Error)
	require.Equal(t, 1, qty)
}
