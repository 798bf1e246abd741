package offlinelock_test

// Fail closed, more attacks: paths that still leak after the hardening.
// Each table is one GORM API; every case asserts the promise exactly (a
// plugin error, the data unchanged, nothing of the locked row in the
// destination, no lock row of the refused session) and confirms the
// holder's positive case, so that a failure is the plugin's.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// FmAcct is locked by every load (exclusive_read). Row 129 is Martin's
// "secret".
type FmAcct struct {
	ID     uint `gorm:"primaryKey" lock:"exclusive_read"`
	Name   string
	Credit int
}

// FmAcctView is a DTO of fm_accts.
type FmAcctView struct {
	ID     uint
	Name   string
	Credit int
}

func (FmAcctView) TableName() string { return "fm_accts" }

// FmSeat is not lockable; it joins (belongs to) a lockable FmAcct.
type FmSeat struct {
	ID       uint `gorm:"primaryKey"`
	Label    string
	FmAcctID uint
	FmAcct   *FmAcct
}

// FmDoc is free to read; writes need a Write lock.
type FmDoc struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Title string
}

// FmIntStr keeps an integer column in a Go string: "0129" and "129" are
// one row to the database.
type FmIntStr struct {
	ID   string `gorm:"primaryKey;type:integer" lock:"exclusive_write"`
	Name string
}

// FmCi has a case-insensitive text key (SQLite): "ABC" and "abc" are one
// row to the database.
type FmCi struct {
	ID   string `gorm:"primaryKey;type:text collate nocase" lock:"exclusive_write"`
	Name string
}

// FmCiRead is FmCi's twin locked on load.
type FmCiRead struct {
	ID   string `gorm:"primaryKey;type:text collate nocase" lock:"exclusive_read"`
	Name string
}

// FmChr has a blank-padded key (PostgreSQL char(n)): "ab" and "ab  " are one
// row to the database.
type FmChr struct {
	ID   string `gorm:"primaryKey;type:char(6)" lock:"exclusive_write"`
	Name string
}

// FmUq has a unique name besides its key.
type FmUq struct {
	ID     uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name   string
	Credit int
}

// FmParent and FmChild: the child's foreign key cascades deletes.
type FmParent struct {
	ID uint `gorm:"primaryKey" lock:"exclusive_write"`
}

type FmChild struct {
	ID         uint `gorm:"primaryKey" lock:"exclusive_write"`
	FmParentID uint
	FmParent   *FmParent `gorm:"constraint:OnDelete:CASCADE"`
	Name       string
}

// FmEmbBase carries the tagged key of embedding models.
type FmEmbBase struct {
	ID uint `gorm:"primaryKey" lock:"exclusive_read"`
}

// FmEmb embeds its tagged key anonymously; FmEmbNamed through
// gorm:"embedded".
type FmEmb struct {
	FmEmbBase
	Name string
}

type FmEmbNamed struct {
	Base FmEmbBase `gorm:"embedded"`
	Name string
}

// FmSoft is locked on load and soft-deleted.
type FmSoft struct {
	ID        uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name      string
	DeletedAt gorm.DeletedAt
}

var fmModels = []any{&FmAcct{}, &FmSeat{}, &FmDoc{}, &FmIntStr{}, &FmUq{}, &FmParent{}, &FmChild{}, &FmEmb{}, &FmEmbNamed{}, &FmSoft{}}

// fmPrepared opens the database like d, with gorm.Config{PrepareStmt: true}.
func fmPrepared(d database) database {
	return database{d.name + "-prepared", func(t testing.TB) *gorm.DB {
		t.Helper()
		cfg := &gorm.Config{Logger: logger.Discard, PrepareStmt: true}
		var db *gorm.DB
		var err error
		if d.name == "sqlite" {
			db, err = gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(filepath.Join(t.TempDir(), "p.db"))), cfg)
		} else {
			dsn := os.Getenv(postgresEnv)
			if dsn == "" {
				if os.Getenv("CI") == "true" {
					t.Fatalf("CI=true needs PostgreSQL: set %s", postgresEnv)
				}
				t.Skipf("PostgreSQL tests need %s", postgresEnv)
			}
			db, err = gorm.Open(postgres.Open(dsn), cfg)
		}
		require.NoError(t, err)
		sqlDB, _ := db.DB()
		t.Cleanup(func() { sqlDB.Close() })
		return db
	}}
}

// fmSetup registers a plugin on a lock table of its own and creates the Fm
// tables (extra: tables of one database only).
func fmSetup(t *testing.T, d database, extra ...any) (*gorm.DB, *offlinelock.Plugin) {
	t.Helper()
	models := append(slices.Clone(fmModels), extra...)
	db, p := setup(t, d, offlinelock.Config{Models: models, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, admin(db).Migrator().DropTable(models...))
	require.NoError(t, admin(db).AutoMigrate(models...))
	t.Cleanup(func() { admin(db).Migrator().DropTable(models...) })
	require.NoError(t, admin(db).Create(&[]FmAcct{{ID: 1, Name: "one", Credit: 1}, {ID: 2, Name: "two", Credit: 2}, {ID: 129, Name: "secret", Credit: 9999}}).Error)
	require.NoError(t, admin(db).Create(&[]FmSeat{{ID: 1, Label: "s1", FmAcctID: 1}, {ID: 129, Label: "s129", FmAcctID: 129}}).Error)
	return db, p
}

func eachFm(t *testing.T, fn func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin)) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := fmSetup(t, d)
			fn(t, db, p)
		})
	}
}

// fmRefused asserts a plugin refusal.
func fmRefused(t *testing.T, err error, msg string, args ...any) {
	t.Helper()
	if assert.Error(t, err, append([]any{msg}, args...)...) {
		assert.True(t, fcRefused(err), "refusal must be a plugin error, got %v", err)
	}
}

func fmAcctName(t *testing.T, db *gorm.DB, id uint) string {
	t.Helper()
	var a FmAcct
	require.NoError(t, admin(db).First(&a, id).Error)
	return a.Name
}

func fmNames(rows []FmAcct) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Name)
	}
	return out
}

