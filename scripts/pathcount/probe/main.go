// Command probe runs the two paths issue 34 budgets, a locked First of an
// exclusive_read record (taking its lock) and the holder's Save, once
// each after a warm-up, and writes the coverage counters of each call
// alone. scripts/pathcount/run.sh builds it with -cover and counts them.
//
//	probe -out DIR -db sqlite|postgres|mysql -dsn DSN
package main

import (
	"context"
	"flag"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/coverage"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// ProbeAccount is locked by every load.
type ProbeAccount struct {
	ID   uint `gorm:"primaryKey" lock:"exclusive_read"`
	Name string
}

// ProbeDoc is locked for writing.
type ProbeDoc struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Title string
}

func main() {
	out := flag.String("out", "", "directory for the counters")
	name := flag.String("db", "sqlite", "sqlite, postgres or mysql")
	dsn := flag.String("dsn", "file::memory:?cache=shared", "the database")
	flag.Parse()
	dialectors := map[string]func(string) gorm.Dialector{"sqlite": sqlite.Open, "postgres": postgres.Open, "mysql": mysql.Open}
	db, err := gorm.Open(dialectors[*name](*dsn), &gorm.Config{Logger: logger.Discard})
	must(err)
	table := "ol_probe"
	must(db.Migrator().DropTable(&ProbeAccount{}, &ProbeDoc{}))
	p := offlinelock.New(offlinelock.Config{Table: table, Logger: slog.New(slog.DiscardHandler)})
	must(db.Use(p))
	defer cleanUp(db, p, table)
	must(db.AutoMigrate(&ProbeAccount{}, &ProbeDoc{}))
	ctx := offlinelock.WithOwner(context.Background(), offlinelock.Owner{Session: "probe-session", User: "martin"})
	m := db.WithContext(ctx)
	must(db.WithContext(offlinelock.Bypass(ctx, "seed")).Create([]ProbeAccount{{ID: 1}, {ID: 2}}).Error)
	must(db.WithContext(offlinelock.Bypass(ctx, "seed")).Create([]ProbeDoc{{ID: 1}, {ID: 2}}).Error)
	probe(*out, "locked-first", func() error { return m.First(&ProbeAccount{}, 1).Error },
		func() error { return m.First(&ProbeAccount{}, 2).Error })
	for _, id := range []uint{1, 2} {
		_, err := p.Acquire(m, &ProbeDoc{ID: id}, offlinelock.Write)
		must(err)
	}
	probe(*out, "holder-save", func() error { return m.Save(&ProbeDoc{ID: 1, Title: "warm"}).Error },
		func() error { return m.Save(&ProbeDoc{ID: 2, Title: "saved"}).Error })
}

// probe runs warm, then writes the counters of call alone to out/name.
func probe(out, name string, warm, call func() error) {
	must(warm())
	must(coverage.ClearCounters())
	must(call())
	dir := filepath.Join(out, name)
	must(os.MkdirAll(dir, 0o755))
	must(coverage.WriteMetaDir(dir))
	must(coverage.WriteCountersDir(dir))
}

func cleanUp(db *gorm.DB, p *offlinelock.Plugin, table string) {
	_ = p.RemoveGuard(db)
	_ = db.Migrator().DropTable(&ProbeAccount{}, &ProbeDoc{}, table, table+"_generation", table+"_tables", table+"_notes", table+"_order")
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
