package plugin_test

// One record, one lock key: however its key is spelled ("0129", 129,
// int64(129), a string in an integer column, a case-insensitive or
// blank-padded text key), a record has one lock, and a load or write under
// another spelling of a key another session holds is refused. Distinct
// keys never share a lock: keys_fuzz_internal_test.go.

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock"
)

// Class 2: one record, one lock key, however the key is spelled.
func TestFailClosedOneRecordOneLockKey(t *testing.T) {
	loads := []struct {
		name string
		load func(tx *gorm.DB) (Account, error)
	}{
		{`First(&a, "0129")`, func(tx *gorm.DB) (a Account, err error) { err = tx.First(&a, "0129").Error; return }},
		{`First(&a, "129")`, func(tx *gorm.DB) (a Account, err error) { err = tx.First(&a, "129").Error; return }},
		{`First(&a, int64(129))`, func(tx *gorm.DB) (a Account, err error) { err = tx.First(&a, int64(129)).Error; return }},
		{`First(&a, uint8(129))`, func(tx *gorm.DB) (a Account, err error) { err = tx.First(&a, uint8(129)).Error; return }},
		{`First(&a, "id = ?", "0129")`, func(tx *gorm.DB) (a Account, err error) {
			err = tx.First(&a, "id = ?", "0129").Error
			return
		}},
		{`Where("id = ?", "129").Take`, func(tx *gorm.DB) (a Account, err error) {
			err = tx.Where("id = ?", "129").Take(&a).Error
			return
		}},
		{`Where("id = ?", "0129").Find`, func(tx *gorm.DB) (a Account, err error) {
			var as []Account
			err = tx.Where("id = ?", "0129").Find(&as).Error
			if len(as) == 1 {
				a = as[0]
			}
			return
		}},
		{`Where(map{"id": "0129"}).Find`, func(tx *gorm.DB) (a Account, err error) {
			var as []Account
			err = tx.Where(map[string]any{"id": "0129"}).Find(&as).Error
			if len(as) == 1 {
				a = as[0]
			}
			return
		}},
		{`Find(&as, []string{"129"})`, func(tx *gorm.DB) (a Account, err error) {
			var as []Account
			err = tx.Find(&as, []string{"129"}).Error
			if len(as) == 1 {
				a = as[0]
			}
			return
		}},
		{`Find(&as, []string{"0129"})`, func(tx *gorm.DB) (a Account, err error) {
			var as []Account
			err = tx.Find(&as, []string{"0129"}).Error
			if len(as) == 1 {
				a = as[0]
			}
			return
		}},
		{`Where("id IN ?", []any{"0129"}).Find`, func(tx *gorm.DB) (a Account, err error) {
			var as []Account
			err = tx.Where("id IN ?", []any{"0129"}).Find(&as).Error
			if len(as) == 1 {
				a = as[0]
			}
			return
		}},
		{`Where("id = ?", 129.0).Take`, func(tx *gorm.DB) (a Account, err error) {
			err = tx.Where("id = ?", 129.0).Take(&a).Error
			return
		}},
	}
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcSeedLoads(t, db)
		for _, l := range loads {
			t.Run(l.name, func(t *testing.T) {
				fcReset(t, db, p)
				_, err := p.Acquire(as(db, martin), &Account{ID: 129}, offlinelock.Write)
				require.NoError(t, err)
				a, err := l.load(as(db, david))
				if assert.Error(t, err, "David read account 129 under another spelling of its key") {
					assert.True(t, fcRefused(err), "got %v", err)
				}
				assert.Zero(t, a.ID, "David got the row")
				assert.Empty(t, fcLocksOf(t, db, p, david))

				// The holder loads it under the same spelling and still has
				// one lock, on the key "129".
				a, err = l.load(as(db, martin))
				if err == nil {
					assert.Equal(t, "zzz", a.Name)
				} else {
					assert.True(t, fcUnenforceable(err), "the holder is refused with %v", err)
				}
				mine := fcLocksOf(t, db, p, martin)
				if assert.Len(t, mine, 1, "one record, one lock key") {
					assert.Equal(t, "129", mine[0].ID)
				}
			})
		}
	})
}

// FmCi has a case-insensitive text key (SQLite): "ABC" and "abc" are one
// row to the database.
type FmCi struct {
	ID   string `gorm:"primaryKey;type:text collate nocase" lock:"exclusive_write"`
	Name string
}