func fmRowNames(q *gorm.DB) ([]string, error) {
	rows, err := q.Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return out, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// fmLoad is one shape of a load that reads account 1 (or seat 1) and,
// through the shape, the locked account 129; it returns the names it got.
type fmLoad struct {
	name string
	only string
	load func(tx *gorm.DB) ([]string, error)
}

// selfJoin joins fm_accts to itself: b is account 129.
const fmSelfJoin = "JOIN fm_accts b ON b.id = 129"

// fmOrSplice is a WHERE fragment that GORM wraps in parentheses: next to a
// key condition it ends as "id = 1 AND (1=1) OR (id = 129)".
const fmOrSplice = "1=1) OR (fm_accts.id = 129"

var fmSelfReferenceLoads = []fmLoad{
	// Query chain, into the model.
	{"Query/Find(model): raw self-JOIN of the own table", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcct
		err := tx.Model(&FmAcct{}).Select("fm_accts.id, b.name, b.credit").Joins(fmSelfJoin).Where("fm_accts.id = ?", 1).Find(&v).Error
		return fmNames(v), err
	}},
	{"Query/Find(model): subquery of the own table in Select", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcct
		err := tx.Select("id, (SELECT x.name FROM fm_accts x WHERE x.id = 129) AS name").Where("id = ?", 1).Find(&v).Error
		return fmNames(v), err
	}},
	{"Query/Find(model): subquery of the own table in Where (oracle)", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcct
		err := tx.Where("id = ? AND EXISTS (SELECT 1 FROM fm_accts x WHERE x.id = 129 AND x.name = 'secret')", 1).Find(&v).Error
		if len(v) > 0 {
			return []string{"secret"}, err // the row came back: 129's name is "secret"
		}
		return nil, err
	}},
	{"Query/Find(model): subquery of the own table in Order (oracle)", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcct
		err := tx.Where("id IN ?", []uint{1, 2}).
			Order("CASE WHEN (SELECT x.name FROM fm_accts x WHERE x.id = 129) = 'secret' THEN -id ELSE id END").Find(&v).Error
		if len(v) == 2 && v[0].ID == 2 {
			return []string{"secret"}, err
		}
		return nil, err
	}},
	{"Query/Find(model): Table(fm_accts AS a) with a raw self-JOIN", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcct
		err := tx.Table("fm_accts AS a").Select("a.id, b.name, b.credit").Joins(fmSelfJoin).Where("a.id = ?", 1).Find(&v).Error
		return fmNames(v), err
	}},
	{"Query/First(model): subquery in Select", "", func(tx *gorm.DB) ([]string, error) {
		var v FmAcct
		err := tx.Select("id, (SELECT x.name FROM fm_accts x WHERE x.id = 129) AS name").First(&v, 1).Error
		return []string{v.Name}, err
	}},
	// Query chain, other destinations.
	{"Query/Find(DTO): raw self-JOIN", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcctView
		err := tx.Select("fm_accts.id, b.name, b.credit").Joins(fmSelfJoin).Where("fm_accts.id = ?", 1).Find(&v).Error
		var out []string
		for _, r := range v {
			out = append(out, r.Name)
		}
		return out, err
	}},
	{"Query/Find([]map): raw self-JOIN", "", func(tx *gorm.DB) ([]string, error) {
		var v []map[string]any
		err := tx.Model(&FmAcct{}).Select("fm_accts.id, b.name AS name").Joins(fmSelfJoin).Where("fm_accts.id = ?", 1).Find(&v).Error
		var out []string
		for _, r := range v {
			out = append(out, fmt.Sprint(r["name"]))
		}
		return out, err
	}},
	{"Query/Pluck: raw self-JOIN", "", func(tx *gorm.DB) ([]string, error) {
		var v []string
		err := tx.Model(&FmAcct{}).Joins(fmSelfJoin).Where("fm_accts.id = ?", 1).Pluck("b.name", &v).Error
		return v, err
	}},
	// Row chain.
	{"Row/Rows: raw self-JOIN", "", func(tx *gorm.DB) ([]string, error) {
		return fmRowNames(tx.Model(&FmAcct{}).Select("b.name").Joins(fmSelfJoin).Where("fm_accts.id = ?", 1))
	}},
	{"Row/Scan(struct): subquery in Select", "", func(tx *gorm.DB) ([]string, error) {
		var v []struct{ Name string }
		err := tx.Model(&FmAcct{}).Select("(SELECT x.name FROM fm_accts x WHERE x.id = 129) AS name").Where("id = ?", 1).Scan(&v).Error
		var out []string
		for _, r := range v {
			out = append(out, r.Name)
		}
		return out, err
	}},
	// Raw into the model: the rows are locked by their keys.
	{"Raw.Find(model): self-JOIN", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcct
		err := tx.Raw("SELECT a.id, b.name, b.credit FROM fm_accts a " + fmSelfJoin + " WHERE a.id = 1").Find(&v).Error
		return fmNames(v), err
	}},
	{"Raw.Find(model): UNION ALL with another row under key 1", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcct
		err := tx.Raw("SELECT id, name, credit FROM fm_accts WHERE id = 1 UNION ALL SELECT 1, name, credit FROM fm_accts WHERE id = 129").Find(&v).Error
		return fmNames(v), err
	}},
	{"Raw.Find(model): scalar subquery", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcct
		err := tx.Raw("SELECT id, (SELECT x.name FROM fm_accts x WHERE x.id = 129) AS name, credit FROM fm_accts WHERE id = 1").Find(&v).Error
		return fmNames(v), err
	}},
	{"Raw.Find(model): CTE", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcct
		err := tx.Raw("WITH s AS (SELECT name FROM fm_accts WHERE id = 129) SELECT a.id, s.name, a.credit FROM fm_accts a, s WHERE a.id = 1").Find(&v).Error
		return fmNames(v), err
	}},
	{"Raw.Find(model): named arguments", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcct
		err := tx.Raw("SELECT a.id, b.name, a.credit FROM fm_accts a JOIN fm_accts b ON b.id = @secret WHERE a.id = @mine",
			map[string]any{"secret": 129, "mine": 1}).Find(&v).Error
		return fmNames(v), err
	}},
	// Generics.
	{"Generics/G[FmAcct].Raw.Find: self-JOIN", "", func(tx *gorm.DB) ([]string, error) {
		v, err := gorm.G[FmAcct](tx).Raw("SELECT a.id, b.name, b.credit FROM fm_accts a " + fmSelfJoin + " WHERE a.id = 1").Find(tx.Statement.Context)
		return fmNames(v), err
	}},
	{"Generics/G[FmAcct].Select(subquery).Where.Find", "", func(tx *gorm.DB) ([]string, error) {
		v, err := gorm.G[FmAcct](tx).Select("id, (SELECT x.name FROM fm_accts x WHERE x.id = 129) AS name").Where("id = ?", 1).Find(tx.Statement.Context)
		return fmNames(v), err
	}},
}

