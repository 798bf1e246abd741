package plugin_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// MariaDB's live buckets (internal/lockstore/guard_live_mysql.go): an
// ordinary client's write of a record whose bucket has no live lock reads
// the bucket alone. These tests hold the bucket to what it must say: a
// lock taken before its bucket row was counted, a bucket quieted and then
// granted again, and two records sharing one bucket.

// liveOf is the live of customer id's bucket, as the order table has it.
func liveOf(t *testing.T, db *gorm.DB, p *offlinelock.Plugin, id int) time.Time {
	t.Helper()
	var live time.Time
	require.NoError(t, db.Raw("SELECT live FROM `"+lockTableOf(p)+"_order` WHERE b = ((CRC32('gd_customers') & 4194303) << 10) | (? & 1023)", id).Scan(&live).Error)
	return live
}

// writeCustomer is another client's write of customer id, outside the
// plugin: nil, or the guard's refusal.
func writeCustomer(t *testing.T, other *gorm.DB, id int) error {
	t.Helper()
	return other.Exec(`UPDATE gd_customers SET credit = credit + 1 WHERE id = ?`, id).Error
}

func TestGuardLiveBucketsCountLocksOlderThanTheirRows(t *testing.T) {
	for name, remake := range map[string]string{
		"an order table of an older revision": "ALTER TABLE `%s_order` DROP COLUMN live",
		"an order table dropped":              "DROP TABLE `%s_order`",
	} {
		t.Run(name, func(t *testing.T) {
			db, p := testkit.GoSetup(t, mysqlDB().open(t))
			other := plainGORM(t, db)
			require.NoError(t, db.Exec(fmt.Sprintf(remake, lockTableOf(p))).Error)
			require.NoError(t, p.InstallGuard(db))
			var unknown int64
			require.NoError(t, db.Raw("SELECT COUNT(*) FROM `"+lockTableOf(p)+"_order` WHERE live > '9000-01-01'").Scan(&unknown).Error)
			assert.Zero(t, unknown, "every bucket is settled")
			assert.True(t, liveOf(t, db, p, 129).After(time.Now()), "the bucket of martin's customer 129 is live")
			assert.True(t, refusedByGuard(writeCustomer(t, other, 129), "gd_customers", "129"), "the held record is refused")
			assert.NoError(t, writeCustomer(t, other, 130), "a free record is written")
		})
	}
}

func TestGuardLiveBucketQuietedIsRaisedByTheNextGrant(t *testing.T) {
	db, p := testkit.GoSetup(t, mysqlDB().open(t))
	other := plainGORM(t, db)
	lt := "`" + lockTableOf(p) + "`"
	_, err := p.Acquire(as(db, david), &GdCustomer{ID: 130}, offlinelock.Write)
	require.NoError(t, err)
	require.True(t, liveOf(t, db, p, 130).After(time.Now()), "the grant raised its bucket")
	assert.ErrorContains(t, writeCustomer(t, other, 130), "OL423", "david's record is refused")

	// David's lock expires; ten minutes on, the sweep quiets its bucket.
	require.NoError(t, other.Exec(`UPDATE `+lt+` SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 HOUR WHERE resource = 'gd_customers' AND lock_id = '130'`).Error)
	assert.NoError(t, writeCustomer(t, other, 130), "an expired lock refuses nothing")
	require.NoError(t, db.Exec("UPDATE `"+lockTableOf(p)+"_order` SET live = UTC_TIMESTAMP(6) - INTERVAL 1 MINUTE WHERE live > UTC_TIMESTAMP(6) AND live < '9000-01-01' AND b = ((CRC32('gd_customers') & 4194303) << 10) | (130 & 1023)").Error)
	_, err = p.Sweep(db)
	require.NoError(t, err)
	assert.Equal(t, 1000, liveOf(t, db, p, 130).Year(), "the sweep quieted the bucket")
	assert.NoError(t, writeCustomer(t, other, 130), "a quiet bucket's record is written")

	_, err = p.Acquire(as(db, martin), &GdCustomer{ID: 130}, offlinelock.Write)
	require.NoError(t, err)
	assert.True(t, liveOf(t, db, p, 130).After(time.Now()), "the next grant raised the bucket again")
	assert.True(t, refusedByGuard(writeCustomer(t, other, 130), "gd_customers", "130"), "martin's record is refused")
}

