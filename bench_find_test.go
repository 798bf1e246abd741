package offlinelock_test

// Loading many rows under exclusive_read, and the plugin's cost on tables
// it does not lock.
//
//   BenchmarkFind1000 (d): a Find of 1,000 rows, which locks them all,
//     against a plain GORM Find plus the bare batch insert of the same
//     1,000 lock rows (x-plain+lock, target <= 1.2 on PostgreSQL, <= 1.5
//     on SQLite and MySQL/MariaDB), reporting the plain Find's time alone
//     (ns/plain-find, for scale), the statements per locked Find, which
//     must not grow with the rows, and allocations per call beside the
//     plain Find's. On SQLite the write-ahead log is checkpointed after
//     each side, untimed, and the pages each side wrote to it are
//     reported (wal-pages/…): otherwise the side whose commit happens to
//     cross the log's 1,000 pages pays the checkpoint of both sides' pages.
//   BenchmarkFind1000Members: the 1,000 lines of one order (one lock, on
//     the order), against a plain Find plus the one bare upsert. Target
//     <= 1.2.
//   BenchmarkUntaggedFirst: a First on an untagged table with the plugin
//     registered and the fail-closed check armed, against the same First
//     without the plugin: the plugin's Go work per statement.

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// batchInsert is the bare batch insert of the lock rows of ids: one
// statement.
func (x bare) batchInsert(b *testing.B, resource string, ids []string) {
	q := x.sql(`INSERT INTO ` + x.table + ` (resource, lock_id, holder, access, session, user_name, token, generation, acquired_at, expires_at)
SELECT ?, k.id, '', 'write', 'M1', 'martin', k.token, 1, NOW(), LATER() FROM unnest(?::text[], ?::text[]) AS k(id, token)`)
	tokens := make([]string, len(ids))
	for i := range tokens {
		tokens[i] = randomHex(16)
	}
	args := []any{resource, ids, tokens}
	if x.dial == "mysql" {
		rows := strings.TrimSuffix(strings.Repeat(x.sql(`(?, ?, '', 'write', 'M1', 'martin', ?, 1, NOW(), LATER()), `), len(ids)), ", ")
		q = `INSERT INTO ` + x.table + ` (resource, lock_id, holder, access, session, user_name, token, generation, acquired_at, expires_at) VALUES ` + rows
		args = args[:0]
		for i := range ids {
			args = append(args, resource, ids[i], tokens[i])
		}
	}
	if x.dial == "sqlite" {
		q = x.sql(`INSERT INTO ` + x.table + ` (resource, lock_id, holder, access, session, user_name, token, generation, acquired_at, expires_at)
SELECT ?, json_extract(k.value, '$[0]'), '', 'write', 'M1', 'martin', json_extract(k.value, '$[1]'), 1, NOW(), LATER() FROM json_each(?) AS k`)
		pairs := make([][2]string, len(ids))
		for i := range ids {
			pairs[i] = [2]string{ids[i], tokens[i]}
		}
		j, _ := json.Marshal(pairs)
		args = []any{resource, string(j)}
	}
	if _, err := x.db.Exec(q, args...); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkFind1000(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, d database) {
		db, plain, p := benchDBs(b, d)
		seedAccounts(b, db, 1000)
		x := newBare(b, plain, lockTableName(b, db, p))
		ids := make([]string, 1000)
		for i := range ids {
			ids[i] = strconv.Itoa(i + 1)
		}
		c := &counter{Interface: logger.Discard}
		m := as(db, martin).Session(&gorm.Session{Logger: c})
		locked := func(int) {
			var got []Account
			if err := m.Find(&got).Error; err != nil || len(got) != 1000 {
				b.Fatal(err, len(got))
			}
		}
		plainFind := func(int) {
			var got []Account
			if err := plain.Find(&got).Error; err != nil {
				b.Fatal(err)
			}
		}
		release := func() {
			if _, err := p.ReleaseAll(db, martin.Session); err != nil {
				b.Fatal(err)
			}
		}
		var findOnly time.Duration
		var oursPages, theirsPages int64
		checkpoint(b, db) // the seed's pages
		interleave(b, "x-plain+lock", func(i int) {
			locked(i)
			b.StopTimer()
			oursPages += checkpoint(b, db)
			release()
			checkpoint(b, db)
			b.StartTimer()
		}, func(i int) {
			t0 := time.Now()
			plainFind(i)
			findOnly += time.Since(t0)
			x.batchInsert(b, "bare", ids)
			b.StopTimer()
			theirsPages += checkpoint(b, db)
			x.clear(b, "bare")
			checkpoint(b, db)
			b.StartTimer()
		})
		b.ReportMetric(float64(findOnly.Nanoseconds())/float64(b.N), "ns/plain-find")
		b.ReportMetric(float64(c.N.Load())/float64(b.N), "statements/find")
		if d.name == "sqlite" {
			b.ReportMetric(float64(oursPages)/float64(b.N), "wal-pages/ours")
			b.ReportMetric(float64(theirsPages)/float64(b.N), "wal-pages/theirs")
		}
		reportAllocs(b, locked, plainFind, release)
	})
}