// A WHERE that names the key by an equality next to a fragment that GORM
// parenthesises into an OR: the plugin takes the rows as pinned to key 1.
var fmOrSpliceLoads = []fmLoad{
	{"Row/Rows: Where(&FmAcct{ID: 1}).Where(OR splice)", "", func(tx *gorm.DB) ([]string, error) {
		return fmRowNames(tx.Model(&FmAcct{}).Select("name").Where(&FmAcct{ID: 1}).Where(fmOrSplice))
	}},
	{"Row/Scan(struct): Where(&FmAcct{ID: 1}).Where(OR splice)", "", func(tx *gorm.DB) ([]string, error) {
		var v []struct{ Name string }
		err := tx.Model(&FmAcct{}).Where(&FmAcct{ID: 1}).Where(fmOrSplice).Scan(&v).Error
		var out []string
		for _, r := range v {
			out = append(out, r.Name)
		}
		return out, err
	}},
	{"Row/Row: clause.Eq by hand then OR splice", "", func(tx *gorm.DB) ([]string, error) {
		var s string
		q := tx.Model(&FmAcct{}).Select("name").
			Where(clause.Eq{Column: clause.Column{Table: clause.CurrentTable, Name: clause.PrimaryKey}, Value: 1}).
			Where(fmOrSplice).Order("id DESC")
		row := q.Row()
		if row == nil {
			// GORM's Row has no error of its own: a statement refused before
			// the query returns a nil *sql.Row, with the error on q.
			return nil, q.Error
		}
		err := row.Scan(&s)
		return []string{s}, err
	}},
	{"Query/Find(model): OR splice", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcct
		err := tx.Where(&FmAcct{ID: 1}).Where(fmOrSplice).Find(&v).Error
		return fmNames(v), err
	}},
	{"Query/Find(*[]*model): OR splice", "", func(tx *gorm.DB) ([]string, error) {
		var v []*FmAcct
		err := tx.Where(&FmAcct{ID: 1}).Where(fmOrSplice).Find(&v).Error
		var out []string
		for _, r := range v {
			out = append(out, r.Name)
		}
		return out, err
	}},
	{"Query/Find(*[3]model array): OR splice", "", func(tx *gorm.DB) ([]string, error) {
		var v [3]FmAcct
		err := tx.Where(&FmAcct{ID: 1}).Where(fmOrSplice).Find(&v).Error
		return fmNames(v[:]), err
	}},
	{"Query/Find(DTO): OR splice", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcctView
		err := tx.Where(&FmAcctView{ID: 1}).Where(fmOrSplice).Find(&v).Error
		var out []string
		for _, r := range v {
			out = append(out, r.Name)
		}
		return out, err
	}},
	{"Query/Pluck: OR splice", "", func(tx *gorm.DB) ([]string, error) {
		var v []string
		err := tx.Model(&FmAcct{}).Where(&FmAcct{ID: 1}).Where(fmOrSplice).Pluck("name", &v).Error
		return v, err
	}},
	{"Query/Take(map): OR splice, 129 first", "", func(tx *gorm.DB) ([]string, error) {
		v := map[string]any{}
		err := tx.Model(&FmAcct{}).Where(&FmAcct{ID: 1}).Where(fmOrSplice).Order("id DESC").Take(&v).Error
		return []string{fmt.Sprint(v["name"])}, err
	}},
	{"Query/First(model) fast path: OR splice, 129 first", "", func(tx *gorm.DB) ([]string, error) {
		var v FmAcct
		err := tx.Where(fmOrSplice).Order("id DESC").Take(&v, 1).Error
		return []string{v.Name}, err
	}},
	{"Generics/G[FmAcct].Where(struct).Where(OR splice).Find", "", func(tx *gorm.DB) ([]string, error) {
		v, err := gorm.G[FmAcct](tx).Where(&FmAcct{ID: 1}).Where(fmOrSplice).Find(tx.Statement.Context)
		return fmNames(v), err
	}},
}

// fmRunLoads: Martin holds account 129 by loading it; David's load of
// account 1 that reaches 129 must be refused, return nothing of 129 and
// leave no lock of David's. The holder's run of the same shape returns
// 129's name (or is refused as unenforceable).
func fmRunLoads(t *testing.T, loads []fmLoad) {
	eachFm(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for _, l := range loads {
			if l.only != "" && l.only != db.Dialector.Name() {
				continue
			}
			t.Run(l.name, func(t *testing.T) {
				fcReset(t, db, p)
				require.NoError(t, as(db, martin).First(&FmAcct{}, 129).Error)
				var got []string
				err := fcSafe(t, func() error { var e error; got, e = l.load(as(db, david)); return e })
				assert.NotContains(t, got, "secret", "David read account 129 held by Martin")
				fmRefused(t, err, "David's load reached account 129 held by Martin")
				assert.False(t, fcHolds(t, db, p, &FmAcct{ID: 129}, david, offlinelock.Write))
				if err != nil {
					assert.Empty(t, fcLocksOf(t, db, p, david), "the refused load left locks")
				}

				// The holder (of 129, and of 1 once he loads it).
				fcReset(t, db, p)
				require.NoError(t, as(db, martin).First(&FmAcct{}, 129).Error)
				err = fcSafe(t, func() error { var e error; got, e = l.load(as(db, martin)); return e })
				if err != nil {
					assert.True(t, fcUnenforceable(err), "the holder's load may only be refused as unenforceable, got %v", err)
				} else {
					assert.Contains(t, got, "secret", "setup: the shape reads account 129")
				}
			})
		}
	})
}

func TestFailClosedMoreOwnTableReferencedTwice(t *testing.T) {
	fmRunLoads(t, fmSelfReferenceLoads)
}

func TestFailClosedMoreKeyEqualityNextToAnOrSplice(t *testing.T) {
	fmRunLoads(t, fmOrSpliceLoads)
}

