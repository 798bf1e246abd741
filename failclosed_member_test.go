package offlinelock_test

// Fail closed, aggregates: a member changes root only with both roots'
// Write locks, whatever the call shape, and a many-to-many association of
// a lockable model changes only under the model's Write lock.

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock"
)

// fcMembers is the state of the members of orders 7 and 8 that the moves
// touch: line 70000 (order 7), shipment 7 (order 7), parcel 7 (shipment 7).
type fcMembers struct {
	LineOrder, ShipmentOrder, ParcelShipment uint
}

func fcMemberState(t *testing.T, db *gorm.DB) fcMembers {
	t.Helper()
	var l LineItem
	var s Shipment
	var pc Parcel
	require.NoError(t, admin(db).First(&l, 70000).Error)
	require.NoError(t, admin(db).First(&s, 7).Error)
	require.NoError(t, admin(db).First(&pc, 7).Error)
	return fcMembers{l.OrderID, s.OrderID, pc.ShipmentID}
}

func fcResetMembers(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
	t.Helper()
	fcReset(t, db, p)
	require.NoError(t, admin(db).Save(&LineItem{ID: 70000, OrderID: 7, Qty: 1}).Error)
	require.NoError(t, admin(db).Save(&LineItem{ID: 80000, OrderID: 8, Qty: 1}).Error)
	require.NoError(t, admin(db).Save(&Shipment{ID: 7, OrderID: 7, Carrier: "post"}).Error)
	require.NoError(t, admin(db).Save(&Parcel{ID: 7, ShipmentID: 7, Weight: 1}).Error)
}

// A move of a member of order 7 to order 8; moved says whether it landed.
type fcMove struct {
	name  string
	move  func(tx *gorm.DB) error
	moved func(s fcMembers) bool
}

func fcLineMoved(s fcMembers) bool     { return s.LineOrder == 8 }
func fcShipmentMoved(s fcMembers) bool { return s.ShipmentOrder == 8 }
func fcParcelMoved(s fcMembers) bool   { return s.ParcelShipment == 8 }

