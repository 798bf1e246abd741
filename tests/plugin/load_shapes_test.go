package plugin_test

// Load shapes: every way GORM's API offers to read rows of a lockable
// table, including those the plugin cannot bound (DISTINCT, GROUP BY,
// aggregates, raw SQL, raw joins, the own table referenced twice, an OR
// spliced next to a key condition), is enforced exactly or refused. Each
// case asserts the promise exactly (a plugin error, nothing of the locked
// row in the destination, no lock row of the refused session) and
// confirms the holder's positive case, so that a failure is the plugin's.

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock"
)

// Class 3: loads the plugin cannot bound exactly.
var fcUnboundedLoads = []fcLoad{
	{"Distinct(name).Order.Limit(1)", "", func(tx *gorm.DB, _ uint) (bool, error) {
		v := []Account{{Name: "sentinel"}}
		err := tx.Distinct("name").Order("name DESC").Limit(1).Find(&v).Error
		return fcTouched([]Account{{Name: "sentinel"}}, v), err
	}},
	{"Model(Account).Distinct(name).Pluck", "", func(tx *gorm.DB, _ uint) (bool, error) {
		v := []string{"sentinel"}
		err := tx.Model(&Account{}).Distinct().Order("name DESC").Limit(1).Pluck("name", &v).Error
		return fcTouched([]string{"sentinel"}, v), err
	}},
	{"raw Joins text from an untagged model", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []string{"sentinel"}
		err := tx.Model(&Customer{}).Joins("JOIN accounts ON accounts.id = customers.id").
			Where("customers.id = ?", id).Pluck("accounts.name", &v).Error
		return fcTouched([]string{"sentinel"}, v), err
	}},
	{"raw Joins text into the untagged model", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []Customer{{Name: "sentinel"}}
		err := tx.Select("customers.id, accounts.name AS name, accounts.credit AS credit").
			Joins("JOIN accounts ON accounts.id = customers.id").Where("customers.id = ?", id).Find(&v).Error
		return fcTouched([]Customer{{Name: "sentinel"}}, v), err
	}},
	{"Raw(SELECT name FROM accounts).Find(model) key omitted", "", func(tx *gorm.DB, _ uint) (bool, error) {
		v := []Account{{Name: "sentinel"}}
		err := tx.Raw("SELECT name, credit FROM accounts ORDER BY name DESC").Find(&v).Error
		return fcTouched([]Account{{Name: "sentinel"}}, v), err
	}},
	{"Raw(SELECT * FROM accounts).Scan(DTO)", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []FcAccountView{{Name: "sentinel"}}
		err := tx.Raw("SELECT * FROM accounts WHERE id = ?", id).Scan(&v).Error
		return fcTouched([]FcAccountView{{Name: "sentinel"}}, v), err
	}},
	{"Raw(SELECT * FROM accounts).Find(DTO)", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := []FcAccountView{{Name: "sentinel"}}
		err := tx.Raw("SELECT * FROM accounts WHERE id = ?", id).Find(&v).Error
		return fcTouched([]FcAccountView{{Name: "sentinel"}}, v), err
	}},
	{"Raw(SELECT name).Scan(string)", "", func(tx *gorm.DB, id uint) (bool, error) {
		v := "sentinel"
		err := tx.Raw("SELECT name FROM accounts WHERE id = ?", id).Scan(&v).Error
		return v != "sentinel", err
	}},
	{"Select(count(*) + max(credit)).Scan", "", func(tx *gorm.DB, _ uint) (bool, error) {
		v := int64(-1)
		err := tx.Model(&Account{}).Select("count(*) + max(credit)").Scan(&v).Error
		return v != -1, err
	}},
	{"Select(max(name)).Scan", "", func(tx *gorm.DB, _ uint) (bool, error) {
		v := "sentinel"
		err := tx.Model(&Account{}).Select("max(name)").Scan(&v).Error
		return v != "sentinel", err
	}},
	{"Select(max(credit)).Rows", "", func(tx *gorm.DB, _ uint) (bool, error) {
		v := int64(-1)
		err := fcScanRow(tx.Model(&Account{}).Select("max(credit)"), &v)
		return v != -1, err
	}},
	{"Select(count(*), max(name)).Take(map)", "", func(tx *gorm.DB, _ uint) (bool, error) {
		v := map[string]any{}
		err := tx.Model(&Account{}).Select("count(*) AS n, max(name) AS m").Take(&v).Error
		return len(v) > 0, err
	}},
	{"Table(accounts).Select(max(name)).Scan", "", func(tx *gorm.DB, _ uint) (bool, error) {
		v := "sentinel"
		err := tx.Table("accounts").Select("max(name)").Scan(&v).Error
		return v != "sentinel", err
	}},
	{"Model(Account).Where(subquery on accounts) from Customer", "", func(tx *gorm.DB, _ uint) (bool, error) {
		v := []Customer{{Name: "sentinel"}}
		sub := tx.Session(&gorm.Session{NewDB: true}).Table("accounts").Select("name").Where("credit > ?", 5000)
		err := tx.Where("name IN (?)", sub).Find(&v).Error
		return fcTouched([]Customer{{Name: "sentinel"}}, v), err
	}},
}

