package offlinelock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// Prepared transactions (issue 47, MariaDB): XA PREPARE releases the
// shared locks that order a write against a grant, and keeps the
// exclusive locks of the rows it wrote. A grant probes its record's rows
// in every table of the aggregate with a locking read, so a write
// prepared before it refuses it as being written (within its 2 s wait),
// whatever the writer's isolation level, while the same write of another
// record lets it through; once the prepared write commits, the grant is
// given, after it.
func TestGuardOrdersPreparedTransactions(t *testing.T) {
	d := mysqlDatabase()
	cases := []struct {
		name, write   string
		target, other any
	}{
		{"a record's row", `UPDATE gd_customers SET credit = credit + 1 WHERE id = 130`, &GdCustomer{ID: 130}, &GdCustomer{ID: 131}},
		{"a key inserted ahead", `INSERT INTO gd_customers (id, name, credit) VALUES (500, 'new', 0)`, &GdCustomer{ID: 500}, &GdCustomer{ID: 501}},
		{"a member's row", `UPDATE gd_lines SET qty = 9 WHERE id = 2`, &GdOrder{ID: 2}, &GdOrder{ID: 4}},
		{"a member moved in", `UPDATE gd_lines SET gd_order_id = 2 WHERE id = 3`, &GdOrder{ID: 2}, &GdOrder{ID: 5}},
		{"a member moved out", `UPDATE gd_lines SET gd_order_id = 4 WHERE id = 2`, &GdOrder{ID: 2}, &GdOrder{ID: 5}},
		{"a new member", `INSERT INTO gd_lines (id, gd_order_id, qty) VALUES (10, 2, 1)`, &GdOrder{ID: 2}, &GdOrder{ID: 5}},
		{"a join row", `INSERT INTO gd_order_tags (gd_order_id, gd_tag_id) VALUES (2, 1)`, &GdOrder{ID: 2}, &GdOrder{ID: 4}},
		{"a cascaded delete", `DELETE FROM gd_folders WHERE id = 2`, &GdNote{ID: 2}, &GdNote{ID: 3}},
		{"a member two levels down", `UPDATE gd_subs SET note = 'xa' WHERE id = 2`, &GdOrder{ID: 2}, &GdOrder{ID: 4}},
	}
	for _, level := range []string{"READ COMMITTED", "REPEATABLE READ"} {
		for _, inTx := range []bool{false, true} {
			for i, c := range cases {
				if inTx && i > 0 {
					continue // the serialised path, once: the same probe
				}
				t.Run(fmt.Sprintf("%s/inTx=%v/%s", level, inTx, c.name), func(t *testing.T) {
					db, p, _ := gdSubSetupOn(t, d)
					seed := admin(db)
					// The probe finds a member's rows by the index of its root
					// column (InnoDB makes one for a foreign key; gd_subs has
					// none): without it, it reads the whole table.
					// On a table of a few rows the optimizer reads every row all
					// the same (a locking read then waits for any write of it):
					// the test's tables hold some hundreds.
					require.NoError(t, seed.Exec(`CREATE INDEX gd_subs_line ON gd_subs (gd_line_id)`).Error)
					require.NoError(t, seed.Exec(`INSERT INTO gd_subs (id, gd_line_id, note) SELECT seq + 100, seq + 100, 'filler' FROM seq_1_to_300`).Error)
					require.NoError(t, seed.Exec(`ANALYZE TABLE gd_subs`).Error)
					require.NoError(t, seed.Create(&[]GdCustomer{{ID: 131, Name: "c"}}).Error)
					require.NoError(t, seed.Create(&[]GdOrder{{ID: 4, Note: "o"}, {ID: 5, Note: "o"}}).Error)
					require.NoError(t, seed.Create(&GdLine{ID: 3, GdOrderID: 4, Qty: 3}).Error)
					require.NoError(t, seed.Create(&GdNote{ID: 3, GdFolderID: 1, Text: "n"}).Error)
					xid := fmt.Sprintf("ol-xa-%d-%d", i, time.Now().UnixNano())
					w := rgBegin(t, db, "SET SESSION TRANSACTION ISOLATION LEVEL "+level)
					rgExec(t, w, `XA START '`+xid+`'`)
					rgExec(t, w, c.write)
					rgExec(t, w, `XA END '`+xid+`'`)
					rgExec(t, w, `XA PREPARE '`+xid+`'`)
					// Its own connection's: MariaDB keeps a prepared transaction
					// past its connection's end, and only that connection may
					// end it while it lives.
					t.Cleanup(func() { w.ExecContext(context.Background(), `XA ROLLBACK '`+xid+`'`) })

					grant := func(target any) error {
						if !inTx {
							_, err := p.Acquire(as(db, david), target, offlinelock.Write)
							return err
						}
						return as(db, david).Transaction(func(tx *gorm.DB) error {
							_, err := p.Acquire(tx, target, offlinelock.Write)
							return err
						})
					}
					start := time.Now()
					err := grant(c.target)
					require.ErrorIs(t, err, offlinelock.ErrBeingWritten, "the prepared write holds the grant off")
					assert.Less(t, time.Since(start), 5*time.Second, "bounded")
					var n int64
					require.NoError(t, db.Table(p.TableName()).Where("session = ?", david.Session).Count(&n).Error)
					assert.Zero(t, n, "nothing of the refused grant was written")
					if inTx {
						var wait int64
						require.NoError(t, as(db, david).Transaction(func(tx *gorm.DB) error {
							if _, err := p.Acquire(tx, c.target, offlinelock.Write); !errors.Is(err, offlinelock.ErrBeingWritten) {
								return fmt.Errorf("want ErrBeingWritten, got %v", err)
							}
							return tx.Raw(`SELECT @@session.innodb_lock_wait_timeout`).Scan(&wait).Error
						}))
						assert.NotZero(t, wait, "the session's lock wait, put back")
					}
					require.NoError(t, grant(c.other), "the same write leaves another record free")

					rgExec(t, w, `XA COMMIT '`+xid+`'`)
					require.NoError(t, grant(c.target), "given once the prepared write committed")
				})
			}
		}
	}
}