// Other load shapes, expected to be enforced already: kept as regressions.
var fmOtherLoads = []fmLoad{
	{"FindInBatches", "", func(tx *gorm.DB) ([]string, error) {
		var out []string
		var batch []FmAcct
		err := tx.Where("id > ?", 0).FindInBatches(&batch, 1, func(b *gorm.DB, _ int) error {
			out = append(out, fmNames(batch)...)
			return nil
		}).Error
		return out, err
	}},
	{"Rows+ScanRows", "", func(tx *gorm.DB) ([]string, error) {
		rows, err := tx.Model(&FmAcct{}).Where("credit > ?", 0).Rows()
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var a FmAcct
			if err := tx.ScanRows(rows, &a); err != nil {
				return out, err
			}
			out = append(out, a.Name)
		}
		return out, nil
	}},
	{"FirstOrInit(Attrs)", "", func(tx *gorm.DB) ([]string, error) {
		var a FmAcct
		err := tx.Where(FmAcct{Name: "secret"}).Attrs(FmAcct{Credit: 1}).FirstOrInit(&a).Error
		if a.Credit == 9999 { // the name is the condition's; the credit is the row's
			return []string{"secret"}, err
		}
		return nil, err
	}},
	{"FirstOrCreate(Assign)", "", func(tx *gorm.DB) ([]string, error) {
		var a FmAcct
		err := tx.Where(FmAcct{ID: 129}).Assign(FmAcct{Credit: 5}).FirstOrCreate(&a).Error
		return []string{a.Name}, err
	}},
	{"Scopes", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcct
		err := tx.Scopes(func(d *gorm.DB) *gorm.DB { return d.Where("credit > ?", 5000) }).Find(&v).Error
		return fmNames(v), err
	}},
	{"Select(*).Omit(credit)", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcct
		err := tx.Select("*").Omit("credit").Where("id = ?", 129).Find(&v).Error
		return fmNames(v), err
	}},
	{"Session(QueryFields)", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcct
		err := tx.Session(&gorm.Session{QueryFields: true}).Where("id = ?", 129).Find(&v).Error
		return fmNames(v), err
	}},
	{"Clauses(clause.Where{Eq}) by hand, key as text", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcct
		err := tx.Clauses(clause.Where{Exprs: []clause.Expression{clause.Eq{Column: clause.PrimaryColumn, Value: " 0129"}}}).Find(&v).Error
		return fmNames(v), err
	}},
	{"Clauses(clause.Locking FOR UPDATE)", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcct
		err := tx.Transaction(func(tx *gorm.DB) error {
			return tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("id = ?", 129).Find(&v).Error
		})
		return fmNames(v), err
	}},
	{"Distinct(name).Order.Limit", "", func(tx *gorm.DB) ([]string, error) {
		var v []string
		err := tx.Model(&FmAcct{}).Distinct("name").Where("credit > ?", 5000).Order("name DESC").Limit(1).Pluck("name", &v).Error
		return v, err
	}},
	{"Group(name).Having", "", func(tx *gorm.DB) ([]string, error) {
		var v []string
		err := tx.Model(&FmAcct{}).Select("name").Group("name").Having("max(credit) > ?", 5000).Pluck("name", &v).Error
		return v, err
	}},
	{"Pluck of the key only, then the name", "", func(tx *gorm.DB) ([]string, error) {
		var ids []uint
		err := tx.Model(&FmAcct{}).Where("credit > ?", 5000).Pluck("id", &ids).Error
		if len(ids) > 0 {
			return []string{"secret"}, err // the key of the locked row: treated as read
		}
		return nil, err
	}},
	{"Model(untagged).Table(fm_accts)", "", func(tx *gorm.DB) ([]string, error) {
		var v []Customer
		err := tx.Model(&Customer{}).Table("fm_accts").Where(&Customer{ID: 129}).Find(&v).Error
		var out []string
		for _, c := range v {
			out = append(out, c.Name)
		}
		return out, err
	}},
	{"Table(test.public.fm_accts) three parts", "postgres", func(tx *gorm.DB) ([]string, error) {
		var v []map[string]any
		err := tx.Table("test.public.fm_accts").Where("id = ?", 129).Find(&v).Error
		var out []string
		for _, r := range v {
			out = append(out, fmt.Sprint(r["name"]))
		}
		return out, err
	}},
	{"Joins(FmAcct) from an untagged model with conditions", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmSeat
		err := tx.Joins("FmAcct", tx.Session(&gorm.Session{NewDB: true}).Where(&FmAcct{Name: "secret"})).Find(&v).Error
		var out []string
		for _, s := range v {
			if s.FmAcct != nil {
				out = append(out, s.FmAcct.Name)
			}
		}
		return out, err
	}},
	{"InnerJoins(FmAcct) from an untagged model", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmSeat
		err := tx.InnerJoins("FmAcct").Where("fm_seats.id = ?", 129).Find(&v).Error
		var out []string
		for _, s := range v {
			if s.FmAcct != nil {
				out = append(out, s.FmAcct.Name)
			}
		}
		return out, err
	}},
	{"Joins(FmAcct) into Rows", "", func(tx *gorm.DB) ([]string, error) {
		rows, err := tx.Model(&FmSeat{}).Joins("FmAcct").Where("fm_seats.id = ?", 129).Rows()
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var out []string
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return out, err
			}
			for _, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				out = append(out, fmt.Sprint(v))
			}
		}
		return out, rows.Err()
	}},
	{"Preload(FmAcct, condition)", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmSeat
		err := tx.Preload("FmAcct", "name = ?", "secret").Find(&v).Error
		var out []string
		for _, s := range v {
			if s.FmAcct != nil {
				out = append(out, s.FmAcct.Name)
			}
		}
		return out, err
	}},
	{"Association(FmAcct).Find", "", func(tx *gorm.DB) ([]string, error) {
		var a FmAcct
		err := tx.Model(&FmSeat{ID: 129, FmAcctID: 129}).Association("FmAcct").Find(&a)
		return []string{a.Name}, err
	}},
	{"Generics/G[FmAcct].Where.First", "", func(tx *gorm.DB) ([]string, error) {
		a, err := gorm.G[FmAcct](tx).Where("id = ?", "129").First(tx.Statement.Context)
		return []string{a.Name}, err
	}},
	{"Generics/G[FmAcctView].Where.Find", "", func(tx *gorm.DB) ([]string, error) {
		v, err := gorm.G[FmAcctView](tx).Where("credit > ?", 5000).Find(tx.Statement.Context)
		var out []string
		for _, r := range v {
			out = append(out, r.Name)
		}
		return out, err
	}},
	{"Generics/G[FmSeat].Joins(FmAcct).Find", "", func(tx *gorm.DB) ([]string, error) {
		v, err := gorm.G[FmSeat](tx).Joins(clause.LeftJoin.Association("FmAcct"), nil).Where("fm_seats.id = ?", 129).Find(tx.Statement.Context)
		var out []string
		for _, s := range v {
			if s.FmAcct != nil {
				out = append(out, s.FmAcct.Name)
			}
		}
		return out, err
	}},
	{"Generics/G[FmSeat].Preload(FmAcct).Find", "", func(tx *gorm.DB) ([]string, error) {
		v, err := gorm.G[FmSeat](tx).Preload("FmAcct", nil).Find(tx.Statement.Context)
		var out []string
		for _, s := range v {
			if s.FmAcct != nil {
				out = append(out, s.FmAcct.Name)
			}
		}
		return out, err
	}},
	{"Generics/G[map].Table.Scan", "", func(tx *gorm.DB) ([]string, error) {
		var v []struct{ Name string }
		err := gorm.G[FmAcct](tx).Where("id = ?", 129).Scan(tx.Statement.Context, &v)
		var out []string
		for _, r := range v {
			out = append(out, r.Name)
		}
		return out, err
	}},
	{"Transaction with SavePoint/RollbackTo", "", func(tx *gorm.DB) ([]string, error) {
		var v []FmAcct
		err := tx.Transaction(func(tx *gorm.DB) error {
			tx.SavePoint("fm")
			err := tx.Where("id = ?", 129).Find(&v).Error
			tx.RollbackTo("fm")
			return err
		})
		return fmNames(v), err
	}},
}