// checkpoint moves SQLite's write-ahead log into the database file and
// empties it, and returns how many pages it held; elsewhere it does
// nothing.
func checkpoint(b *testing.B, db *gorm.DB) int64 {
	if db.Dialector.Name() != "sqlite" {
		return 0
	}
	var pages int64
	for _, mode := range []string{"PASSIVE", "TRUNCATE"} { // TRUNCATE reports no pages
		var busy, log, moved int64
		if err := db.Raw(`PRAGMA wal_checkpoint(`+mode+`)`).Row().Scan(&busy, &log, &moved); err != nil {
			b.Fatal(err)
		}
		if busy != 0 {
			b.Fatal("the checkpoint did not complete")
		}
		pages = max(pages, log)
	}
	return pages
}

func BenchmarkFind1000Members(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, d database) {
		db, p := setup(b, d, offlinelock.Config{Models: testkit.AggregateModels})
		db.Migrator().DropTable(testkit.AggregateModels...)
		if err := db.AutoMigrate(testkit.AggregateModels...); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Migrator().DropTable(testkit.AggregateModels...) })
		testkit.SeedOrder(b, db, 1, 1000)
		plain := d.open(b)
		if d.name == "sqlite" {
			plain = openSQLiteLike(b, db)
		}
		x := newBare(b, plain, lockTableName(b, db, p))
		m := as(db, martin)
		interleave(b, "x-plain+lock", func(int) {
			var lines []testkit.LineItem
			if err := m.Where("order_id = ?", 1).Find(&lines).Error; err != nil || len(lines) != 1000 {
				b.Fatal(err, len(lines))
			}
			b.StopTimer()
			if _, err := p.ReleaseAll(db, martin.Session); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}, func(int) {
			var lines []testkit.LineItem
			if err := plain.Where("order_id = ?", 1).Find(&lines).Error; err != nil {
				b.Fatal(err)
			}
			x.lock(b, "bare", "1")
			b.StopTimer()
			x.clear(b, "bare")
			b.StartTimer()
		})
	})
}

func BenchmarkUntaggedFirst(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, d database) {
		db, plain, _ := benchDBs(b, d)
		if err := admin(db).Create(&testkit.Team{ID: 1, Name: "core"}).Error; err != nil {
			b.Fatal(err)
		}
		m := as(db, martin)
		if err := m.Find(&[]Account{}).Error; err != nil { // accounts: locked on load
			b.Fatal(err)
		}
		b.ReportAllocs()
		interleave(b, "x-plain", func(int) {
			if err := m.Where("name = ?", "core").First(&testkit.Team{}).Error; err != nil {
				b.Fatal(err)
			}
		}, func(int) {
			if err := plain.Where("name = ?", "core").First(&testkit.Team{}).Error; err != nil {
				b.Fatal(err)
			}
		})
	})
}
