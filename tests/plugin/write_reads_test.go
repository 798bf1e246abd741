package plugin_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/offlinelock/offlinelock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Writes that read a table locked on load, in any clause or SQL value they
// carry (subqueries in values, GormValuer, ON CONFLICT, FROM, RETURNING):
// each is refused, whatever the written table.

type FtAcct struct {
	ID   uint `gorm:"primaryKey" lock:"exclusive_read"`
	Name string
}

// FtNote is an ordinary, untagged table.
type FtNote struct {
	ID   uint `gorm:"primaryKey"`
	Body string
}

// FtSecretBody is a column type whose value GORM sends as SQL
// (gorm.GormValuerInterface): a subquery of ft_accts.
type FtSecretBody string

func (FtSecretBody) GormValue(context.Context, *gorm.DB) clause.Expr {
	return clause.Expr{SQL: "(SELECT name FROM ft_accts WHERE id = ?)", Vars: []any{129}}
}

// FtNoteV is a model of ft_notes whose body is written through GormValue.
type FtNoteV struct {
	ID   uint `gorm:"primaryKey"`
	Body FtSecretBody
}

func (FtNoteV) TableName() string { return "ft_notes" }

const ftSecretSQL = "(SELECT name FROM ft_accts WHERE id = ?)"

func ftSecretExpr() clause.Expr { return gorm.Expr(ftSecretSQL, 129) }

// ftRetSecret is a RETURNING column that reads account 129.
var ftRetSecret = clause.Returning{Columns: []clause.Column{{Name: "id, (SELECT name FROM ft_accts WHERE id = 129) AS body", Raw: true}}}

// ftSetup registers a plugin (Config.Models: lockables) on a lock table of
// its own and creates tables (models and join tables by name).
func ftSetup(t *testing.T, d database, lockables []any, tables ...any) (*gorm.DB, *offlinelock.Plugin, string) {
	t.Helper()
	table := "ol_ft" + randomHex(5)
	db, p := setup(t, d, offlinelock.Config{Table: table, Models: lockables, Logger: slog.New(slog.DiscardHandler)})
	all := append(slices.Clone(tables), lockables...)
	require.NoError(t, admin(db).Migrator().DropTable(all...))
	var models []any
	for _, m := range all {
		if _, isName := m.(string); !isName {
			models = append(models, m)
		}
	}
	require.NoError(t, admin(db).AutoMigrate(models...))
	t.Cleanup(func() { admin(db).Migrator().DropTable(all...) })
	return db, p, table
}

func ftNoteBodies(t *testing.T, db *gorm.DB) []string {
	t.Helper()
	var bodies []string
	require.NoError(t, admin(db).Model(&FtNote{}).Order("id").Pluck("body", &bodies).Error)
	return bodies
}

// ftWrite is one write that, through its shape, reads account 129 into a
// row or into its destination; it reports what it put in the destination.
type ftWrite struct {
	name  string
	write func(tx *gorm.DB) (dest string, err error)
}