func TestFailClosedMoreLoadsStillEnforced(t *testing.T) {
	eachFm(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for _, l := range fmOtherLoads {
			if l.only != "" && l.only != db.Dialector.Name() {
				continue
			}
			t.Run(l.name, func(t *testing.T) {
				fcReset(t, db, p)
				require.NoError(t, as(db, martin).First(&FmAcct{}, 129).Error)
				var got []string
				err := fcSafe(t, func() error { var e error; got, e = l.load(as(db, david)); return e })
				assert.NotContains(t, got, "secret", "David read account 129 held by Martin")
				fmRefused(t, err, "David's load reached account 129 held by Martin")
				if l.name != "FindInBatches" { // earlier batches succeeded and keep their locks
					assert.Empty(t, fcLocksOf(t, db, p, david), "the refused load left locks")
				}
				assert.Equal(t, "secret", fmAcctName(t, db, 129))

				fcReset(t, db, p)
				require.NoError(t, as(db, martin).First(&FmAcct{}, 129).Error)
				err = fcSafe(t, func() error { var e error; got, e = l.load(as(db, martin)); return e })
				if err != nil {
					assert.True(t, fcUnenforceable(err), "the holder's load may only be refused as unenforceable, got %v", err)
				} else {
					assert.Contains(t, got, "secret", "setup: the shape reads account 129")
				}
				require.NoError(t, admin(db).Save(&FmAcct{ID: 129, Name: "secret", Credit: 9999}).Error)
			})
		}
	})
}

// fmWrite is a write of David's own account 1 that copies, or tests,
// something of account 129.
type fmWrite struct {
	name  string
	write func(tx *gorm.DB) error
}

var fmSelfReferenceWrites = []fmWrite{
	{"Update: Model(key).Update(name, Expr(subquery of own table))", func(tx *gorm.DB) error {
		return tx.Model(&FmAcct{ID: 1}).Update("name", gorm.Expr("(SELECT x.name FROM fm_accts x WHERE x.id = 129)")).Error
	}},
	{"Updates: Where.Updates(map with Expr(subquery of own table))", func(tx *gorm.DB) error {
		return tx.Model(&FmAcct{}).Where("id = ?", 1).
			Updates(map[string]any{"name": gorm.Expr("(SELECT x.name FROM fm_accts x WHERE x.id = 129)")}).Error
	}},
	{"UpdateColumn: Clauses(clause.Set) with subquery of own table", func(tx *gorm.DB) error {
		return tx.Model(&FmAcct{}).Where("id = ?", 1).
			Clauses(clause.Set{{Column: clause.Column{Name: "name"}, Value: gorm.Expr("(SELECT x.name FROM fm_accts x WHERE x.id = 129)")}}).
			Updates(map[string]any{}).Error
	}},
	{"Update: Where subquery of own table (oracle)", func(tx *gorm.DB) error {
		return tx.Model(&FmAcct{ID: 1}).Where("EXISTS (SELECT 1 FROM fm_accts x WHERE x.id = 129 AND x.name = 'secret')").
			Update("name", "secret").Error
	}},
	{"Generics: G[FmAcct].Where.Set(subquery of own table).Update", func(tx *gorm.DB) error {
		_, err := gorm.G[FmAcct](tx).Where("id = ?", 1).
			Set(clause.Assignment{Column: clause.Column{Name: "name"}, Value: gorm.Expr("(SELECT x.name FROM fm_accts x WHERE x.id = 129)")}).
			Update(tx.Statement.Context)
		return err
	}},
	{"Create: INSERT … SELECT-like value from own table", func(tx *gorm.DB) error {
		return tx.Model(&FmAcct{}).Create(map[string]any{"id": 3, "name": gorm.Expr("(SELECT x.name FROM fm_accts x WHERE x.id = 129)"), "credit": 0}).Error
	}},
}

// TestFailClosedMoreWritesThatReadTheOwnTable: David holds account 1 and
// writes it with a value read from account 129, which Martin holds.
func TestFailClosedMoreWritesThatReadTheOwnTable(t *testing.T) {
	eachFm(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		leaked := func() bool {
			var n int64
			require.NoError(t, admin(db).Model(&FmAcct{}).Where("id <> ? AND name = ?", 129, "secret").Count(&n).Error)
			return n > 0
		}
		reset := func() {
			fcReset(t, db, p)
			require.NoError(t, admin(db).Where("id NOT IN ?", []uint{1, 2, 129}).Delete(&FmAcct{}).Error)
			require.NoError(t, admin(db).Save(&FmAcct{ID: 1, Name: "one", Credit: 1}).Error)
		}
		for _, w := range fmSelfReferenceWrites {
			t.Run(w.name, func(t *testing.T) {
				reset()
				require.NoError(t, as(db, martin).First(&FmAcct{}, 129).Error)
				require.NoError(t, as(db, david).First(&FmAcct{}, 1).Error)
				_, err := p.Acquire(as(db, david), &FmAcct{ID: 3}, offlinelock.Write)
				require.NoError(t, err)
				err = fcSafe(t, func() error { return w.write(as(db, david)) })
				assert.False(t, leaked(), "David's row now carries account 129's name")
				fmRefused(t, err, "David's write read account 129 held by Martin")

				reset()
				require.NoError(t, as(db, martin).First(&FmAcct{}, 129).Error)
				require.NoError(t, as(db, martin).First(&FmAcct{}, 1).Error)
				_, err = p.Acquire(as(db, martin), &FmAcct{ID: 3}, offlinelock.Write)
				require.NoError(t, err)
				err = fcSafe(t, func() error { return w.write(as(db, martin)) })
				if err != nil {
					assert.True(t, fcUnenforceable(err), "the holder may only be refused as unenforceable, got %v", err)
				} else {
					assert.True(t, leaked(), "setup: the holder's write copies the name")
				}
			})
		}
	})
}

// fmKeyWrite: Martin holds the record under one spelling of its key, David
// takes a Write lock under another spelling of the same row and writes.
type fmKeyWrite struct {
	name  string
	write func(tx *gorm.DB, id string) error
}

func fmKeyWrites[T any](mk func(id, name string) *T) []fmKeyWrite {
	return []fmKeyWrite{
		{"Save(model)", func(tx *gorm.DB, id string) error { return tx.Save(mk(id, "leak")).Error }},
		{"Model(key).Update", func(tx *gorm.DB, id string) error {
			return tx.Model(mk(id, "")).Update("name", "leak").Error
		}},
		{"Model(key).Updates(map)", func(tx *gorm.DB, id string) error {
			return tx.Model(mk(id, "")).Updates(map[string]any{"name": "leak"}).Error
		}},
		{"Where(struct).Updates", func(tx *gorm.DB, id string) error {
			return tx.Model(new(T)).Where(mk(id, "")).Updates(map[string]any{"name": "leak"}).Error
		}},
		{"OnConflict(UpdateAll).Create", func(tx *gorm.DB, id string) error {
			return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(mk(id, "leak")).Error
		}},
		{"Delete(model)", func(tx *gorm.DB, id string) error { return tx.Delete(mk(id, "")).Error }},
	}
}

