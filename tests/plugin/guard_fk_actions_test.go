package plugin_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// Foreign-key actions on MariaDB fire no triggers (issue 33, family 4):
// the guard follows every one-column key's ON DELETE and ON UPDATE action
// into a guarded table, and a many2many join table from its other side,
// from the parent's own triggers; keys it cannot follow (several columns,
// a second level) make the install fail, naming the constraint.

// FaChild is lockable; its rows follow fa_parents' code (ON UPDATE
// CASCADE, ON DELETE SET NULL), and it has tags through fa_child_tags.
type FaChild struct {
	ID         uint `gorm:"primaryKey" lock:"exclusive_write"`
	ParentCode *string
	Note       string
	Tags       []FaTag `gorm:"many2many:fa_child_tags"`
}

// FaTag is the join's other side, not lockable.
type FaTag struct{ ID uint }

// FaMulti is lockable; its two-column foreign key is created by the test.
type FaMulti struct {
	ID uint `gorm:"primaryKey" lock:"exclusive_write"`
	A  int
	B  int
}

func TestGuardFollowsForeignKeyActionsOnMariaDB(t *testing.T) {
	db, p := setup(t, database{"mysql", openMySQL}, offlinelock.Config{Models: []any{&FaChild{}, &FaMulti{}}})
	drop := func() {
		db.Connection(func(c *gorm.DB) error {
			c.Exec(`SET FOREIGN_KEY_CHECKS = 0`)
			c.Exec(`DROP TABLE IF EXISTS fa_child_tags, fa_children, fa_parents, fa_tags, fa_multis, fa_pairs, fa_grands`)
			return c.Exec(`SET FOREIGN_KEY_CHECKS = 1`).Error
		})
	}
	drop()
	t.Cleanup(drop)
	for _, q := range []string{
		`CREATE TABLE fa_parents (id INT PRIMARY KEY, code VARCHAR(20) NOT NULL UNIQUE) ENGINE=InnoDB`,
		`CREATE TABLE fa_children (id INT UNSIGNED PRIMARY KEY, parent_code VARCHAR(20) NULL, note VARCHAR(20) NOT NULL DEFAULT '',
			CONSTRAINT fa_children_code FOREIGN KEY (parent_code) REFERENCES fa_parents (code) ON UPDATE CASCADE ON DELETE SET NULL) ENGINE=InnoDB`,
		`CREATE TABLE fa_tags (id INT UNSIGNED PRIMARY KEY) ENGINE=InnoDB`,
		`CREATE TABLE fa_child_tags (fa_child_id INT UNSIGNED NOT NULL, fa_tag_id INT UNSIGNED NOT NULL, PRIMARY KEY (fa_child_id, fa_tag_id),
			CONSTRAINT fa_child_tags_child FOREIGN KEY (fa_child_id) REFERENCES fa_children (id) ON DELETE CASCADE,
			CONSTRAINT fa_child_tags_tag FOREIGN KEY (fa_tag_id) REFERENCES fa_tags (id) ON DELETE CASCADE ON UPDATE CASCADE) ENGINE=InnoDB`,
		`INSERT INTO fa_parents VALUES (1, 'a'), (2, 'b')`,
		`INSERT INTO fa_children VALUES (1, 'a', 'held'), (2, 'b', 'free')`,
		`INSERT INTO fa_tags VALUES (1), (2)`,
		`INSERT INTO fa_child_tags VALUES (1, 1), (2, 2)`,
	} {
		require.NoError(t, db.Exec(q).Error, q)
	}
	require.NoError(t, p.InstallGuard(db))
	_, err := p.Acquire(as(db, martin), &FaChild{ID: 1}, offlinelock.Write)
	require.NoError(t, err)

	svc := testkit.MyUser(t, db, `GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.fa_parents TO %s`, `GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.fa_tags TO %s`)
	for _, held := range []string{
		`UPDATE fa_parents SET code = 'a2' WHERE id = 1`, // ON UPDATE CASCADE
		`DELETE FROM fa_parents WHERE id = 1`,            // ON DELETE SET NULL
		`DELETE FROM fa_tags WHERE id = 1`,               // the join's other side, ON DELETE CASCADE
		`UPDATE fa_tags SET id = 9 WHERE id = 1`,         // and ON UPDATE CASCADE
	} {
		err := svc.Exec(held).Error
		require.True(t, refusedByGuard(err, "fa_children", "1"), "%s: want the guard's refusal, got %v", held, err)
	}
	for _, free := range []string{
		`UPDATE fa_parents SET code = 'b2' WHERE id = 2`,
		`UPDATE fa_tags SET id = 8 WHERE id = 2`,
		`DELETE FROM fa_tags WHERE id = 8`,
		`DELETE FROM fa_parents WHERE id = 2`,
	} {
		require.NoError(t, svc.Exec(free).Error, free)
	}
	var rows []string
	require.NoError(t, db.Raw(`SELECT CONCAT(c.id, ':', IFNULL(c.parent_code, '-'), ':', IFNULL(GROUP_CONCAT(t.fa_tag_id), '-')) FROM fa_children c
		LEFT JOIN fa_child_tags t ON t.fa_child_id = c.id GROUP BY c.id ORDER BY c.id`).Scan(&rows).Error)
	require.Equal(t, []string{"1:a:1", "2:-:-"}, rows, "the held child and its tag unchanged; the free one followed its parent and tag")

	t.Run("a key of two columns is refused, by name", func(t *testing.T) {
		for _, q := range []string{
			`CREATE TABLE fa_pairs (a INT NOT NULL, b INT NOT NULL, PRIMARY KEY (a, b)) ENGINE=InnoDB`,
			`CREATE TABLE fa_multis (id INT UNSIGNED PRIMARY KEY, a INT NOT NULL, b INT NOT NULL,
				CONSTRAINT fa_multis_pair FOREIGN KEY (a, b) REFERENCES fa_pairs (a, b) ON DELETE CASCADE) ENGINE=InnoDB`,
		} {
			require.NoError(t, db.Exec(q).Error, q)
		}
		defer db.Exec(`DROP TABLE IF EXISTS fa_multis, fa_pairs`)
		err := p.InstallGuard(db)
		require.ErrorContains(t, err, "fa_multis_pair")
		require.ErrorContains(t, err, "RESTRICT or NO ACTION")
	})
	t.Run("a second level is refused, by name", func(t *testing.T) {
		for _, q := range []string{
			`CREATE TABLE fa_grands (id INT PRIMARY KEY) ENGINE=InnoDB`,
			`ALTER TABLE fa_parents ADD COLUMN grand_id INT NULL, ADD CONSTRAINT fa_parents_grand FOREIGN KEY (grand_id) REFERENCES fa_grands (id) ON DELETE CASCADE`,
		} {
			require.NoError(t, db.Exec(q).Error, q)
		}
		defer db.Exec(`ALTER TABLE fa_parents DROP FOREIGN KEY fa_parents_grand`)
		err := p.InstallGuard(db)
		require.ErrorContains(t, err, "fa_parents_grand")
		require.ErrorContains(t, err, "fa_children_code")
	})
}
