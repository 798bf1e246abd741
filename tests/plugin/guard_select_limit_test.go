package plugin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
)

// TestGuardIgnoresTheClientsSelectLimit: on MariaDB a client's
// sql_select_limit applies to a SELECT … INTO and to a cursor inside a
// trigger. Set to 0, for one statement or for the session, it must not
// hide a held record, or the held children a cascade reaches, from the
// guard.
func TestGuardIgnoresTheClientsSelectLimit(t *testing.T) {
	d := database{"mysql", openMySQL}
	db, p := setup(t, d, offlinelock.Config{Models: []any{&Doc{}, &CpPage{}}})
	fcDropCleanup(t, db, &CpPage{}, &CpFolder{}, &Doc{})
	require.NoError(t, db.AutoMigrate(&Doc{}, &CpFolder{}, &CpPage{}))
	require.NoError(t, admin(db).Create(&[]Doc{{ID: 1, Title: "held"}, {ID: 2, Title: "free"}}).Error)
	require.NoError(t, admin(db).Create(&CpFolder{ID: 1}).Error)
	require.NoError(t, admin(db).Create(&CpPage{ID: 1, CpFolderID: 1, Text: "held"}).Error)
	p.ReleaseAll(db, martin.Session)
	for _, target := range []any{&Doc{ID: 1}, &CpPage{ID: 1}} {
		_, err := p.Acquire(as(db, martin), target, offlinelock.Write)
		require.NoError(t, err)
	}
	require.NoError(t, p.InstallGuard(db))

	plain := d.open(t)
	conn, err := plain.DB()
	require.NoError(t, err)
	c, err := conn.Conn(context.Background())
	require.NoError(t, err)
	defer c.Close()
	for _, q := range []string{
		"SET STATEMENT sql_select_limit = 0 FOR UPDATE docs SET title = 'x' WHERE id = 1",
		"SET STATEMENT sql_select_limit = 0 FOR DELETE FROM docs WHERE id = 1",
		"SET STATEMENT sql_select_limit = 0 FOR DELETE FROM cp_folders WHERE id = 1",
	} {
		_, err := c.ExecContext(context.Background(), q)
		require.Error(t, err, q)
		assert.Contains(t, err.Error(), "OL423", q)
	}
	_, err = c.ExecContext(context.Background(), "SET SESSION sql_select_limit = 0")
	require.NoError(t, err)
	for _, q := range []string{"UPDATE docs SET title = 'x' WHERE id = 1", "DELETE FROM cp_folders WHERE id = 1"} {
		_, err := c.ExecContext(context.Background(), q)
		require.Error(t, err, q)
		assert.Contains(t, err.Error(), "OL423", q)
	}
	_, err = c.ExecContext(context.Background(), "UPDATE docs SET title = 'y' WHERE id = 2")
	require.NoError(t, err, "a free record")

	var doc Doc
	require.NoError(t, admin(db).First(&doc, 1).Error)
	assert.Equal(t, "held", doc.Title)
	var pages int64
	require.NoError(t, admin(db).Model(&CpPage{}).Count(&pages).Error)
	assert.Equal(t, int64(1), pages)
}