var ftWritesReadingALockedTable = []ftWrite{
	{"Create(&map) pointer to a map, value a subquery", func(tx *gorm.DB) (string, error) {
		m := map[string]any{"id": 5, "body": ftSecretExpr()}
		return "", tx.Model(&FtNote{}).Create(&m).Error
	}},
	{"Create(&[]map), value a subquery", func(tx *gorm.DB) (string, error) {
		m := []map[string]any{{"id": 5, "body": ftSecretExpr()}}
		return "", tx.Model(&FtNote{}).Create(&m).Error
	}},
	{"Table(ft_notes).Create(&map)", func(tx *gorm.DB) (string, error) {
		m := map[string]any{"id": 5, "body": ftSecretExpr()}
		return "", tx.Table("ft_notes").Create(&m).Error
	}},
	{"Create(&struct) with a GormValuer field", func(tx *gorm.DB) (string, error) {
		return "", tx.Create(&FtNoteV{ID: 5, Body: "x"}).Error
	}},
	{"Save(&struct) with a GormValuer field", func(tx *gorm.DB) (string, error) {
		return "", tx.Save(&FtNoteV{ID: 1, Body: "x"}).Error
	}},
	{"Model.Updates(struct) with a GormValuer field", func(tx *gorm.DB) (string, error) {
		return "", tx.Model(&FtNoteV{ID: 1}).Updates(FtNoteV{Body: "x"}).Error
	}},
	{"Model.Update(col, GormValuer)", func(tx *gorm.DB) (string, error) {
		return "", tx.Model(&FtNote{ID: 1}).Update("body", FtSecretBody("x")).Error
	}},
	{"Model.Updates(&map) pointer to a map", func(tx *gorm.DB) (string, error) {
		m := map[string]any{"body": ftSecretExpr()}
		return "", tx.Model(&FtNote{ID: 1}).Updates(&m).Error
	}},
	{"Model.Updates(map) value a GormValuer", func(tx *gorm.DB) (string, error) {
		return "", tx.Model(&FtNote{ID: 1}).Updates(map[string]any{"body": FtSecretBody("x")}).Error
	}},
	{"OnConflict DoUpdates with a subquery", func(tx *gorm.DB) (string, error) {
		return "", tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "id"}},
			DoUpdates: clause.Assignments(map[string]any{"body": ftSecretExpr()}),
		}).Create(&FtNote{ID: 1, Body: "x"}).Error
	}},
	{"UPDATE … FROM ft_accts (clause.From)", func(tx *gorm.DB) (string, error) {
		return "", tx.Model(&FtNote{}).Clauses(clause.From{Tables: []clause.Table{{Name: "ft_accts"}}}).
			Where("ft_notes.id = ? AND ft_accts.id = ?", 1, 129).Update("body", gorm.Expr("ft_accts.name")).Error
	}},
	{"Update with RETURNING a subquery", func(tx *gorm.DB) (string, error) {
		n := FtNote{ID: 1}
		err := tx.Model(&n).Clauses(ftRetSecret).Update("body", "n1").Error
		return n.Body, err
	}},
	{"Delete with RETURNING a subquery", func(tx *gorm.DB) (string, error) {
		n := FtNote{ID: 2}
		err := tx.Clauses(ftRetSecret).Delete(&n).Error
		return n.Body, err
	}},
	{"Create with RETURNING a subquery", func(tx *gorm.DB) (string, error) {
		n := FtNote{ID: 6, Body: "x"}
		err := tx.Clauses(ftRetSecret).Create(&n).Error
		return n.Body, err
	}},
}

// TestFailClosedWritesThatReadALockedTable: a write (to an untagged
// table) whose values, upsert SET, FROM or RETURNING read account 129,
// locked on load by Martin. The docs: "A write … whose WHERE or SET reads a
// table locked on load in a subquery … is refused."
func TestFailClosedWritesThatReadALockedTable(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p, _ := ftSetup(t, d, []any{&FtAcct{}}, &FtNote{})
			reset := func() {
				fcReset(t, db, p)
				require.NoError(t, admin(db).Where("1 = 1").Delete(&FtNote{}).Error)
				require.NoError(t, admin(db).Save(&FtAcct{ID: 1, Name: "one"}).Error)
				require.NoError(t, admin(db).Save(&FtAcct{ID: 129, Name: "secret"}).Error)
				require.NoError(t, admin(db).Create(&[]FtNote{{ID: 1, Body: "n1"}, {ID: 2, Body: "n2"}}).Error)
				require.NoError(t, as(db, martin).First(&FtAcct{}, 129).Error)
			}
			for _, w := range ftWritesReadingALockedTable {
				t.Run(w.name, func(t *testing.T) {
					// The shape really reads account 129: under Bypass it does.
					reset()
					got, err := fcSafeWrite(t, func() (string, error) { return w.write(admin(db)) })
					if err != nil && db.Dialector.Name() == "mysql" {
						t.Skipf("PostgreSQL SQL that MySQL does not run: %v", err)
					}
					require.NoError(t, err, "setup: the shape runs under Bypass")
					require.True(t, got == "secret" || slices.Contains(ftNoteBodies(t, db), "secret"), "setup: the shape reads account 129")

					reset()
					got, err = fcSafeWrite(t, func() (string, error) { return w.write(as(db, david)) })
					assert.NotEqual(t, "secret", got, "David's write returned account 129 held by Martin")
					assert.NotContains(t, ftNoteBodies(t, db), "secret", "David's write copied account 129 held by Martin")
					fmRefused(t, err, "David's write read account 129 held by Martin")
					assert.Empty(t, fcLocksOf(t, db, p, david), "the refused write left locks")

					// The holder: allowed, or refused as unenforceable.
					reset()
					_, err = fcSafeWrite(t, func() (string, error) { return w.write(as(db, martin)) })
					if err != nil {
						assert.True(t, fcUnenforceable(err), "the holder's write may only be refused as unenforceable, got %v", err)
					}
				})
			}
		})
	}
}

func fcSafeWrite(t *testing.T, f func() (string, error)) (got string, err error) {
	t.Helper()
	err = fcSafe(t, func() error {
		var e error
		got, e = f()
		return e
	})
	return got, err
}

// FtOrder is an aggregate root; FtLine is its member and has tags.