var fcMoves = []fcMove{
	{"Model(&line).Updates(LineItem{OrderID: 8})", func(tx *gorm.DB) error {
		line := LineItem{ID: 70000, OrderID: 7, Qty: 1}
		return tx.Model(&line).Updates(LineItem{OrderID: 8}).Error
	}, fcLineMoved},
	{"Model(&LineItem{ID}).Updates(map)", func(tx *gorm.DB) error {
		return tx.Model(&LineItem{ID: 70000}).Updates(map[string]any{"order_id": 8}).Error
	}, fcLineMoved},
	{`Model(&line).Update("order_id", 8)`, func(tx *gorm.DB) error {
		line := LineItem{ID: 70000, OrderID: 7, Qty: 1}
		return tx.Model(&line).Update("order_id", 8).Error
	}, fcLineMoved},
	{`Model(&line).Update("order_id", "08")`, func(tx *gorm.DB) error {
		line := LineItem{ID: 70000, OrderID: 7, Qty: 1}
		return tx.Model(&line).Update("order_id", "08").Error
	}, fcLineMoved},
	{"Model(&line).UpdateColumn", func(tx *gorm.DB) error {
		line := LineItem{ID: 70000, OrderID: 7, Qty: 1}
		return tx.Model(&line).UpdateColumn("order_id", 8).Error
	}, fcLineMoved},
	{"Model(&line).Update(order_id, Expr)", func(tx *gorm.DB) error {
		line := LineItem{ID: 70000, OrderID: 7, Qty: 1}
		return tx.Model(&line).Update("order_id", gorm.Expr("order_id + 1")).Error
	}, fcLineMoved},
	{"Where.Update(order_id)", func(tx *gorm.DB) error {
		return tx.Model(&LineItem{}).Where("id = ?", 70000).Update("order_id", 8).Error
	}, fcLineMoved},
	{"Save after changing OrderID", func(tx *gorm.DB) error {
		var line LineItem
		if err := admin(tx).First(&line, 70000).Error; err != nil {
			return err
		}
		line.OrderID = 8
		return tx.Save(&line).Error
	}, fcLineMoved},
	{"Save(&[]LineItem{existing, moved})", func(tx *gorm.DB) error {
		return tx.Save(&[]LineItem{{ID: 70000, OrderID: 8, Qty: 1}}).Error
	}, fcLineMoved},
	{"OnConflict(UpdateAll).Create(&line)", func(tx *gorm.DB) error {
		return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&LineItem{ID: 70000, OrderID: 8, Qty: 1}).Error
	}, fcLineMoved},
	{"Model.OnConflict(UpdateAll).Create([]map)", func(tx *gorm.DB) error {
		return tx.Model(&LineItem{}).Clauses(clause.OnConflict{UpdateAll: true}).
			Create(&[]map[string]any{{"id": 70000, "order_id": 8, "qty": 1}}).Error
	}, fcLineMoved},
	{"Model(&order8).Association(Lines).Append(line of order 7)", func(tx *gorm.DB) error {
		line := LineItem{ID: 70000, OrderID: 7, Qty: 1}
		return tx.Model(&Order{ID: 8}).Association("Lines").Append(&line)
	}, fcLineMoved},
	{"Model(&order8).Association(Lines).Replace(line of order 7)", func(tx *gorm.DB) error {
		line := LineItem{ID: 70000, OrderID: 7, Qty: 1}
		return tx.Model(&Order{ID: 8}).Association("Lines").Replace(&line)
	}, fcLineMoved},
	{"FullSaveAssociations Save(order8 with line of order 7)", func(tx *gorm.DB) error {
		o := Order{ID: 8, Note: "new", Lines: []LineItem{{ID: 70000, OrderID: 7, Qty: 1}}}
		return tx.Session(&gorm.Session{FullSaveAssociations: true}).Save(&o).Error
	}, fcLineMoved},
	{"Save(order8 with line of order 7) without FullSaveAssociations", func(tx *gorm.DB) error {
		o := Order{ID: 8, Note: "new", Lines: []LineItem{{ID: 70000, OrderID: 7, Qty: 1}}}
		return tx.Save(&o).Error
	}, fcLineMoved},
	{"Shipment (root=orders): Model.Update(order_id)", func(tx *gorm.DB) error {
		return tx.Model(&Shipment{ID: 7}).Update("order_id", 8).Error
	}, fcShipmentMoved},
	{"Shipment: Save after changing OrderID", func(tx *gorm.DB) error {
		return tx.Save(&Shipment{ID: 7, OrderID: 8, Carrier: "post"}).Error
	}, fcShipmentMoved},
	{"Shipment: OnConflict(UpdateAll).Create", func(tx *gorm.DB) error {
		return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&Shipment{ID: 7, OrderID: 8, Carrier: "post"}).Error
	}, fcShipmentMoved},
	{"Parcel (two levels): Model.Update(shipment_id)", func(tx *gorm.DB) error {
		return tx.Model(&Parcel{ID: 7}).Update("shipment_id", 8).Error
	}, fcParcelMoved},
	{"Parcel: Save after changing ShipmentID", func(tx *gorm.DB) error {
		return tx.Save(&Parcel{ID: 7, ShipmentID: 8, Weight: 1}).Error
	}, fcParcelMoved},
	{"Parcel: Where.Updates(map)", func(tx *gorm.DB) error {
		return tx.Model(&Parcel{}).Where("id = ?", 7).Updates(map[string]any{"shipment_id": 8}).Error
	}, fcParcelMoved},
	{"Parcel: Save([]Parcel)", func(tx *gorm.DB) error {
		return tx.Save(&[]Parcel{{ID: 7, ShipmentID: 8, Weight: 1}}).Error
	}, fcParcelMoved},
}

func TestFailClosedMovingAMemberNeedsBothRoots(t *testing.T) {
	fcRunMoves(t, fcMoves)
}

// TestFailClosedMovingAMemberThroughTable is apart from the other moves:
// today it panics in the plugin, which leaves SQLite's write transaction
// open and stalls every later statement on that database.
func TestFailClosedMovingAMemberThroughTable(t *testing.T) {
	fcRunMoves(t, []fcMove{
		{"Table(line_items).Where.Update(order_id)", func(tx *gorm.DB) error {
			return tx.Table("line_items").Where("id = ?", 70000).Update("order_id", 8).Error
		}, fcLineMoved},
	})
}