// FmRtrim has a SQLite RTRIM key: "ab" and "ab  " are one row to SQLite.
type FmRtrim struct {
	ID   string `gorm:"primaryKey;type:text collate rtrim" lock:"exclusive_write"`
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

// FmChrBin is FmChr on MySQL, in a binary collation that pads: "ab" and
// "ab  " are one row, "AB" another. (The default collations fold case and
// accents as well: the plugin refuses keys in them.)
type FmChrBin struct {
	ID   string `gorm:"primaryKey;type:char(6) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin" lock:"exclusive_write"`
	Name string
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
			switch d.name {
			case "sqlite":
				extra = []any{&FmCi{}, &FmCiRead{}, &FmRtrim{}}
			case "mysql":
				extra = []any{&FmChrBin{}}
			default:
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
				t.Run("COLLATE RTRIM key: ab vs ab+spaces", func(t *testing.T) {
					fmRunKeySpellings(t, db, p, func(id, name string) *FmRtrim { return &FmRtrim{ID: id, Name: name} }, "ab", "ab  ")
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
			} else if d.name == "mysql" {
				t.Run("char(6) utf8mb4_bin key: ab vs ab+spaces", func(t *testing.T) {
					fmRunKeySpellings(t, db, p, func(id, name string) *FmChrBin { return &FmChrBin{ID: id, Name: name} }, "ab", "ab  ")
				})
			} else {
				t.Run("char(6) key: ab vs ab+spaces", func(t *testing.T) {
					fmRunKeySpellings(t, db, p, func(id, name string) *FmChr { return &FmChr{ID: id, Name: name} }, "ab", "ab  ")
				})
			}
		})
	}
}

// MyCi has a string key in the server's default collation, which takes
// "abc", "ABC", "äbc" and "abc " as one row.
type MyCi struct {
	ID   string `gorm:"primaryKey;size:32" lock:"exclusive_write"`
	Name string
}

// MyNoPad has a string key in a binary collation that does not pad: every
// spelling is a row of its own, as it is a lock of its own.
type MyNoPad struct {
	ID   string `gorm:"primaryKey;type:varchar(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin" lock:"exclusive_write"`
	Name string
}

// TestFailClosedMySQLKeyCollations: on MySQL a lock on "abc" cannot cover
// the spellings a case-, accent- and pad-insensitive key column equates,
// so a lockable model with such a key is refused for every statement and
// every Acquire; a key in a binary, non-padding collation works, and its
// spellings are separate records.
func TestFailClosedMySQLKeyCollations(t *testing.T) {
	d := databases()[2]
	db, p := setup(t, d, offlinelock.Config{})
	for _, m := range []any{&MyCi{}, &MyNoPad{}} {
		require.NoError(t, db.Migrator().DropTable(m))
		require.NoError(t, db.AutoMigrate(m))
		t.Cleanup(func() { db.Migrator().DropTable(m) })
	}
	require.NoError(t, admin(db).Create(&MyCi{ID: "abc", Name: "orig"}).Error)
	refusals := []fmWrite{
		{"Acquire", func(tx *gorm.DB) error { _, err := p.Acquire(tx, &MyCi{ID: "abc"}, offlinelock.Write); return err }},
		{"Model(ABC).Update", func(tx *gorm.DB) error { return tx.Model(&MyCi{ID: "ABC"}).Update("name", "hijack").Error }},
		{"Model(äbc).Update", func(tx *gorm.DB) error { return tx.Model(&MyCi{ID: "äbc"}).Update("name", "hijack").Error }},
		{"Delete(abc+space)", func(tx *gorm.DB) error { return tx.Delete(&MyCi{ID: "abc "}).Error }},
		{"Create", func(tx *gorm.DB) error { return tx.Create(&MyCi{ID: "new"}).Error }},
	}
	for _, r := range refusals {
		t.Run("default collation: "+r.name, func(t *testing.T) {
			err := fcSafe(t, func() error { return r.write(as(db, martin)) })
			require.ErrorIs(t, err, offlinelock.ErrInvalid)
			assert.Contains(t, err.Error(), "key column my_cis.id has collation utf8mb4_general_ci")
			var all []MyCi
			require.NoError(t, admin(db).Find(&all).Error)
			assert.Equal(t, []MyCi{{ID: "abc", Name: "orig"}}, all)
		})
	}
	t.Run("nopad_bin: each spelling its own record", func(t *testing.T) {
		for _, id := range []string{"abc", "ABC", "abc "} {
			require.NoError(t, admin(db).Create(&MyNoPad{ID: id, Name: "orig"}).Error)
		}
		_, err := p.Acquire(as(db, martin), &MyNoPad{ID: "abc"}, offlinelock.Write)
		require.NoError(t, err)
		require.ErrorIs(t, as(db, david).Model(&MyNoPad{ID: "abc"}).Update("name", "hijack").Error, offlinelock.ErrLocked)
		require.NoError(t, as(db, martin).Model(&MyNoPad{ID: "abc"}).Update("name", "martin's").Error)
		_, err = p.Acquire(as(db, david), &MyNoPad{ID: "ABC"}, offlinelock.Write)
		require.NoError(t, err)
		require.NoError(t, as(db, david).Model(&MyNoPad{ID: "ABC"}).Update("name", "david's").Error)
		var all []MyNoPad
		require.NoError(t, admin(db).Order("id").Find(&all).Error)
		assert.Equal(t, []MyNoPad{{ID: "ABC", Name: "david's"}, {ID: "abc", Name: "martin's"}, {ID: "abc ", Name: "orig"}}, all)
	})
}

