package plugin_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// PtDoc is a lockable table partitioned by range of its key (PostgreSQL);
// PtHeir is a lockable table with an inheritance child, pt_heirs_old.
type PtDoc struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Title string
}

type PtHeir struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Title string
}

// TestGuardCoversPartitionsAndChildren: on PostgreSQL a write straight
// into a partition, or into an inheritance child, fires that table's
// triggers only. Each carries its parent's guard; a partition attached
// after the install is covered by the partitioned table's row trigger,
// which PostgreSQL clones onto it, until the next install gives it its own.
func TestGuardCoversPartitionsAndChildren(t *testing.T) {
	db, p := setup(t, database{"postgres", openPostgres}, offlinelock.Config{Models: []any{&PtDoc{}, &PtHeir{}}})
	drop := func() { db.Exec(`DROP TABLE IF EXISTS pt_docs, pt_docs_3, pt_heirs CASCADE`) }
	drop()
	t.Cleanup(drop)
	for _, q := range []string{
		`CREATE TABLE pt_docs (id bigint PRIMARY KEY, title text NOT NULL DEFAULT '') PARTITION BY RANGE (id)`,
		`CREATE TABLE pt_docs_1 PARTITION OF pt_docs FOR VALUES FROM (0) TO (100)`,
		`CREATE TABLE pt_docs_2 PARTITION OF pt_docs FOR VALUES FROM (100) TO (200)`,
		`INSERT INTO pt_docs VALUES (5, 'held'), (6, 'free'), (150, 'held'), (160, 'free')`,
		`CREATE TABLE pt_heirs (id bigint PRIMARY KEY, title text NOT NULL DEFAULT '')`,
		`CREATE TABLE pt_heirs_old (archived boolean NOT NULL DEFAULT true) INHERITS (pt_heirs)`,
		`INSERT INTO pt_heirs_old (id, title) VALUES (7, 'held'), (8, 'free')`,
	} {
		require.NoError(t, db.Exec(q).Error, q)
	}
	require.NoError(t, p.InstallGuard(db))
	for _, target := range []any{&PtDoc{ID: 5}, &PtDoc{ID: 150}, &PtDoc{ID: 250}, &PtHeir{ID: 7}} {
		_, err := p.Acquire(as(db, martin), target, offlinelock.Write)
		require.NoError(t, err)
	}
	// attached after the install, with a held row in it
	require.NoError(t, db.Exec(`CREATE TABLE pt_docs_3 (LIKE pt_docs INCLUDING DEFAULTS)`).Error)
	require.NoError(t, db.Exec(`INSERT INTO pt_docs_3 VALUES (250, 'held'), (260, 'free')`).Error)
	require.NoError(t, db.Exec(`ALTER TABLE pt_docs ATTACH PARTITION pt_docs_3 FOR VALUES FROM (200) TO (300)`).Error)

	_, w := pgRole(t, db, `GRANT USAGE ON SCHEMA public TO %s`,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON pt_docs, pt_docs_1, pt_docs_2, pt_docs_3, pt_heirs, pt_heirs_old TO %s`)
	writesOfPtTables(t, db, w, []guardedWrite{
		{`UPDATE pt_docs_1 SET title = 'x' WHERE id = 5`, "pt_docs", "5"},
		{`DELETE FROM pt_docs_2 WHERE id = 150`, "pt_docs", "150"},
		{`UPDATE pt_docs SET title = 'x' WHERE id = 150`, "pt_docs", "150"},
		{`UPDATE pt_docs_3 SET title = 'x' WHERE id = 250`, "pt_docs", "250"},
		{`DELETE FROM pt_docs_3 WHERE id = 250`, "pt_docs", "250"},
		{`UPDATE pt_heirs_old SET title = 'x' WHERE id = 7`, "pt_heirs", "7"},
		{`UPDATE pt_heirs SET title = 'x' WHERE id = 7`, "pt_heirs", "7"},
	}, []string{
		`UPDATE pt_docs_1 SET title = 'y' WHERE id = 6`,
		`UPDATE pt_docs_2 SET title = 'y' WHERE id = 160`,
		`UPDATE pt_docs_3 SET title = 'y' WHERE id = 260`,
		`UPDATE pt_heirs_old SET title = 'y' WHERE id = 8`,
	}, []string{"150:held", "160:y", "250:held", "260:y", "5:held", "6:y", "7:held", "8:y"})

	// the next install gives the attached partition its own triggers
	require.NoError(t, p.InstallGuard(db))
	states, err := p.GuardStatus(db)
	require.NoError(t, err)
	require.Contains(t, states, offlinelock.GuardState{Table: "pt_docs_3", State: "ok"})
	err = w.Exec(`UPDATE pt_docs_3 SET title = 'x' WHERE id = 250`).Error
	require.True(t, refusedByGuard(err, "pt_docs", "250"), "want the guard's refusal, got %v", err)

	// the plugin knows a partition's name as its table's: a GORM write of
	// one is checked as the table's, and Strict refuses an Exec naming it
	err = as(db, david).Table("pt_docs_1").Where("id = ?", 5).Update("title", "x").Error
	require.ErrorIs(t, err, offlinelock.ErrLocked)
	require.NoError(t, as(db, martin).Table("pt_docs_1").Where("id = ?", 5).Update("title", "mine").Error)
	require.NoError(t, p.RemoveGuard(db), "the cloned row triggers go with their parent's")
}

// TestPartitionNamesWithTheGuardOff: with Config.DisableGuard the plugin
// still knows a partition's or an inheritance child's name as its table's:
// a GORM write naming one is checked as the table's, and Strict refuses a
// raw write naming one, for a process whose db.Use found the tables and
// for one that learns them on its first statement.
func TestPartitionNamesWithTheGuardOff(t *testing.T) {
	db, _ := setup(t, database{"postgres", openPostgres}, offlinelock.Config{})
	drop := func() { db.Exec(`DROP TABLE IF EXISTS pt_docs, pt_heirs CASCADE`) }
	drop()
	t.Cleanup(drop)
	for _, q := range []string{
		`CREATE TABLE pt_docs (id bigint PRIMARY KEY, title text NOT NULL DEFAULT '') PARTITION BY RANGE (id)`,
		`CREATE TABLE pt_docs_1 PARTITION OF pt_docs FOR VALUES FROM (0) TO (100)`,
		`INSERT INTO pt_docs VALUES (5, 'held'), (6, 'free')`,
		`CREATE TABLE pt_heirs (id bigint PRIMARY KEY, title text NOT NULL DEFAULT '')`,
		`CREATE TABLE pt_heirs_old (archived boolean NOT NULL DEFAULT true) INHERITS (pt_heirs)`,
		`INSERT INTO pt_heirs_old (id, title) VALUES (7, 'held')`,
	} {
		require.NoError(t, db.Exec(q).Error, q)
	}
	for _, start := range []struct {
		name   string
		models []any
	}{{"listed in Config.Models", []any{&PtDoc{}, &PtHeir{}}}, {"learnt on the first statement", nil}} {
		t.Run(start.name, func(t *testing.T) {
			node := openPostgres(t)
			p := offlinelock.New(offlinelock.Config{Table: "ol_pt" + randomHex(5), DisableGuard: true, Strict: true, Models: start.models})
			require.NoError(t, node.Use(p))
			if start.models == nil {
				require.NoError(t, as(node, martin).First(&PtDoc{}, 6).Error)
				require.NoError(t, as(node, martin).First(&PtHeir{}, 7).Error)
				_, err := p.ReleaseAll(node, martin.Session)
				require.NoError(t, err)
			}
			for _, target := range []any{&PtDoc{ID: 5}, &PtHeir{ID: 7}} {
				_, err := p.Acquire(as(node, martin), target, offlinelock.Write)
				require.NoError(t, err)
			}
			t.Cleanup(func() { p.ReleaseAll(node, martin.Session) })
			require.ErrorIs(t, as(node, david).Table("pt_docs_1").Where("id = ?", 5).Update("title", "x").Error, offlinelock.ErrLocked)
			require.ErrorIs(t, as(node, david).Table("pt_heirs_old").Where("id = ?", 7).Update("title", "x").Error, offlinelock.ErrLocked)
			require.ErrorIs(t, as(node, david).Exec(`UPDATE pt_docs_1 SET title = 'x' WHERE id = 5`).Error, offlinelock.ErrStrict, "Strict")
			require.NoError(t, as(node, martin).Table("pt_docs_1").Where("id = ?", 5).Update("title", "mine").Error)
			var title string
			require.NoError(t, db.Raw(`SELECT title FROM pt_docs WHERE id = 5`).Scan(&title).Error)
			require.Equal(t, "mine", title)
		})
	}
}

// TestGuardCoversChildrenMadeAfterTheInstall: a migration gives a
// guarded table children after the install and after the grants (CREATE
// TABLE … INHERITS, ALTER TABLE … INHERIT, a partition created or
// attached, a grandchild); the next install guards each as its parent, a
// role with DML only is refused on every held row there and writes the
// free ones, and an install after that changes nothing.
func TestGuardCoversChildrenMadeAfterTheInstall(t *testing.T) {
	table := "ol_ch" + randomHex(5)
	db, p := setup(t, database{"postgres", openPostgres}, offlinelock.Config{Table: table, Models: []any{&PtDoc{}, &PtHeir{}}})
	drop := func() {
		db.Exec(`DROP TABLE IF EXISTS pt_docs, pt_docs_9, pt_heirs, pt_heirs_adopted CASCADE`)
	}
	drop()
	t.Cleanup(drop)
	for _, q := range []string{
		`CREATE TABLE pt_docs (id bigint PRIMARY KEY, title text NOT NULL DEFAULT '') PARTITION BY RANGE (id)`,
		`CREATE TABLE pt_docs_1 PARTITION OF pt_docs FOR VALUES FROM (0) TO (100)`,
		`CREATE TABLE pt_heirs (id bigint PRIMARY KEY, title text NOT NULL DEFAULT '')`,
	} {
		require.NoError(t, db.Exec(q).Error, q)
	}
	require.NoError(t, p.InstallGuard(db))
	// locks granted before the children exist: no later grant or install
	// of the plugin's sees them
	for _, target := range []any{&PtDoc{ID: 5}, &PtDoc{ID: 150}, &PtDoc{ID: 950}, &PtHeir{ID: 7}, &PtHeir{ID: 17}, &PtHeir{ID: 27}} {
		_, err := p.Acquire(as(db, martin), target, offlinelock.Write)
		require.NoError(t, err)
	}
	// the migration, after the install and the grants, from a connection
	// without the plugin, which fills the rows in with the triggers off
	// (a superuser's replica role; the DDL runs as usual): no statement of
	// the plugin's names a child
	plain := openPostgres(t)
	for _, q := range []string{
		`CREATE TABLE pt_docs_2 PARTITION OF pt_docs FOR VALUES FROM (100) TO (200)`,
		`CREATE TABLE pt_docs_9 (LIKE pt_docs INCLUDING DEFAULTS)`,
		`ALTER TABLE pt_docs ATTACH PARTITION pt_docs_9 FOR VALUES FROM (900) TO (1000)`,
		`CREATE TABLE pt_heirs_new (note text) INHERITS (pt_heirs)`,
		`CREATE TABLE pt_heirs_newer () INHERITS (pt_heirs_new)`,
		`CREATE TABLE pt_heirs_adopted (id bigint NOT NULL, title text NOT NULL DEFAULT '')`,
		`ALTER TABLE pt_heirs_adopted INHERIT pt_heirs`,
		`INSERT INTO pt_docs VALUES (5, 'held'), (6, 'free'), (150, 'held'), (160, 'free'), (950, 'held'), (960, 'free')`,
		`INSERT INTO pt_heirs_new (id, title) VALUES (7, 'held'), (8, 'free')`,
		`INSERT INTO pt_heirs_newer (id, title) VALUES (17, 'held'), (18, 'free')`,
		`INSERT INTO pt_heirs_adopted (id, title) VALUES (27, 'held'), (28, 'free')`,
	} {
		require.NoError(t, plain.Transaction(func(tx *gorm.DB) error {
			if strings.HasPrefix(q, "INSERT") {
				if err := tx.Exec(`SET LOCAL session_replication_role = replica`).Error; err != nil {
					return err
				}
			}
			return tx.Exec(q).Error
		}), q)
	}
	require.NoError(t, p.InstallGuard(db))
	states, err := p.GuardStatus(db)
	require.NoError(t, err)
	for _, table := range []string{"pt_docs_2", "pt_docs_9", "pt_heirs_new", "pt_heirs_newer", "pt_heirs_adopted"} {
		require.Contains(t, states, offlinelock.GuardState{Table: table, State: "ok"}, "after the next install")
	}

	_, w := pgRole(t, db, `GRANT USAGE ON SCHEMA public TO %s`,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON pt_docs_2, pt_docs_9, pt_heirs_new, pt_heirs_newer, pt_heirs_adopted TO %s`)
	writesOfPtTables(t, db, w, []guardedWrite{
		{`UPDATE pt_docs_2 SET title = 'x' WHERE id = 150`, "pt_docs", "150"},
		{`DELETE FROM pt_docs_9 WHERE id = 950`, "pt_docs", "950"},
		{`UPDATE pt_heirs_new SET title = 'x' WHERE id = 7`, "pt_heirs", "7"},
		{`UPDATE pt_heirs_newer SET title = 'x' WHERE id = 17`, "pt_heirs", "17"},
		{`DELETE FROM pt_heirs_adopted WHERE id = 27`, "pt_heirs", "27"},
		{`INSERT INTO pt_heirs_newer (id, title) VALUES (7, 'shadow')`, "pt_heirs", "7"},
	}, []string{
		`UPDATE pt_docs_2 SET title = 'y' WHERE id = 160`,
		`UPDATE pt_docs_9 SET title = 'y' WHERE id = 960`,
		`UPDATE pt_heirs_new SET title = 'y' WHERE id = 8`,
		`UPDATE pt_heirs_newer SET title = 'y' WHERE id = 18`,
		`UPDATE pt_heirs_adopted SET title = 'y' WHERE id = 28`,
	}, []string{"150:held", "160:y", "17:held", "18:y", "27:held", "28:y", "5:held", "6:free", "7:held", "8:y", "950:held", "960:y"})

	// the next install leaves the children's triggers as they are
	var before int64
	countTriggers := func() int64 {
		var n int64
		require.NoError(t, db.Raw(`SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relname LIKE 'pt\_%' AND NOT t.tgisinternal`).Scan(&n).Error)
		return n
	}
	before = countTriggers()
	require.NoError(t, p.InstallGuard(db))
	require.Equal(t, before, countTriggers())

	require.NoError(t, p.RemoveGuard(db))
	var functions int64
	require.NoError(t, db.Raw(`SELECT count(*) FROM pg_proc WHERE prosrc LIKE '%' || ? || '%'`, table).Scan(&functions).Error)
	require.Zero(t, functions, "RemoveGuard drops every function of the guard")
	require.Zero(t, countTriggers())
}

// guardedWrite is a write the guard must refuse: its SQL, and the record
// the refusal names.
type guardedWrite struct{ sql, resource, id string }

// writesOfPtTables: writer w's held writes are each refused by the guard,
// its free ones land, and pt_docs and pt_heirs then hold exactly want
// (id:title).
func writesOfPtTables(t *testing.T, db, w *gorm.DB, held []guardedWrite, free, want []string) {
	t.Helper()
	for _, c := range held {
		err := w.Exec(c.sql).Error
		require.True(t, refusedByGuard(err, c.resource, c.id), "%s: want the guard's refusal, got %v", c.sql, err)
	}
	for _, q := range free {
		require.NoError(t, w.Exec(q).Error, q)
	}
	var titles []string
	require.NoError(t, db.Raw(`SELECT id || ':' || title FROM pt_docs UNION ALL SELECT id || ':' || title FROM pt_heirs ORDER BY 1`).Scan(&titles).Error)
	require.Equal(t, want, titles)
}