func fcRunMoves(t *testing.T, moves []fcMove) {
	eachDBWithAggregates(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedOrder(t, db, 7, 1)
		seedOrder(t, db, 8, 1)
		for _, m := range moves {
			t.Run(m.name, func(t *testing.T) {
				for _, c := range []struct {
					what      string
					martin    []uint // orders Martin holds
					david     []uint // orders David holds
					wantError error
				}{
					{"Martin holds only the old root", []uint{7}, nil, offlinelock.ErrNotLocked},
					{"Martin holds only the new root", []uint{8}, nil, offlinelock.ErrNotLocked},
					{"Martin holds the old root, David the new", []uint{7}, []uint{8}, offlinelock.ErrLocked},
				} {
					fcResetMembers(t, db, p)
					for _, id := range c.martin {
						_, err := p.Acquire(as(db, martin), &Order{ID: id}, offlinelock.Write)
						require.NoError(t, err)
					}
					for _, id := range c.david {
						_, err := p.Acquire(as(db, david), &Order{ID: id}, offlinelock.Write)
						require.NoError(t, err)
					}
					err := fcSafe(t, func() error { return m.move(as(db, martin)) })
					if err != nil && strings.HasPrefix(err.Error(), "panic: ") {
						return // the plugin panicked: reported; on SQLite its transaction is left open
					}
					if assert.Error(t, err, "%s: the member moved", c.what) {
						assert.True(t, fcRefused(err), "%s: got %v", c.what, err)
					}
					assert.Equal(t, fcMembers{7, 7, 7}, fcMemberState(t, db), "%s: the refused move changed the member", c.what)
				}
				// Both roots held: the move lands.
				fcResetMembers(t, db, p)
				for _, id := range []uint{7, 8} {
					_, err := p.Acquire(as(db, martin), &Order{ID: id}, offlinelock.Write)
					require.NoError(t, err)
				}
				err := fcSafe(t, func() error { return m.move(as(db, martin)) })
				if err != nil && strings.Contains(m.name, "Expr") && fcUnenforceable(err) {
					// A new root computed by the database cannot be known
					// ahead: refusing it as unenforceable is fine.
					assert.Equal(t, fcMembers{7, 7, 7}, fcMemberState(t, db))
					return
				}
				require.NoError(t, err, "both roots held: the move is allowed")
				assert.True(t, m.moved(fcMemberState(t, db)), "the move did not land")
			})
		}
	})
}

// Creating members through every shape needs the root's Write lock.
func TestFailClosedCreatingMembersNeedsTheRoot(t *testing.T) {
	creates := []struct {
		name   string
		create func(tx *gorm.DB) error
	}{
		{"Create(&line)", func(tx *gorm.DB) error { return tx.Create(&LineItem{ID: 70099, OrderID: 7, Qty: 1}).Error }},
		{"Model.Create([]map)", func(tx *gorm.DB) error {
			return tx.Model(&LineItem{}).Create(&[]map[string]any{{"id": 70099, "order_id": 7, "qty": 1}}).Error
		}},
		{"Model.Create(map, order_id as string)", func(tx *gorm.DB) error {
			return tx.Model(&LineItem{}).Create(map[string]any{"id": 70099, "order_id": "07", "qty": 1}).Error
		}},
		{"Table(line_items).Create(map)", func(tx *gorm.DB) error {
			return tx.Table("line_items").Create(map[string]any{"id": 70099, "order_id": 7, "qty": 1}).Error
		}},
		{"Association(Lines).Append(new line)", func(tx *gorm.DB) error {
			return tx.Model(&Order{ID: 7}).Association("Lines").Append(&LineItem{ID: 70099, Qty: 1})
		}},
		{"Create(&parcel) two levels", func(tx *gorm.DB) error {
			return tx.Create(&Parcel{ID: 70099, ShipmentID: 7, Weight: 1}).Error
		}},
		{"Model(Parcel).Create([]map) two levels", func(tx *gorm.DB) error {
			return tx.Model(&Parcel{}).Create(&[]map[string]any{{"id": 70099, "shipment_id": 7, "weight": 1}}).Error
		}},
	}
	eachDBWithAggregates(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedOrder(t, db, 7, 1)
		count := func() int64 {
			var a, b int64
			require.NoError(t, admin(db).Model(&LineItem{}).Where("id = ?", 70099).Count(&a).Error)
			require.NoError(t, admin(db).Model(&Parcel{}).Where("id = ?", 70099).Count(&b).Error)
			return a + b
		}
		clean := func() {
			require.NoError(t, admin(db).Delete(&LineItem{}, 70099).Error)
			require.NoError(t, admin(db).Delete(&Parcel{}, 70099).Error)
		}
		for _, c := range creates {
			t.Run(c.name, func(t *testing.T) {
				fcReset(t, db, p)
				clean()
				err := fcSafe(t, func() error { return c.create(as(db, david)) })
				if assert.Error(t, err, "David added a member to order 7 without its lock") {
					assert.True(t, fcRefused(err), "got %v", err)
				}
				assert.Zero(t, count())
				clean()
				_, err = p.Acquire(as(db, martin), &Order{ID: 7}, offlinelock.Write)
				require.NoError(t, err)
				err = fcSafe(t, func() error { return c.create(as(db, david)) })
				if assert.Error(t, err, "David added a member to order 7 held by Martin") {
					assert.True(t, fcRefused(err), "got %v", err)
				}
				assert.Zero(t, count())
				clean()
				require.NoError(t, fcSafe(t, func() error { return c.create(as(db, martin)) }), "the holder adds the member")
				assert.EqualValues(t, 1, count())
			})
		}
	})
}

