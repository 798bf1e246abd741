package plugin_test

// Helpers and models of the load, key, tag and strict-mode tests moved
// here from the library's folder because they use only its public API
// (issue 49): copies of the root's helpers and models of the same names.

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
)

// From helpers_test.go.

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

// From models_test.go.

// Team is not lockable; its members are.
type Team struct {
	ID      uint `gorm:"primaryKey"`
	Name    string
	Members []Member
}

// Member is locked on load, and joins its Desk, also locked on load.
type Member struct {
	ID     uint `gorm:"primaryKey" lock:"exclusive_read"`
	TeamID uint
	Name   string
	DeskID *uint
	Desk   *Desk
}

// Badge has a unique key besides its primary key.
type Badge struct {
	ID   uint   `gorm:"primaryKey" lock:"exclusive_write"`
	Code string `gorm:"uniqueIndex"`
	Name string
}

// The fm_ models: eachFm (or fmSetup) gives them fresh tables on a lock
// table of their own, with accounts 1, 2 and 129 and seats 1 and 129.

// FmAcctView is a DTO of fm_accts.
type FmAcctView struct {
	ID     uint
	Name   string
	Credit int
}

func (FmAcctView) TableName() string { return "fm_accts" }

// From concurrency_test.go.

// Counter is a record whose n only the offline lock protects: each business
// transaction reads it in one statement and writes n+1 in another, with no
// database lock in between.
type Counter struct {
	ID uint `gorm:"primaryKey"`
	N  int
}

// From coarse_test.go.

// From write_test.go.

type fcHooksKey struct{}

type fcHookCounter struct{ n atomic.Int64 }

func fcCount(tx *gorm.DB) error {
	if c, ok := tx.Statement.Context.Value(fcHooksKey{}).(*fcHookCounter); ok {
		c.n.Add(1)
	}
	return nil
}

// From write_shapes_test.go.

// fcDoc reads doc 129 under admin; found is false when it is gone.
func fcDoc(t *testing.T, db *gorm.DB) (Doc, bool) {
	t.Helper()
	var d []Doc
	require.NoError(t, admin(db).Where("id = ?", 129).Find(&d).Error)
	if len(d) == 0 {
		return Doc{}, false
	}
	return d[0], true
}

func fcAssertDocUnchanged(t *testing.T, db *gorm.DB) {
	t.Helper()
	d, ok := fcDoc(t, db)
	if assert.True(t, ok, "the refused write deleted doc 129") {
		assert.Equal(t, Doc{ID: 129, Title: "draft", Body: "secret"}, d, "the refused write changed doc 129")
	}
}

// From write_where_test.go.

func fcSafe2(t *testing.T, f func() ([]string, error)) (out []string, err error) {
	t.Helper()
	err = fcSafe(t, func() error {
		var e error
		out, e = f()
		return e
	})
	return out, err
}

// From write_reads_test.go.

// FtAcct is locked by every load (exclusive_read).
type FtAcct struct {
	ID   uint `gorm:"primaryKey" lock:"exclusive_read"`
	Name string
}