func TestGuardLiveBucketSharedByTwoRecords(t *testing.T) {
	db, p := testkit.GoSetup(t, mysqlDB().open(t))
	other := plainGORM(t, db)
	require.NoError(t, admin(db).Create(&GdCustomer{ID: 129 + 1024, Name: "Neighbour", Credit: 1}).Error)
	assert.Equal(t, liveOf(t, db, p, 129), liveOf(t, db, p, 129+1024), "one bucket")
	assert.NoError(t, writeCustomer(t, other, 129+1024), "the free record of a live bucket is written")
	assert.True(t, refusedByGuard(writeCustomer(t, other, 129), "gd_customers", "129"), "the held one is refused")
}

// Keys whose live bucket a trigger computes from the column's bits, and
// one it computes from the key's text (a DECIMAL column): a grant raises
// the bucket the trigger reads, whatever the key's sign and width.
type (
	LvSigned struct {
		ID   int64 `gorm:"primaryKey;autoIncrement:false" lock:"exclusive_write"`
		Body string
	}
	LvUnsigned struct {
		ID   uint64 `gorm:"primaryKey;autoIncrement:false" lock:"exclusive_write"`
		Body string
	}
	LvDecimal struct {
		ID   int64 `gorm:"primaryKey;autoIncrement:false;type:decimal(30,0)" lock:"exclusive_write"`
		Body string
	}
)

func TestGuardLiveBucketOfEveryIntegerKey(t *testing.T) {
	cases := []struct {
		table      string
		model      func(id string) any
		held, free []string // free: records of the held one's bucket, then of another
	}{
		{"lv_signeds", func(id string) any { n, _ := strconv.ParseInt(id, 10, 64); return &LvSigned{ID: n} },
			[]string{"-5", "-9223372036854775808"}, []string{"-1029", "1019", "0", "7"}},
		{"lv_unsigneds", func(id string) any { n, _ := strconv.ParseUint(id, 10, 64); return &LvUnsigned{ID: n} },
			[]string{"18446744073709551615", "9999999999999999999"}, []string{"1023", "10000000000000000000", "3"}},
		{"lv_decimals", func(id string) any { n, _ := strconv.ParseInt(id, 10, 64); return &LvDecimal{ID: n} },
			[]string{"-5", "129"}, []string{"1019", "130"}},
	}
	for _, c := range cases {
		t.Run(c.table, func(t *testing.T) {
			db, p := gdSetup(t, mysqlDB(), offlinelock.Config{Models: []any{c.model("0")}})
			require.NoError(t, db.Migrator().DropTable(c.model("0")))
			t.Cleanup(func() { db.Migrator().DropTable(c.model("0")) })
			require.NoError(t, db.AutoMigrate(c.model("0")))
			for _, id := range append(slices.Clone(c.held), c.free...) {
				require.NoError(t, admin(db).Exec("INSERT INTO "+c.table+" (id, body) VALUES (?, 'x')", id).Error)
			}
			for _, id := range c.held {
				_, err := p.Acquire(as(db, martin), c.model(id), offlinelock.Write)
				require.NoError(t, err, id)
			}
			other := plainGORM(t, db)
			write := func(id string) error {
				return other.Exec("UPDATE "+c.table+" SET body = 'other' WHERE id = ?", id).Error
			}
			for _, id := range c.held {
				assert.True(t, refusedByGuard(write(id), c.table, id), "the held record %s is refused", id)
			}
			for _, id := range c.free {
				assert.NoError(t, write(id), "the free record %s is written", id)
			}

			// A guard of revision 2 raised another bucket for a negative
			// key or one of 20 digits: the install of this revision raises
			// this one's.
			lt := "`" + lockTableOf(p) + "`"
			require.NoError(t, db.Exec("UPDATE `"+lockTableOf(p)+"_tables` SET spec = '2' WHERE name = 'offlinelock:guard revision'").Error)
			require.NoError(t, db.Exec("UPDATE `"+lockTableOf(p)+"_order` o JOIN "+lt+" l ON l.resource = ? AND l.holder = '' AND l.access = 'write' "+
				"SET o.live = '1000-01-01' WHERE o.b = ((CRC32(l.resource) & 4194303) << 10) | (CAST(l.lock_id AS DECIMAL(20,0)) & 1023) "+
				"AND (l.lock_id LIKE '-%' OR LENGTH(l.lock_id) = 20)", c.table).Error)
			assert.NoError(t, write(c.held[0]), "a quiet bucket lets the held record through: what the upgrade must not leave")
			require.NoError(t, p.InstallGuard(db))
			for _, id := range c.held {
				assert.True(t, refusedByGuard(write(id), c.table, id), "after the upgrade, the held record %s is refused", id)
			}
		})
	}
}
