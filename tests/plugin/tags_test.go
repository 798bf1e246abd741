package plugin_test

// The lock tag: a bad tag, on a primary key or on a root foreign key, is
// an ErrInvalid naming the model and the field, at registration or with
// the first statement, and nothing runs. The parser is fuzzed in
// tags_fuzz_internal_test.go.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

func TestTagErrorsNameModelAndField(t *testing.T) {
	type BadMode struct {
		ID uint `lock:"exclusive"`
	}
	type BadOption struct {
		ID uint `lock:"exclusive_read,color=red"`
	}
	type BadTTL struct {
		ID uint `lock:"read_write,ttl=-1h"`
	}
	type OnNonKey struct {
		ID   uint
		Name string `lock:"exclusive_read"`
	}
	cases := []struct {
		model any
		want  []string
	}{
		{&BadMode{}, []string{"BadMode", "ID", `unknown mode "exclusive"`}},
		{&BadOption{}, []string{"BadOption", "ID", `unknown option "color=red"`}},
		{&BadTTL{}, []string{"BadTTL", "ID", `bad ttl "-1h"`}},
		{&OnNonKey{}, []string{"OnNonKey", "Name", "belongs on the primary key"}},
	}
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, _ := setup(t, d, offlinelock.Config{})
			for _, c := range cases {
				err := d.open(t).Use(offlinelock.New(offlinelock.Config{Table: "ol_bad", Models: []any{c.model}}))
				require.ErrorIs(t, err, offlinelock.ErrInvalid)
				for _, w := range c.want {
					assert.Contains(t, err.Error(), w)
				}
				// Registered without Models, the error comes with the first statement, and nothing runs.
				require.NoError(t, admin(db).Migrator().AutoMigrate(c.model))
				err = as(db, martin).Create(c.model).Error
				require.ErrorIs(t, err, offlinelock.ErrInvalid)
				assert.Contains(t, err.Error(), c.want[0])
				var n int64
				require.NoError(t, db.Model(c.model).Session(&gorm.Session{}).WithContext(offlinelock.Bypass(t.Context(), "count")).Count(&n).Error)
				assert.Zero(t, n, "nothing was written")
				require.NoError(t, db.Migrator().DropTable(c.model))
			}
			db.Exec(`DROP TABLE IF EXISTS ol_bad`)
			db.Exec(`DROP TABLE IF EXISTS ol_bad_generation`)
			db.Exec(`DROP SEQUENCE IF EXISTS ol_bad_generation`)
		})
	}
}

func TestRootTagErrorsNameModelAndField(t *testing.T) {
	type NotFK struct {
		ID   uint
		Name string `lock:"root"`
	}
	type NoTable struct {
		ID     uint
		HomeID uint `lock:"root=nowhere"`
	}
	type Plain struct{ ID uint }
	type NoMode struct {
		ID      uint
		PlainID uint `lock:"root"`
		Plain   *Plain
	}
	type Both struct {
		ID      uint `lock:"exclusive_read"`
		OrderID uint `lock:"root=orders"`
	}
	cases := []struct {
		model any
		want  []string
	}{
		{&NotFK{}, []string{"NotFK", "Name", "foreign key"}},
		{&NoTable{}, []string{"NoTable", "HomeID", "nowhere"}},
		{&NoMode{}, []string{"NoMode", "PlainID", "no lock mode"}},
		{&Both{}, []string{"Both", "OrderID", "no mode of its own"}},
	}
	for _, c := range cases {
		db := openSQLite(t)
		err := db.Use(offlinelock.New(offlinelock.Config{Models: append([]any{&Order{}}, c.model)}))
		require.ErrorIs(t, err, offlinelock.ErrInvalid, "%T", c.model)
		for _, w := range c.want {
			assert.Contains(t, err.Error(), w)
		}
	}
}