// FcArticle is lockable and has a many-to-many association.
type FcArticle struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Title string
	Tags  []FcTag `gorm:"many2many:fc_article_tags"`
}

type FcTag struct {
	ID   uint `gorm:"primaryKey"`
	Name string
}

func TestFailClosedManyToManyNeedsTheWriteLock(t *testing.T) {
	ops := []struct {
		name string
		op   func(tx *gorm.DB) error
		want []uint // the article's tags afterwards, when allowed
	}{
		{"Append", func(tx *gorm.DB) error { return tx.Model(&FcArticle{ID: 1}).Association("Tags").Append(&FcTag{ID: 3}) }, []uint{1, 2, 3}},
		{"Append new tag", func(tx *gorm.DB) error {
			return tx.Model(&FcArticle{ID: 1}).Association("Tags").Append(&FcTag{ID: 4, Name: "new"})
		}, []uint{1, 2, 4}},
		{"Replace", func(tx *gorm.DB) error {
			return tx.Model(&FcArticle{ID: 1}).Association("Tags").Replace(&FcTag{ID: 3})
		}, []uint{3}},
		{"Clear", func(tx *gorm.DB) error { return tx.Model(&FcArticle{ID: 1}).Association("Tags").Clear() }, []uint{}},
		{"Delete", func(tx *gorm.DB) error {
			return tx.Model(&FcArticle{ID: 1}).Association("Tags").Delete(&FcTag{ID: 1})
		}, []uint{2}},
		{"FullSaveAssociations Save with tags", func(tx *gorm.DB) error {
			a := FcArticle{ID: 1, Title: "a", Tags: []FcTag{{ID: 1, Name: "t1"}, {ID: 2, Name: "t2"}, {ID: 3, Name: "t3"}}}
			return tx.Session(&gorm.Session{FullSaveAssociations: true}).Save(&a).Error
		}, []uint{1, 2, 3}},
		{"Omit(Tags.*).Save keeps the join rows", func(tx *gorm.DB) error {
			a := FcArticle{ID: 1, Title: "a", Tags: []FcTag{{ID: 3}}}
			return tx.Omit("Tags.*").Save(&a).Error
		}, []uint{1, 2, 3}},
	}
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, db.Migrator().DropTable("fc_article_tags", &FcArticle{}, &FcTag{}))
		require.NoError(t, admin(db).AutoMigrate(&FcArticle{}, &FcTag{}))
		t.Cleanup(func() { db.Migrator().DropTable("fc_article_tags", &FcArticle{}, &FcTag{}) })
		tags := func(article uint) []uint {
			var ids []uint
			require.NoError(t, admin(db).Table("fc_article_tags").Where("fc_article_id = ?", article).
				Order("fc_tag_id").Pluck("fc_tag_id", &ids).Error)
			return ids
		}
		reset := func() {
			fcReset(t, db, p)
			require.NoError(t, admin(db).Exec("DELETE FROM fc_article_tags").Error)
			require.NoError(t, admin(db).Where("1 = 1").Delete(&FcTag{}).Error)
			require.NoError(t, admin(db).Where("1 = 1").Delete(&FcArticle{}).Error)
			require.NoError(t, admin(db).Create(&FcArticle{ID: 1, Title: "a", Tags: []FcTag{{ID: 1, Name: "t1"}, {ID: 2, Name: "t2"}}}).Error)
			require.NoError(t, admin(db).Create(&FcArticle{ID: 2, Title: "b", Tags: []FcTag{{ID: 3, Name: "t3"}}}).Error)
		}
		for _, o := range ops {
			t.Run(o.name, func(t *testing.T) {
				for _, holder := range []*offlinelock.Owner{nil, &martin} {
					reset()
					if holder != nil {
						_, err := p.Acquire(as(db, *holder), &FcArticle{ID: 1}, offlinelock.Write)
						require.NoError(t, err)
					}
					err := fcSafe(t, func() error { return o.op(as(db, david)) })
					if assert.Error(t, err, "David changed article 1's tags (held by %v)", holder) {
						assert.True(t, fcRefused(err), "got %v", err)
					}
					assert.Equal(t, []uint{1, 2}, tags(1), "the refused change altered the join table (held by %v)", holder)
					assert.Equal(t, []uint{3}, tags(2))
				}
				reset()
				_, err := p.Acquire(as(db, martin), &FcArticle{ID: 1}, offlinelock.Write)
				require.NoError(t, err)
				require.NoError(t, fcSafe(t, func() error { return o.op(as(db, martin)) }), "the holder changes the tags")
				assert.Equal(t, o.want, tags(1))
				assert.Equal(t, []uint{3}, tags(2), "another article's tags changed")
			})
		}
	})
}