func fmRunKeySpellings[T any](t *testing.T, db *gorm.DB, p *offlinelock.Plugin, mk func(id, name string) *T, held, other string) {
	state := func() []map[string]any {
		var rows []map[string]any
		require.NoError(t, admin(db).Model(new(T)).Select("name").Find(&rows).Error)
		return rows
	}
	for _, w := range fmKeyWrites(mk) {
		t.Run(w.name, func(t *testing.T) {
			fcReset(t, db, p)
			require.NoError(t, admin(db).Where("1 = 1").Delete(new(T)).Error)
			require.NoError(t, admin(db).Create(mk(held, "orig")).Error)
			before := state()
			_, err := p.Acquire(as(db, martin), mk(held, ""), offlinelock.Write)
			require.NoError(t, err)
			_, err = p.Acquire(as(db, david), mk(other, ""), offlinelock.Write)
			if err == nil {
				err = fcSafe(t, func() error { return w.write(as(db, david), other) })
				fmRefused(t, err, "David wrote the row %q held by Martin as %q", other, held)
			} else {
				fmRefused(t, err, "Acquire")
			}
			assert.Equal(t, before, state(), "the row held by Martin changed")

			// The holder writes it under his own spelling.
			require.NoError(t, fcSafe(t, func() error { return w.write(as(db, martin), held) }))
			assert.NotEqual(t, before, state(), "setup: the holder's write lands")
		})
	}
}

func TestFailClosedMoreKeySpellingsTheColumnEquates(t *testing.T) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			var extra []any
			if d.name == "sqlite" {
				extra = []any{&FmCi{}, &FmCiRead{}}
			} else {
				extra = []any{&FmChr{}}
			}
			db, p := fmSetup(t, d, extra...)
			t.Run("string field on an integer column: 129 vs 0129", func(t *testing.T) {
				fmRunKeySpellings(t, db, p, func(id, name string) *FmIntStr { return &FmIntStr{ID: id, Name: name} }, "129", "0129")
			})
			if d.name == "sqlite" {
				t.Run("COLLATE NOCASE key: ABC vs abc", func(t *testing.T) {
					fmRunKeySpellings(t, db, p, func(id, name string) *FmCi { return &FmCi{ID: id, Name: name} }, "ABC", "abc")
				})
				t.Run("COLLATE NOCASE key locked on load: Where(struct).Rows", func(t *testing.T) {
					fcReset(t, db, p)
					require.NoError(t, admin(db).Where("1 = 1").Delete(&FmCiRead{}).Error)
					require.NoError(t, admin(db).Create(&FmCiRead{ID: "ABC", Name: "secret"}).Error)
					require.NoError(t, as(db, martin).First(&FmCiRead{}, "id = ?", "ABC").Error)
					for _, q := range []func(tx *gorm.DB) ([]string, error){
						func(tx *gorm.DB) ([]string, error) {
							return fmRowNames(tx.Model(&FmCiRead{}).Select("name").Where(&FmCiRead{ID: "abc"}))
						},
						func(tx *gorm.DB) ([]string, error) {
							var v []FmCiRead
							err := tx.Where(&FmCiRead{ID: "abc"}).Find(&v).Error
							var out []string
							for _, r := range v {
								out = append(out, r.Name)
							}
							return out, err
						},
					} {
						fcReset(t, db, p)
						require.NoError(t, as(db, martin).First(&FmCiRead{}, "id = ?", "ABC").Error)
						var got []string
						err := fcSafe(t, func() error { var e error; got, e = q(as(db, david)); return e })
						assert.NotContains(t, got, "secret", "David read ABC held by Martin")
						fmRefused(t, err, "David read ABC as abc")
						fcReset(t, db, p)
						require.NoError(t, as(db, martin).First(&FmCiRead{}, "id = ?", "ABC").Error)
						got, err = q(as(db, martin))
						require.NoError(t, err)
						assert.Contains(t, got, "secret")
					}
				})
			} else {
				t.Run("char(6) key: ab vs ab+spaces", func(t *testing.T) {
					fmRunKeySpellings(t, db, p, func(id, name string) *FmChr { return &FmChr{ID: id, Name: name} }, "ab", "ab  ")
				})
			}
		})
	}
}

// TestFailClosedMoreUpserts: upserts whose real conflict target is not the
// key they name.
func TestFailClosedMoreUpserts(t *testing.T) {
	eachFm(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		if db.Dialector.Name() != "postgres" {
			t.Skip("ON CONSTRAINT is PostgreSQL's")
		}
		require.NoError(t, admin(db).Exec(`ALTER TABLE fm_uqs ADD CONSTRAINT fm_uqs_name_key UNIQUE (name)`).Error)
		upserts := []fmWrite{
			{"OnConflict{Columns: id, OnConstraint: unique name, DoUpdates}.Create(new key)", func(tx *gorm.DB) error {
				return tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, OnConstraint: "fm_uqs_name_key",
					DoUpdates: clause.Assignments(map[string]any{"credit": 777})}).Create(&FmUq{ID: 500, Name: "secret", Credit: 1}).Error
			}},
			{"OnConflict{UpdateAll, OnConstraint: unique name}.Create(new key)", func(tx *gorm.DB) error {
				return tx.Clauses(clause.OnConflict{UpdateAll: true, OnConstraint: "fm_uqs_name_key"}).
					Create(&FmUq{ID: 500, Name: "secret", Credit: 777}).Error
			}},
		}
		for _, u := range upserts {
			t.Run(u.name, func(t *testing.T) {
				fcReset(t, db, p)
				require.NoError(t, admin(db).Where("1 = 1").Delete(&FmUq{}).Error)
				require.NoError(t, admin(db).Create(&FmUq{ID: 129, Name: "secret", Credit: 1}).Error)
				_, err := p.Acquire(as(db, martin), &FmUq{ID: 129}, offlinelock.Write)
				require.NoError(t, err)
				err = fcSafe(t, func() error { return u.write(as(db, david)) })
				fmRefused(t, err, "David's upsert overwrote row 129 held by Martin")
				var got FmUq
				require.NoError(t, admin(db).First(&got, 129).Error)
				assert.Equal(t, 1, got.Credit, "row 129 held by Martin changed")

				err = fcSafe(t, func() error { return u.write(as(db, martin)) })
				if err != nil {
					assert.True(t, fcUnenforceable(err), "the holder may only be refused as unenforceable, got %v", err)
				}
			})
		}
	})
}