// KnNum has a text key locked on load: MySQL compares it with a number
// numerically ('7up' = 7, 'abc' = 0), the others as text.
type KnNum struct {
	ID   string `gorm:"primaryKey;size:32" lock:"exclusive_read"`
	Name string
}

// TestFailClosedNumberAgainstATextKey: a load or a write by a number on a
// text key locks and checks exactly the rows the server matches, on every
// database, and leaves no lock on a key no row has.
func TestFailClosedNumberAgainstATextKey(t *testing.T) {
	ids := []string{"07", "7", "7up", "abc"}
	eachDBWithModels(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcDropCleanup(t, db, &KnNum{})
		require.NoError(t, admin(db).AutoMigrate(&KnNum{}))
		if db.Dialector.Name() == "mysql" { // a binary key, which the plugin accepts (TestFailClosedMySQLKeyCollations)
			require.NoError(t, admin(db).Exec("ALTER TABLE kn_nums MODIFY id varchar(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin").Error)
		}
		reset := func() {
			fcReset(t, db, p)
			require.NoError(t, admin(db).Where("1 = 1").Delete(&KnNum{}).Error)
			for _, id := range ids {
				require.NoError(t, admin(db).Create(&KnNum{ID: id, Name: "orig"}).Error)
			}
		}
		heldBy := func(o offlinelock.Owner) []string {
			locks, err := p.List(db, offlinelock.Filter{Session: o.Session, Resource: "kn_nums"})
			require.NoError(t, err)
			out := []string{}
			for _, l := range locks {
				out = append(out, l.ID)
			}
			sort.Strings(out)
			return out
		}
		loads := []struct {
			name string
			load func(tx *gorm.DB, dst *[]KnNum) error
		}{
			{"Find(&xs, 7)", func(tx *gorm.DB, dst *[]KnNum) error { return tx.Order("id").Find(dst, 7).Error }},
			{"Find(&xs, []int{0, 7})", func(tx *gorm.DB, dst *[]KnNum) error { return tx.Order("id").Find(dst, []int{0, 7}).Error }},
			{"Where(id = ?, 7.0).Find", func(tx *gorm.DB, dst *[]KnNum) error {
				return tx.Order("id").Where(map[string]any{"id": 7.0}).Find(dst).Error
			}},
			{"First(&x, 7)", func(tx *gorm.DB, dst *[]KnNum) error {
				var x KnNum
				err := tx.First(&x, 7).Error
				if err == nil {
					*dst = append(*dst, x)
				}
				return err
			}},
		}
		for _, l := range loads {
			t.Run(l.name, func(t *testing.T) {
				reset()
				var got []KnNum
				err := fcSafe(t, func() error { return l.load(as(db, martin), &got) })
				returned := []string{}
				for _, x := range got {
					returned = append(returned, x.ID)
				}
				sort.Strings(returned)
				if err != nil {
					assert.Empty(t, heldBy(martin), "a failed load left locks: %v", err)
				} else {
					assert.Equal(t, returned, heldBy(martin), "the locks are exactly the rows returned")
				}

				reset()
				_, err = p.Acquire(as(db, david), &KnNum{ID: "7up"}, offlinelock.Write)
				require.NoError(t, err)
				got = nil
				err = fcSafe(t, func() error { return l.load(as(db, martin), &got) })
				for _, x := range got {
					assert.NotEqual(t, "7up", x.ID, "martin read david's 7up")
				}
				if err != nil {
					assert.Empty(t, heldBy(martin), "a refused load left locks: %v", err)
				}
			})
		}
		t.Run("Delete(&KnNum{}, 7)", func(t *testing.T) {
			reset()
			_, err := p.Acquire(as(db, martin), &KnNum{ID: "7"}, offlinelock.Write)
			require.NoError(t, err)
			_, err = p.Acquire(as(db, david), &KnNum{ID: "7up"}, offlinelock.Write)
			require.NoError(t, err)
			err = fcSafe(t, func() error { return as(db, martin).Delete(&KnNum{}, 7).Error })
			var left []KnNum
			require.NoError(t, admin(db).Order("id").Find(&left).Error)
			have := map[string]bool{}
			for _, x := range left {
				have[x.ID] = true
			}
			assert.True(t, have["7up"], "martin's delete removed david's 7up")
			assert.True(t, have["07"], "martin's delete removed 07, which he does not hold")
			if err == nil {
				assert.False(t, have["7"], "the delete succeeded but left 7")
			}
		})
	})
}

