package plugin_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// Foreign-key actions past the first level (issue 48, family 3): a
// delete or key update of a table that is not lockable reaches held rows
// through a second table that is not lockable either, through a many2many
// join table declared from the untagged side, or by SET NULL into a
// member. On SQLite the plugin's own check must follow them all; on
// PostgreSQL the guard's triggers fire at every level; on MariaDB the
// guard follows one level, and a schema of two levels refuses its grants.

// CdGrand → CdMid → CdLeaf: two levels of ON DELETE CASCADE, the middle
// table untagged.
type CdGrand struct {
	ID   uint
	Mids []CdMid `gorm:"constraint:OnDelete:CASCADE"`
}

type CdMid struct {
	ID        uint
	CdGrandID uint
	Leaves    []CdLeaf `gorm:"constraint:OnDelete:CASCADE"`
}

type CdLeaf struct {
	ID      uint `gorm:"primaryKey" lock:"exclusive_write"`
	CdMidID uint
	Text    string
}

// CdTag declares the many2many; its join rows follow its deletes and key
// changes, and they are CdPost's relations.
type CdTag struct {
	ID    uint
	Posts []CdPost `gorm:"many2many:cd_post_tags;constraint:OnDelete:CASCADE,OnUpdate:CASCADE"`
}

type CdPost struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Title string
}

// CdOwner's deletes set its CdItems' owner to NULL; a CdItem is a member
// of a CdDoc.
type CdOwner struct {
	ID    uint
	Items []CdItem `gorm:"constraint:OnDelete:SET NULL"`
}

type CdDoc struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Title string
}

type CdItem struct {
	ID        uint
	CdDocID   uint `lock:"root=cd_docs"`
	CdOwnerID *uint
	Text      string
}

// CdNode is a tree of one untagged table (a cycle of actions); CdNote
// hangs under a node.
type CdNode struct {
	ID       uint
	ParentID *uint
	Children []CdNode `gorm:"foreignKey:ParentID;constraint:OnDelete:CASCADE"`
	Notes    []CdNote `gorm:"constraint:OnDelete:CASCADE"`
}

type CdNote struct {
	ID       uint `gorm:"primaryKey" lock:"exclusive_write"`
	CdNodeID uint
	Text     string
}

// cdShape is one shape of foreign-key actions: martin holds record 1,
// which held's writes reach; free's reach record 2, which nobody holds.
type cdShape struct {
	name        string
	models      []any // created in this order
	lockable    []any
	rows        []any // created in this order
	resource    string
	record      func(id uint) any
	held, free  []func(tx *gorm.DB) error
	unguardable bool // MariaDB's guard cannot follow it: its grants are refused
	snapshot    string
}

func cdUint(v uint) *uint { return &v }

var cdShapes = []cdShape{{
	name:     "two levels through an untagged table",
	models:   []any{&CdGrand{}, &CdMid{}, &CdLeaf{}},
	lockable: []any{&CdLeaf{}},
	rows: []any{&[]CdGrand{{ID: 1}, {ID: 2}}, &[]CdMid{{ID: 1, CdGrandID: 1}, {ID: 2, CdGrandID: 2}},
		&[]CdLeaf{{ID: 1, CdMidID: 1, Text: "held"}, {ID: 2, CdMidID: 2, Text: "free"}}},
	resource: "cd_leafs", record: func(id uint) any { return &CdLeaf{ID: id} },
	held:        []func(*gorm.DB) error{func(tx *gorm.DB) error { return tx.Delete(&CdGrand{ID: 1}).Error }},
	free:        []func(*gorm.DB) error{func(tx *gorm.DB) error { return tx.Delete(&CdGrand{ID: 2}).Error }},
	unguardable: true,
	snapshot:    `SELECT l.id, l.cd_mid_id, m.cd_grand_id FROM cd_leafs l JOIN cd_mids m ON m.id = l.cd_mid_id ORDER BY l.id`,
}, {
	name:     "a many2many join table from the untagged side",
	models:   []any{&CdPost{}, &CdTag{}},
	lockable: []any{&CdPost{}},
	rows: []any{&[]CdPost{{ID: 1, Title: "held"}, {ID: 2, Title: "free"}},
		&[]CdTag{{ID: 1, Posts: []CdPost{{ID: 1}}}, {ID: 2, Posts: []CdPost{{ID: 2}}}}},
	resource: "cd_posts", record: func(id uint) any { return &CdPost{ID: id} },
	held: []func(*gorm.DB) error{
		func(tx *gorm.DB) error { return tx.Delete(&CdTag{ID: 1}).Error },
		func(tx *gorm.DB) error { return tx.Model(&CdTag{ID: 1}).Update("id", 10).Error },
	},
	free: []func(*gorm.DB) error{
		func(tx *gorm.DB) error { return tx.Model(&CdTag{ID: 2}).Update("id", 20).Error },
		func(tx *gorm.DB) error { return tx.Delete(&CdTag{ID: 20}).Error },
	},
	snapshot: `SELECT cd_post_id, cd_tag_id FROM cd_post_tags ORDER BY cd_post_id`,
}, {
	name:     "SET NULL into a member",
	models:   []any{&CdDoc{}, &CdOwner{}, &CdItem{}},
	lockable: []any{&CdDoc{}, &CdItem{}},
	rows: []any{&[]CdDoc{{ID: 1}, {ID: 2}}, &[]CdOwner{{ID: 1}, {ID: 2}},
		&[]CdItem{{ID: 1, CdDocID: 1, CdOwnerID: cdUint(1)}, {ID: 2, CdDocID: 2, CdOwnerID: cdUint(2)}}},
	resource: "cd_docs", record: func(id uint) any { return &CdDoc{ID: id} },
	held:     []func(*gorm.DB) error{func(tx *gorm.DB) error { return tx.Delete(&CdOwner{ID: 1}).Error }},
	free:     []func(*gorm.DB) error{func(tx *gorm.DB) error { return tx.Delete(&CdOwner{ID: 2}).Error }},
	snapshot: `SELECT id, cd_doc_id, cd_owner_id FROM cd_items ORDER BY id`,
}, {
	name:     "a tree of one table (a cycle of actions)",
	models:   []any{&CdNode{}, &CdNote{}},
	lockable: []any{&CdNote{}},
	rows: []any{&[]CdNode{{ID: 1}, {ID: 4}}, &[]CdNode{{ID: 2, ParentID: cdUint(1)}, {ID: 5, ParentID: cdUint(4)}},
		&[]CdNode{{ID: 3, ParentID: cdUint(2)}, {ID: 6, ParentID: cdUint(5)}},
		&[]CdNote{{ID: 1, CdNodeID: 3, Text: "held"}, {ID: 2, CdNodeID: 6, Text: "free"}}},
	resource: "cd_notes", record: func(id uint) any { return &CdNote{ID: id} },
	held:        []func(*gorm.DB) error{func(tx *gorm.DB) error { return tx.Delete(&CdNode{ID: 1}).Error }},
	free:        []func(*gorm.DB) error{func(tx *gorm.DB) error { return tx.Delete(&CdNode{ID: 4}).Error }},
	unguardable: true,
	snapshot:    `SELECT id, cd_node_id FROM cd_notes ORDER BY id`,
}}