// TestFailClosedMoreChangingThePrimaryKey: an Update of the key itself
// creates the new key's record: a key another session locked ahead must
// refuse it, as it refuses Create.
func TestFailClosedMoreChangingThePrimaryKey(t *testing.T) {
	writes := []fmWrite{
		{"Model(key).Update(id)", func(tx *gorm.DB) error { return tx.Model(&FmDoc{ID: 1}).Update("id", 500).Error }},
		{"Model(key).Updates(map id)", func(tx *gorm.DB) error {
			return tx.Model(&FmDoc{ID: 1}).Updates(map[string]any{"id": 500, "title": "moved"}).Error
		}},
		{"Where.UpdateColumn(id)", func(tx *gorm.DB) error {
			return tx.Model(&FmDoc{}).Where("id = ?", 1).UpdateColumn("id", 500).Error
		}},
	}
	eachFm(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		exists := func(id uint) bool {
			var n int64
			require.NoError(t, admin(db).Model(&FmDoc{}).Where("id = ?", id).Count(&n).Error)
			return n == 1
		}
		for _, w := range writes {
			t.Run(w.name, func(t *testing.T) {
				fcReset(t, db, p)
				require.NoError(t, admin(db).Where("1 = 1").Delete(&FmDoc{}).Error)
				require.NoError(t, admin(db).Create(&FmDoc{ID: 1, Title: "mine"}).Error)
				_, err := p.Acquire(as(db, martin), &FmDoc{ID: 500}, offlinelock.Write)
				require.NoError(t, err)
				_, err = p.Acquire(as(db, david), &FmDoc{ID: 1}, offlinelock.Write)
				require.NoError(t, err)
				err = fcSafe(t, func() error { return w.write(as(db, david)) })
				fmRefused(t, err, "David created doc 500, locked ahead by Martin, by changing doc 1's key")
				assert.False(t, exists(500), "doc 500 exists")
				assert.True(t, exists(1))

				// Holding both, Martin moves the key.
				fcReset(t, db, p)
				for _, id := range []uint{1, 500} {
					_, err := p.Acquire(as(db, martin), &FmDoc{ID: id}, offlinelock.Write)
					require.NoError(t, err)
				}
				require.NoError(t, fcSafe(t, func() error { return w.write(as(db, martin)) }))
				assert.True(t, exists(500))
			})
		}
	})
}