func TestFailClosedUnboundedLoads(t *testing.T) {
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcSeedLoads(t, db)
		for _, l := range fcUnboundedLoads {
			if l.only != "" && l.only != db.Dialector.Name() {
				continue
			}
			t.Run(l.name, func(t *testing.T) {
				fcReset(t, db, p)
				fcCheckRefusedLoad(t, db, p, l)
				// The holder itself is never refused as locked.
				_, err := fcSafeLoad(t, func() (bool, error) { return l.load(as(db, martin), 129) })
				if err != nil {
					assert.True(t, fcUnenforceable(err), "the holder's load may only be refused as unenforceable, got %v", err)
				}
			})
		}
	})
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
	{"Table(<database>.public.fm_accts) three parts", "postgres", func(tx *gorm.DB) ([]string, error) {
		var name string
		if err := tx.Raw(`SELECT current_database()`).Scan(&name).Error; err != nil {
			return nil, err
		}
		var v []map[string]any
		err := tx.Table(name+".public.fm_accts").Where("id = ?", 129).Find(&v).Error
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

type FtSeat struct {
	ID       uint `gorm:"primaryKey"`
	Label    string
	FtAcctID uint
	FtAcct   *FtAcct
}

type FtTicket struct {
	ID       uint `gorm:"primaryKey"`
	FtSeatID uint
	FtSeat   *FtSeat
}

// TestFailClosedJoinsAndPreloadsThroughUntaggedModels: account 129 is
// Martin's; David reaches it through seat 129 and ticket 129.
func TestFailClosedJoinsAndPreloadsThroughUntaggedModels(t *testing.T) {
	loads := []struct {
		name string
		load func(tx *gorm.DB) ([]string, error)
	}{
		{"G.Joins(LeftJoin.Association.As alias)", func(tx *gorm.DB) ([]string, error) {
			v, err := gorm.G[FtSeat](tx).Joins(clause.LeftJoin.Association("FtAcct").As("a2"), nil).Where("ft_seats.id = ?", 129).Find(tx.Statement.Context)
			return ftSeatNames(v), err
		}},
		{"G.Joins(InnerJoin.Association) with an ON subquery (oracle)", func(tx *gorm.DB) ([]string, error) {
			v, err := gorm.G[FtSeat](tx).Joins(clause.InnerJoin.Association("FtAcct"), func(db gorm.JoinBuilder, joinTable, curTable clause.Table) error {
				db.Where("EXISTS (SELECT 1 FROM ft_accts x WHERE x.id = 129 AND x.name = 'secret')")
				return nil
			}).Where("ft_seats.id = ?", 1).Find(tx.Statement.Context)
			if len(v) > 0 {
				return []string{"secret"}, err
			}
			return nil, err
		}},
		{"Joins(nested FtSeat.FtAcct) from a ticket", func(tx *gorm.DB) ([]string, error) {
			var v []FtTicket
			err := tx.Joins("FtSeat").Joins("FtSeat.FtAcct").Where("ft_tickets.id = ?", 129).Find(&v).Error
			var out []string
			for _, r := range v {
				if r.FtSeat != nil {
					out = append(out, ftSeatNames([]FtSeat{*r.FtSeat})...)
				}
			}
			return out, err
		}},
		{"Preload(nested FtSeat.FtAcct) from a ticket", func(tx *gorm.DB) ([]string, error) {
			var v []FtTicket
			err := tx.Preload("FtSeat.FtAcct").Where("id = ?", 129).Find(&v).Error
			var out []string
			for _, r := range v {
				if r.FtSeat != nil {
					out = append(out, ftSeatNames([]FtSeat{*r.FtSeat})...)
				}
			}
			return out, err
		}},
		{"Preload with a custom condition", func(tx *gorm.DB) ([]string, error) {
			var v []FtSeat
			err := tx.Preload("FtAcct", "name <> ?", "x").Where("id = ?", 129).Find(&v).Error
			return ftSeatNames(v), err
		}},
		{"Preload with a func selecting the name only", func(tx *gorm.DB) ([]string, error) {
			var v []FtSeat
			err := tx.Preload("FtAcct", func(db *gorm.DB) *gorm.DB { return db.Select("id", "name") }).Where("id = ?", 129).Find(&v).Error
			return ftSeatNames(v), err
		}},
	}
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p, _ := ftSetup(t, d, []any{&FtAcct{}}, &FtSeat{}, &FtTicket{})
			require.NoError(t, admin(db).Create(&[]FtAcct{{ID: 1, Name: "one"}, {ID: 129, Name: "secret"}}).Error)
			require.NoError(t, admin(db).Create(&[]FtSeat{{ID: 1, FtAcctID: 1}, {ID: 129, FtAcctID: 129}}).Error)
			require.NoError(t, admin(db).Create(&[]FtTicket{{ID: 1, FtSeatID: 1}, {ID: 129, FtSeatID: 129}}).Error)
			for _, l := range loads {
				t.Run(l.name, func(t *testing.T) {
					fcReset(t, db, p)
					require.NoError(t, as(db, martin).First(&FtAcct{}, 129).Error)
					var got []string
					err := fcSafe(t, func() error { var e error; got, e = l.load(as(db, david)); return e })
					assert.NotContains(t, got, "secret", "David read account 129 held by Martin")
					fmRefused(t, err, "David's load")
					assert.False(t, fcHolds(t, db, p, &FtAcct{ID: 129}, david, offlinelock.Write))
					if err != nil {
						assert.Empty(t, fcLocksOf(t, db, p, david))
					}
					err = fcSafe(t, func() error { var e error; got, e = l.load(as(db, martin)); return e })
					if err != nil {
						assert.True(t, fcUnenforceable(err), "the holder: %v", err)
					} else {
						assert.Contains(t, got, "secret", "the holder")
					}
				})
			}
		})
	}
}

func ftSeatNames(v []FtSeat) []string {
	var out []string
	for _, s := range v {
		if s.FtAcct != nil {
			out = append(out, s.FtAcct.Name)
		}
	}
	return out
}
