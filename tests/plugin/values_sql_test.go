package plugin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock"
)

// gvAccount129 is a key value whose GormValue is another key: GORM sends
// 129, whatever the Go value says.
type gvAccount129 int

func (gvAccount129) GormValue(context.Context, *gorm.DB) clause.Expr {
	return clause.Expr{SQL: "?", Vars: []any{129}}
}

// gvDocView is a DTO of docs whose key is such a value.
type gvDocView struct {
	ID    gvAccount129 `gorm:"primaryKey"`
	Title string
	Body  string
}

func (gvDocView) TableName() string { return "docs" }

// gvReadsAccount builds a subquery of accounts only when GORM builds it.
type gvReadsAccount string

func (gvReadsAccount) GormValue(context.Context, *gorm.DB) clause.Expr {
	return clause.Expr{SQL: "(SELECT name FROM accounts WHERE id = 129)"}
}

// gvSubExpr is a caller's own Expression that reads accounts.
type gvSubExpr struct{}

func (gvSubExpr) Build(b clause.Builder) { b.WriteString("(SELECT name FROM accounts WHERE id = 129)") }

// TestFailClosedValuesBuiltAsSQL: a value GORM writes as SQL (gorm.Expr,
// a GormValue, a caller's Expression, a raw column) is SQL, not a value:
// beside a key condition it can OR in other rows, as a key it names
// another record, in a query of an untagged table it can read a locked
// one. Each is refused or read as the database reads it.
func TestFailClosedValuesBuiltAsSQL(t *testing.T) {
	loads := map[string]func(tx *gorm.DB) ([]string, error){
		"Where(map{name: Expr}).Where(key)": func(tx *gorm.DB) ([]string, error) {
			var n []string
			return n, tx.Model(&Account{}).Where(map[string]any{"name": gorm.Expr("name OR 1=1")}).Where(&Account{ID: 1}).Pluck("name", &n).Error
		},
		"Where(name = ?, Expr).Where(key)": func(tx *gorm.DB) ([]string, error) {
			var n []string
			return n, tx.Model(&Account{}).Where("name = ?", gorm.Expr("name OR 1=1")).Where(&Account{ID: 1}).Pluck("name", &n).Error
		},
		"Where(name = @n, named Expr).Where(key)": func(tx *gorm.DB) ([]string, error) {
			var n []string
			return n, tx.Model(&Account{}).Where("name = @n", map[string]any{"n": gorm.Expr("name OR 1=1")}).Where(&Account{ID: 1}).Pluck("name", &n).Error
		},
		"Not(map{name: Expr}).Where(key)": func(tx *gorm.DB) ([]string, error) {
			var n []string
			return n, tx.Model(&Account{}).Not(map[string]any{"name": gorm.Expr("'q' OR 1=1")}).Where(&Account{ID: 1}).Pluck("name", &n).Error
		},
		"Where(Gt{credit, Expr}).Where(key)": func(tx *gorm.DB) ([]string, error) {
			var n []string
			return n, tx.Model(&Account{}).Where(clause.Gt{Column: "credit", Value: gorm.Expr("0 OR 1=1")}).Where(&Account{ID: 1}).Pluck("name", &n).Error
		},
		"Where(Eq{raw column}).Where(key)": func(tx *gorm.DB) ([]string, error) {
			var n []string
			return n, tx.Model(&Account{}).Where(clause.Eq{Column: clause.Column{Name: "1=1 OR name", Raw: true}, Value: "x"}).Where(&Account{ID: 1}).Pluck("name", &n).Error
		},
		"Where(Eq{pk, GormValue})": func(tx *gorm.DB) ([]string, error) {
			var n []string
			return n, tx.Model(&Account{}).Where(clause.Eq{Column: clause.PrimaryColumn, Value: gvAccount129(1)}).Pluck("name", &n).Error
		},
		"Find(&maps, GormValue)": func(tx *gorm.DB) ([]string, error) {
			var m []map[string]any
			err := tx.Model(&Account{}).Find(&m, gvAccount129(1)).Error
			var n []string
			for _, r := range m {
				n = append(n, r["name"].(string))
			}
			return n, err
		},
		"untagged Select(?, GormValue reading accounts).Scan": func(tx *gorm.DB) ([]string, error) {
			var n []string
			return n, tx.Model(&Customer{}).Select("?", gvReadsAccount("x")).Where("id = 2").Scan(&n).Error
		},
		"untagged Select(?, own Expression reading accounts).Scan": func(tx *gorm.DB) ([]string, error) {
			var n []string
			return n, tx.Model(&Customer{}).Select("?", gvSubExpr{}).Where("id = 2").Scan(&n).Error
		},
		"untagged Where(? = 'zzz', GormValue).Pluck": func(tx *gorm.DB) ([]string, error) {
			var n []string
			return n, tx.Model(&Customer{}).Where("? = 'zzz'", gvReadsAccount("x")).Pluck("name", &n).Error
		},
	}
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&[]Account{{ID: 1, Name: "free", Credit: 1}, {ID: 129, Name: "zzz", Credit: 9999}}).Error)
		require.NoError(t, admin(db).Create(&Customer{ID: 2, Name: "cust2"}).Error)
		require.NoError(t, as(db, martin).First(&Account{}, 129).Error)
		for name, load := range loads {
			names, err := fcSafe2(t, func() ([]string, error) { return load(as(db, david)) })
			assert.NotContains(t, names, "zzz", "%s: david read martin's account 129 (err %v)", name, err)
			if name == "untagged Where(? = 'zzz', GormValue).Pluck" {
				assert.Empty(t, names, "%s: the condition on martin's row came out true", name)
			}
		}

		// Writes of a DTO whose key's GormValue is another record's.
		require.NoError(t, admin(db).Create(&[]Doc{{ID: 1, Title: "mine"}, {ID: 129, Title: "draft", Body: "secret"}}).Error)
		_, err := p.Acquire(as(db, david), &Doc{ID: 1}, offlinelock.Write)
		require.NoError(t, err)
		_, err = p.Acquire(as(db, martin), &Doc{ID: 129}, offlinelock.Write)
		require.NoError(t, err)
		for name, write := range map[string]func(tx *gorm.DB) error{
			"Model(dto).Update": func(tx *gorm.DB) error { return tx.Model(&gvDocView{ID: 1}).Update("title", "pwn").Error },
			"Save(dto)":         func(tx *gorm.DB) error { return tx.Save(&gvDocView{ID: 1, Title: "pwn"}).Error },
			"Delete(dto)":       func(tx *gorm.DB) error { return tx.Delete(&gvDocView{ID: 1}).Error },
		} {
			err := fcSafe(t, func() error { return write(as(db, david)) })
			assert.Error(t, err, name)
			fcAssertDocUnchanged(t, db)
		}
	})
}