// TestCascadesAtEveryDepthReachHeldRecords: each shape's writes that reach
// martin's record are refused (ErrLocked naming martin) and change
// nothing, for a plugin session on every database and, where a guard
// stands, for another client too; the same writes reaching a record the
// writer holds succeed. On MariaDB a shape of two levels has its grants
// refused instead (ErrUnguarded), and nothing is written to the lock table.
func TestCascadesAtEveryDepthReachHeldRecords(t *testing.T) {
	for _, d := range databases() {
		for _, sh := range cdShapes {
			t.Run(d.name+"/"+sh.name, func(t *testing.T) {
				db, p := setup(t, d, offlinelock.Config{Models: sh.lockable})
				dropped := slices.Clone(sh.models)
				slices.Reverse(dropped)
				fcDropCleanup(t, db, append([]any{"cd_post_tags"}, dropped...)...)
				require.NoError(t, db.AutoMigrate(sh.models...))
				for _, r := range sh.rows {
					require.NoError(t, admin(db).Create(r).Error)
				}
				_, err := p.Acquire(as(db, martin), sh.record(1), offlinelock.Write)
				if d.name == "mysql" && sh.unguardable {
					requireUnguardedRefusal(t, err, sh.resource)
					require.Empty(t, lockRows(t, db, lockTableOf(p)), "nothing written to the lock table")
					return
				}
				require.NoError(t, err)
				before := cdSnapshot(t, db, sh.snapshot)
				for i, w := range sh.held {
					require.True(t, refusedByGuard(w(as(db, david)), sh.resource, "1"), "held write %d: want ErrLocked naming martin", i)
					require.ErrorIs(t, w(db.WithContext(t.Context())), offlinelock.ErrNoOwner, "held write %d", i)
					if d.name != "sqlite" {
						err := w(plainGORM(t, db))
						require.True(t, refusedByGuard(err, sh.resource, "1"), "held write %d by another client: want the guard's refusal, got %v", i, err)
					}
					require.Equal(t, before, cdSnapshot(t, db, sh.snapshot), "held write %d changed nothing", i)
				}
				_, err = p.Acquire(as(db, david), sh.record(2), offlinelock.Write)
				require.NoError(t, err)
				for i, w := range sh.free {
					require.NoError(t, w(as(db, david)), "free write %d, by its holder", i)
				}
				require.NotEqual(t, before, cdSnapshot(t, db, sh.snapshot), "the free writes cascaded")
				for i, w := range sh.held {
					require.NoError(t, w(as(db, martin)), "held write %d, by its holder", i)
				}
			})
		}
	}
}

// cdSnapshot reads q's rows as text.
func cdSnapshot(t *testing.T, db *gorm.DB, q string) string {
	t.Helper()
	rows, err := admin(db).Raw(q).Rows()
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	out := ""
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		for _, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			out += fmt.Sprintf("%v,", v)
		}
		out += ";"
	}
	require.NoError(t, rows.Err())
	return out
}