// PgIcuCi has a key in a nondeterministic ICU collation, which takes
// "abc" and "ABC" as one row by ICU's rules.
type PgIcuCi struct {
	ID   string `gorm:"primaryKey;type:text COLLATE ol_test_ci" lock:"exclusive_write"`
	Name string
}

// PgCitext declares its citext key: letter case folded, as the lock
// table spells it.
type PgCitext struct {
	ID   string `gorm:"primaryKey;type:citext" lock:"exclusive_write"`
	Name string
}

// PgCitextUndeclared is a citext column its model declares as text.
type PgCitextUndeclared struct {
	ID   string `gorm:"primaryKey;type:text" lock:"exclusive_write"`
	Name string
}

// TestFailClosedPostgresInexactKeys (PostgreSQL): a key in a
// nondeterministic collation, or a citext key the model declares as
// text, is refused for every statement and Acquire; a declared citext key
// is one record in every letter case.
func TestFailClosedPostgresInexactKeys(t *testing.T) {
	db, p := setup(t, database{"postgres", openPostgres}, offlinelock.Config{})
	require.NoError(t, admin(db).Exec(`CREATE EXTENSION IF NOT EXISTS citext`).Error)
	require.NoError(t, admin(db).Exec(`DO $$ BEGIN CREATE COLLATION ol_test_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
		EXCEPTION WHEN duplicate_object THEN NULL; END $$`).Error)
	fcDropCleanup(t, db, &PgIcuCi{}, &PgCitext{}, &PgCitextUndeclared{})
	require.NoError(t, admin(db).AutoMigrate(&PgIcuCi{}, &PgCitext{}, &PgCitextUndeclared{}))
	require.NoError(t, admin(db).Exec(`ALTER TABLE pg_citext_undeclareds ALTER COLUMN id TYPE citext`).Error)
	require.NoError(t, admin(db).Create(&PgIcuCi{ID: "abc", Name: "orig"}).Error)
	require.NoError(t, admin(db).Create(&PgCitextUndeclared{ID: "abc", Name: "orig"}).Error)
	for _, c := range []struct {
		name, want string
		write      func(tx *gorm.DB) error
	}{
		{"ICU: Acquire", `nondeterministic collation "ol_test_ci"`, func(tx *gorm.DB) error {
			_, err := p.Acquire(tx, &PgIcuCi{ID: "abc"}, offlinelock.Write)
			return err
		}},
		{"ICU: Model(ABC).Update", `nondeterministic collation "ol_test_ci"`, func(tx *gorm.DB) error {
			return tx.Model(&PgIcuCi{ID: "ABC"}).Update("name", "hijack").Error
		}},
		{"citext declared as text: Acquire", "is citext", func(tx *gorm.DB) error {
			_, err := p.Acquire(tx, &PgCitextUndeclared{ID: "abc"}, offlinelock.Write)
			return err
		}},
		{"citext declared as text: Model(ABC).Update", "is citext", func(tx *gorm.DB) error {
			return tx.Model(&PgCitextUndeclared{ID: "ABC"}).Update("name", "hijack").Error
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := fcSafe(t, func() error { return c.write(as(db, martin)) })
			require.ErrorIs(t, err, offlinelock.ErrInvalid)
			assert.Contains(t, err.Error(), c.want)
			var icu []PgIcuCi
			require.NoError(t, admin(db).Find(&icu).Error)
			assert.Equal(t, []PgIcuCi{{ID: "abc", Name: "orig"}}, icu)
			var ct []PgCitextUndeclared
			require.NoError(t, admin(db).Find(&ct).Error)
			assert.Equal(t, []PgCitextUndeclared{{ID: "abc", Name: "orig"}}, ct)
		})
	}
	t.Run("declared citext: one record in every case", func(t *testing.T) {
		require.NoError(t, admin(db).Create(&PgCitext{ID: "abc", Name: "orig"}).Error)
		_, err := p.Acquire(as(db, martin), &PgCitext{ID: "abc"}, offlinelock.Write)
		require.NoError(t, err)
		require.ErrorIs(t, as(db, david).Model(&PgCitext{ID: "ABC"}).Update("name", "hijack").Error, offlinelock.ErrLocked)
		require.NoError(t, as(db, martin).Model(&PgCitext{ID: "ABC"}).Update("name", "martin's").Error)
		var all []PgCitext
		require.NoError(t, admin(db).Find(&all).Error)
		assert.Equal(t, []PgCitext{{ID: "abc", Name: "martin's"}}, all)
	})
}