// TestFailClosedMoreSchemaObjects: what the schema does on its own: a
// cascading foreign key, a view made with GORM's Migrator.
func TestFailClosedMoreSchemaObjects(t *testing.T) {
	eachFm(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		t.Run("Delete of a parent cascades to a child held by another session", func(t *testing.T) {
			fcReset(t, db, p)
			require.NoError(t, admin(db).Where("1 = 1").Delete(&FmChild{}).Error)
			require.NoError(t, admin(db).Where("1 = 1").Delete(&FmParent{}).Error)
			require.NoError(t, admin(db).Create(&FmParent{ID: 1}).Error)
			require.NoError(t, admin(db).Create(&FmChild{ID: 1, FmParentID: 1, Name: "martin's"}).Error)
			_, err := p.Acquire(as(db, martin), &FmChild{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			_, err = p.Acquire(as(db, david), &FmParent{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			err = fcSafe(t, func() error { return as(db, david).Delete(&FmParent{ID: 1}).Error })
			fmRefused(t, err, "David's delete removed child 1 held by Martin")
			var n int64
			require.NoError(t, admin(db).Model(&FmChild{}).Where("id = ?", 1).Count(&n).Error)
			assert.EqualValues(t, 1, n, "child 1, held by Martin, was deleted")

			// The holder of both deletes them.
			require.NoError(t, admin(db).Save(&FmParent{ID: 1}).Error)
			require.NoError(t, admin(db).Save(&FmChild{ID: 1, FmParentID: 1, Name: "martin's"}).Error)
			fcReset(t, db, p)
			_, err = p.Acquire(as(db, martin), &FmChild{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			_, err = p.Acquire(as(db, martin), &FmParent{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			require.NoError(t, as(db, martin).Delete(&FmParent{ID: 1}).Error)
		})
		t.Run("Select(Associations).Delete of a parent (GORM's own cascade)", func(t *testing.T) {
			type FmParentWithKids struct {
				ID       uint      `gorm:"primaryKey" lock:"exclusive_write"`
				FmChilds []FmChild `gorm:"foreignKey:FmParentID"`
			}
			fcReset(t, db, p)
			require.NoError(t, admin(db).Where("1 = 1").Delete(&FmChild{}).Error)
			require.NoError(t, admin(db).Where("1 = 1").Delete(&FmParent{}).Error)
			require.NoError(t, admin(db).Create(&FmParent{ID: 1}).Error)
			require.NoError(t, admin(db).Create(&FmChild{ID: 1, FmParentID: 1, Name: "martin's"}).Error)
			_, err := p.Acquire(as(db, martin), &FmChild{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			_, err = p.Acquire(as(db, david), &FmParent{ID: 1}, offlinelock.Write)
			require.NoError(t, err)
			err = fcSafe(t, func() error {
				return as(db, david).Table("fm_parents").Select(clause.Associations).Delete(&FmParentWithKids{ID: 1}).Error
			})
			fmRefused(t, err, "David's association delete removed child 1 held by Martin")
			var n int64
			require.NoError(t, admin(db).Model(&FmChild{}).Where("id = ?", 1).Count(&n).Error)
			assert.EqualValues(t, 1, n, "child 1, held by Martin, was deleted")
		})
		t.Run("Migrator().CreateView over a lockable table, then read and write through it", func(t *testing.T) {
			fcReset(t, db, p)
			t.Cleanup(func() { admin(db).Migrator().DropView("fm_acct_view"); admin(db).Migrator().DropView("fm_doc_view") })
			require.NoError(t, admin(db).Create(&FmDoc{ID: 129, Title: "draft"}).Error)
			require.NoError(t, as(db, martin).First(&FmAcct{}, 129).Error)
			_, err := p.Acquire(as(db, martin), &FmDoc{ID: 129}, offlinelock.Write)
			require.NoError(t, err)

			dv := as(db, david)
			errView := fcSafe(t, func() error {
				return dv.Migrator().CreateView("fm_acct_view", gorm.ViewOption{Query: dv.Model(&FmAcct{})})
			})
			if errView != nil {
				fmRefused(t, errView, "CreateView")
			} else {
				var v []map[string]any
				err := fcSafe(t, func() error { return dv.Table("fm_acct_view").Where("id = ?", 129).Find(&v).Error })
				if !assert.Empty(t, v, "David read account 129 held by Martin through a view") {
					fmRefused(t, err, "the read through the view")
				}
			}
			errView = fcSafe(t, func() error {
				return dv.Migrator().CreateView("fm_doc_view", gorm.ViewOption{Query: dv.Model(&FmDoc{})})
			})
			if errView != nil {
				fmRefused(t, errView, "CreateView")
			} else if db.Dialector.Name() == "postgres" { // simple views are updatable
				err := fcSafe(t, func() error {
					return dv.Table("fm_doc_view").Where("id = ?", 129).Update("title", "leak").Error
				})
				var d FmDoc
				require.NoError(t, admin(db).First(&d, 129).Error)
				if !assert.Equal(t, "draft", d.Title, "David wrote doc 129 held by Martin through a view") {
					fmRefused(t, err, "the write through the view")
				}
			}
		})
	})
}

// TestFailClosedMoreModelShapes: the lock tag where GORM lets it live
// (embedded structs), soft deletes, PrepareStmt.
func TestFailClosedMoreModelShapes(t *testing.T) {
	eachFm(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		t.Run("key tagged in an anonymously embedded struct", func(t *testing.T) {
			fcReset(t, db, p)
			require.NoError(t, admin(db).Create(&FmEmb{FmEmbBase: FmEmbBase{ID: 129}, Name: "secret"}).Error)
			require.NoError(t, fcSafe(t, func() error { return as(db, martin).First(&FmEmb{}, 129).Error }))
			assert.NotEmpty(t, fcLocksOf(t, db, p, martin), "Martin's load of an exclusive_read row took no lock")
			var got FmEmb
			err := fcSafe(t, func() error { return as(db, david).First(&got, 129).Error })
			assert.NotEqual(t, "secret", got.Name, "David read the row held by Martin")
			fmRefused(t, err, "David's load")
		})
		t.Run("key tagged in a gorm:embedded field", func(t *testing.T) {
			fcReset(t, db, p)
			require.NoError(t, admin(db).Create(&FmEmbNamed{Base: FmEmbBase{ID: 129}, Name: "secret"}).Error)
			require.NoError(t, fcSafe(t, func() error { return as(db, martin).First(&FmEmbNamed{}, 129).Error }))
			assert.NotEmpty(t, fcLocksOf(t, db, p, martin), "Martin's load of an exclusive_read row took no lock")
			var got FmEmbNamed
			err := fcSafe(t, func() error { return as(db, david).First(&got, 129).Error })
			assert.NotEqual(t, "secret", got.Name, "David read the row held by Martin")
			fmRefused(t, err, "David's load")
		})
		t.Run("soft delete and Unscoped delete", func(t *testing.T) {
			for _, del := range []fmWrite{
				{"Delete (soft)", func(tx *gorm.DB) error { return tx.Delete(&FmSoft{ID: 129}).Error }},
				{"Unscoped.Delete", func(tx *gorm.DB) error { return tx.Unscoped().Delete(&FmSoft{ID: 129}).Error }},
				{"Unscoped.Where.Delete", func(tx *gorm.DB) error { return tx.Unscoped().Where("name = ?", "secret").Delete(&FmSoft{}).Error }},
				{"Unscoped.Update of a soft-deleted row", func(tx *gorm.DB) error {
					return tx.Unscoped().Model(&FmSoft{}).Where("id = ?", 129).Update("name", "leak").Error
				}},
			} {
				t.Run(del.name, func(t *testing.T) {
					fcReset(t, db, p)
					require.NoError(t, admin(db).Unscoped().Where("1 = 1").Delete(&FmSoft{}).Error)
					require.NoError(t, admin(db).Create(&FmSoft{ID: 129, Name: "secret"}).Error)
					if del.name == "Unscoped.Update of a soft-deleted row" {
						require.NoError(t, admin(db).Delete(&FmSoft{ID: 129}).Error)
					}
					var before []FmSoft
					require.NoError(t, admin(db).Unscoped().Find(&before).Error)
					_, err := p.Acquire(as(db, martin), &FmSoft{ID: 129}, offlinelock.Write)
					require.NoError(t, err)
					fmRefused(t, fcSafe(t, func() error { return del.write(as(db, david)) }), "David's delete")
					var after []FmSoft
					require.NoError(t, admin(db).Unscoped().Find(&after).Error)
					assert.Equal(t, before, after)
					require.NoError(t, fcSafe(t, func() error { return del.write(as(db, martin)) }), "the holder")
				})
			}
		})
	})
	for _, d := range databases() {
		t.Run("PrepareStmt "+d.name, func(t *testing.T) {
			db, p := fmSetup(t, fmPrepared(d))
			for i := 0; i < 2; i++ { // the second round runs the cached statements
				fcReset(t, db, p)
				require.NoError(t, as(db, martin).First(&FmAcct{}, 129).Error)
				var got []FmAcct
				fmRefused(t, as(db, david).Where("credit > ?", 5000).Find(&got).Error, "David's load")
				assert.NotContains(t, fmNames(got), "secret")
				var a FmAcct
				fmRefused(t, as(db, david).First(&a, 129).Error, "David's First")
				assert.Empty(t, fcLocksOf(t, db, p, david))
				fmRefused(t, as(db, david).Model(&FmAcct{ID: 129}).Update("name", "leak").Error, "David's write")
				assert.Equal(t, "secret", fmAcctName(t, db, 129))
				err := db.Transaction(func(tx *gorm.DB) error {
					return tx.WithContext(offlinelock.WithOwner(context.Background(), david)).First(&FmAcct{}, 129).Error
				})
				fmRefused(t, err, "David's First in a transaction")
				// The holder.
				require.NoError(t, as(db, martin).Model(&FmAcct{ID: 129}).Update("credit", 9999).Error)
				require.NoError(t, as(db, martin).Where("credit > ?", 5000).Find(&got).Error)
				assert.Contains(t, fmNames(got), "secret")
			}
		})
	}
}

// TestFailClosedMoreAssociationSaves: saving an untagged model writes its
// lockable belongs-to association.
func TestFailClosedMoreAssociationSaves(t *testing.T) {
	saves := []fmWrite{
		{"Session(FullSaveAssociations).Save(seat with account 129)", func(tx *gorm.DB) error {
			return tx.Session(&gorm.Session{FullSaveAssociations: true}).
				Save(&FmSeat{ID: 1, Label: "s1", FmAcctID: 129, FmAcct: &FmAcct{ID: 129, Name: "leak", Credit: 1}}).Error
		}},
		{"Session(FullSaveAssociations).Updates(seat with account 129)", func(tx *gorm.DB) error {
			return tx.Session(&gorm.Session{FullSaveAssociations: true}).Model(&FmSeat{ID: 1}).
				Updates(&FmSeat{Label: "s1", FmAcct: &FmAcct{ID: 129, Name: "leak", Credit: 1}}).Error
		}},
		{"Save(seat with account 129) plain", func(tx *gorm.DB) error {
			return tx.Save(&FmSeat{ID: 1, Label: "s1", FmAcctID: 129, FmAcct: &FmAcct{ID: 129, Name: "leak", Credit: 1}}).Error
		}},
	}
	eachFm(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for _, s := range saves {
			t.Run(s.name, func(t *testing.T) {
				fcReset(t, db, p)
				require.NoError(t, admin(db).Save(&FmAcct{ID: 129, Name: "secret", Credit: 9999}).Error)
				require.NoError(t, as(db, martin).First(&FmAcct{}, 129).Error)
				err := fcSafe(t, func() error { return s.write(as(db, david)) })
				assert.Equal(t, "secret", fmAcctName(t, db, 129), "David's association save changed account 129 held by Martin")
				if err != nil {
					assert.True(t, fcRefused(err), "got %v", err)
				}
				assert.Empty(t, fcLocksOf(t, db, p, david))
				require.NoError(t, fcSafe(t, func() error { return s.write(as(db, martin)) }), "the holder")
			})
		}
	})
}
