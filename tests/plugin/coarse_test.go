package plugin_test

// Coarse-Grained Lock: the members of an aggregate have no lock of their
// own; the root's lock covers them. Member calls and loads act on the
// root, a member is created, written or deleted only under the root's
// Write lock, and a member changes root only with both roots' Write locks,
// whatever the call shape.

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/testkit"
)

// The aggregate's models are testkit's (models_aggregate.go), shared with
// the root package's tests.
type (
	// Order is an aggregate root; its lines, shipments and parcels are members.
	Order    = testkit.Order
	LineItem = testkit.LineItem
	Shipment = testkit.Shipment
	Parcel   = testkit.Parcel
	// Client and Address are customer 129 and address 301 of the walk-through.
	Client  = testkit.Client
	Address = testkit.Address
)

var aggregateModels = testkit.AggregateModels

func eachDBWithAggregates(t *testing.T, fn func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin)) {
	for _, d := range databases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := setup(t, d, offlinelock.Config{Models: aggregateModels})
			require.NoError(t, db.Migrator().DropTable(aggregateModels...))
			require.NoError(t, db.AutoMigrate(aggregateModels...))
			t.Cleanup(func() { db.Migrator().DropTable(aggregateModels...) })
			fn(t, db, p)
		})
	}
}

// seedOrder creates order id with n lines, a shipment and a parcel
// (testkit.SeedOrder).
func seedOrder(t testing.TB, db *gorm.DB, id uint, n int) { testkit.SeedOrder(t, db, id, n) }

func TestDavidCannotOpenAddressWhileMartinEditsCustomer(t *testing.T) {
	eachDBWithAggregates(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		require.NoError(t, admin(db).Create(&Client{ID: 129, Name: "Acme", Addresses: []Address{{ID: 301, City: "Portland"}}}).Error)
		_, err := p.Acquire(as(db, martin), &Client{ID: 129}, offlinelock.Write)
		require.NoError(t, err)
		_, err = p.Acquire(as(db, david), &Address{ID: 301}, offlinelock.Write)
		var le *offlinelock.LockedError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, "clients", le.Resource)
		assert.Equal(t, "129", le.ID)
		assert.Equal(t, "martin", le.Holders[0].Owner.User)
		require.ErrorIs(t, as(db, david).Model(&Address{ID: 301}).Update("city", "Seattle").Error, offlinelock.ErrLocked)
		require.NoError(t, as(db, martin).Model(&Address{ID: 301}).Update("city", "Salem").Error, "Martin's lock covers the address")
	})
}

func TestMemberCallsActOnTheRoot(t *testing.T) {
	eachDBWithAggregates(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedOrder(t, db, 7, 3)
		l, err := p.Acquire(as(db, martin), &LineItem{ID: 70000}, offlinelock.Write)
		require.NoError(t, err)
		assert.Equal(t, "orders", l.Resource)
		assert.Equal(t, "7", l.ID)
		for _, member := range []any{&Order{ID: 7}, &LineItem{ID: 70002}, &Shipment{ID: 7}, &Parcel{ID: 7}} {
			h, err := p.Holders(db, member)
			require.NoError(t, err)
			require.Len(t, h, 1, "%T", member)
			assert.Equal(t, martin, h[0].Owner)
		}
		// Another line of the same order is the same lock.
		require.NoError(t, p.Release(as(db, martin), &LineItem{ID: 70001}))
		h, err := p.Holders(db, &Order{ID: 7})
		require.NoError(t, err)
		assert.Empty(t, h)
	})
}

func TestMemberLoadsTakeTheRootsLock(t *testing.T) {
	eachDBWithAggregates(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedOrder(t, db, 7, 3)
		seedOrder(t, db, 8, 1)
		var lines []LineItem
		require.NoError(t, as(db, martin).Where("order_id = ?", 7).Find(&lines).Error)
		require.Len(t, lines, 3)
		mine, err := p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		require.Len(t, mine, 1, "one lock for the whole order")
		assert.Equal(t, "orders", mine[0].Resource)

		require.ErrorIs(t, as(db, david).First(&Order{}, 7).Error, offlinelock.ErrLocked)
		require.ErrorIs(t, as(db, david).First(&LineItem{}, 70001).Error, offlinelock.ErrLocked)
		require.ErrorIs(t, as(db, david).First(&Parcel{}, 7).Error, offlinelock.ErrLocked, "two levels down")
		require.ErrorIs(t, as(db, david).First(&Shipment{}, 7).Error, offlinelock.ErrLocked)
		require.NoError(t, as(db, david).First(&Parcel{}, 8).Error)
		before := []LineItem{{ID: 1}}
		got := before
		require.ErrorIs(t, as(db, david).Find(&got).Error, offlinelock.ErrLocked)
		assert.Equal(t, before, got)
	})
}

func TestManyMembersAreOneLockPerRoot(t *testing.T) {
	eachDBWithAggregates(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedOrder(t, db, 1, 1000)
		for id := uint(2); id <= 21; id++ {
			seedOrder(t, db, id, 2)
		}
		count := func(owner offlinelock.Owner, q func(*gorm.DB) *gorm.DB) (int64, int) {
			c := &counter{Interface: logger.Discard}
			var lines []LineItem
			require.NoError(t, q(as(db, owner).Session(&gorm.Session{Logger: c})).Find(&lines).Error)
			return c.N.Load(), len(lines)
		}
		n1000, rows := count(martin, func(tx *gorm.DB) *gorm.DB { return tx.Where("order_id = ?", 1) })
		assert.Equal(t, 1000, rows)
		mine, err := p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		assert.Len(t, mine, 1, "1000 lines of one order: one lock row")

		// Both loads below find the same lock rows: on MySQL a record's
		// first lock creates its free key row in a statement of its own.
		count(david, func(tx *gorm.DB) *gorm.DB { return tx.Where("order_id > ?", 1) })
		_, err = p.ReleaseAll(db, david.Session)
		require.NoError(t, err)
		n20, rows := count(david, func(tx *gorm.DB) *gorm.DB { return tx.Where("order_id > ?", 1) })
		assert.Equal(t, 40, rows)
		theirs, err := p.List(db, offlinelock.Filter{Session: david.Session})
		require.NoError(t, err)
		require.Len(t, theirs, 20, "lines of 20 orders: 20 lock rows")
		for i := 1; i < len(theirs); i++ {
			assert.Less(t, theirs[i-1].ID, theirs[i].ID)
		}
		_, err = p.ReleaseAll(db, david.Session)
		require.NoError(t, err)
		var orders int64
		c := &counter{Interface: logger.Discard}
		require.NoError(t, as(db, david).Session(&gorm.Session{Logger: c}).Where("id > ?", 1).Find(&[]Order{}).Error)
		orders = c.N.Load()
		t.Logf("statements: %d for 1000 lines of one order, %d for lines of 20 orders, %d for the 20 orders themselves", n1000, n20, orders)
		assert.Equal(t, orders, n20, "the root key in the member's row costs no extra query")
		// Constant in the members: on MariaDB one key takes the general
		// grant (five statements; it tells expiry takeovers), 20 keys the
		// three-statement bulk grant (internal/lockstore/mysql_grant.go).
		assert.LessOrEqual(t, n1000, n20+3)
	})
}

func TestTwoLevelMembersCostOneQueryPerLevel(t *testing.T) {
	eachDBWithAggregates(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		for id := uint(1); id <= 5; id++ {
			seedOrder(t, db, id, 1)
		}
		measure := func(dest any, conds ...any) int64 {
			c := &counter{Interface: logger.Discard}
			require.NoError(t, as(db, martin).Session(&gorm.Session{Logger: c}).Find(dest, conds...).Error)
			_, err := p.ReleaseAll(db, martin.Session)
			require.NoError(t, err)
			return c.N.Load()
		}
		// Two orders and five: one lock alone may take a one-statement grant.
		two := measure(&[]Parcel{}, "id <= ?", 2)
		five := measure(&[]Parcel{})
		shipments := measure(&[]Shipment{})
		t.Logf("statements: %d for the parcels of 2 orders, %d for those of 5, %d for 5 shipments (root key in the row)", two, five, shipments)
		assert.Equal(t, two, five, "the level's query is one for the whole batch, not one per row")
		assert.LessOrEqual(t, five, shipments+2, "one more level costs its query (and the lock is not folded into the search)")
	})
}

func TestMemberWritesNeedTheRootsWriteLock(t *testing.T) {
	eachDBWithAggregates(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedOrder(t, db, 7, 2)
		line := LineItem{ID: 70000, OrderID: 7, Qty: 5}
		require.ErrorIs(t, as(db, martin).Save(&line).Error, offlinelock.ErrNotLocked)
		require.ErrorIs(t, as(db, martin).Create(&LineItem{OrderID: 7, Qty: 1}).Error, offlinelock.ErrNotLocked,
			"nobody adds a line to an order without its lock")
		_, err := p.Acquire(as(db, david), &Order{ID: 7}, offlinelock.Write)
		require.NoError(t, err)
		require.ErrorIs(t, as(db, martin).Save(&line).Error, offlinelock.ErrLocked)
		require.ErrorIs(t, as(db, martin).Create(&LineItem{OrderID: 7, Qty: 1}).Error, offlinelock.ErrLocked)
		require.ErrorIs(t, as(db, martin).Where("order_id = ?", 7).Delete(&LineItem{}).Error, offlinelock.ErrLocked)
		require.NoError(t, as(db, david).Save(&line).Error)
		require.NoError(t, as(db, david).Create(&LineItem{OrderID: 7, Qty: 1}).Error)
		var n int64
		require.NoError(t, admin(db).Model(&LineItem{}).Where("order_id = ?", 7).Count(&n).Error)
		assert.EqualValues(t, 3, n)
	})
}

func TestAMemberWriteByKeyCannotReachOtherRoots(t *testing.T) {
	eachDBWithAggregates(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedOrder(t, db, 7, 1)
		seedOrder(t, db, 8, 1)
		_, err := p.Acquire(as(db, martin), &Order{ID: 7}, offlinelock.Write)
		require.NoError(t, err)
		_, err = p.Acquire(as(db, david), &Order{ID: 8}, offlinelock.Write)
		require.NoError(t, err)
		err = as(db, martin).Model(&LineItem{ID: 70000}).Or("order_id = ?", 8).Update("qty", 0).Error
		require.Error(t, err)
		var l LineItem
		require.NoError(t, admin(db).First(&l, 80000).Error)
		assert.Equal(t, 1, l.Qty, "order 8's line is untouched")
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

func TestDeletingARootWithItsMembersNeedsOneLock(t *testing.T) {
	eachDBWithAggregates(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedOrder(t, db, 7, 50)
		o := Order{ID: 7}
		_, err := p.Acquire(as(db, martin), &o, offlinelock.Write)
		require.NoError(t, err)
		require.NoError(t, as(db, martin).Select("Lines").Delete(&o).Error)
		var n int64
		require.NoError(t, admin(db).Model(&LineItem{}).Where("order_id = ?", 7).Count(&n).Error)
		assert.Zero(t, n)
		mine, err := p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		assert.Len(t, mine, 1)
	})
}

func TestMovingAMemberNeedsBothRoots(t *testing.T) {
	eachDBWithAggregates(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		seedOrder(t, db, 7, 1)
		seedOrder(t, db, 8, 1)
		_, err := p.Acquire(as(db, martin), &Order{ID: 7}, offlinelock.Write)
		require.NoError(t, err)
		move := func() error { return as(db, martin).Model(&LineItem{ID: 70000}).Update("order_id", 8).Error }
		require.ErrorIs(t, move(), offlinelock.ErrNotLocked, "the new root is not locked")
		_, err = p.Acquire(as(db, david), &Order{ID: 8}, offlinelock.Write)
		require.NoError(t, err)
		require.ErrorIs(t, move(), offlinelock.ErrLocked, "the new root is David's")
		require.NoError(t, p.Release(as(db, david), &Order{ID: 8}))
		_, err = p.Acquire(as(db, martin), &Order{ID: 8}, offlinelock.Write)
		require.NoError(t, err)
		require.NoError(t, move())
		var l LineItem
		require.NoError(t, admin(db).First(&l, 70000).Error)
		assert.Equal(t, uint(8), l.OrderID)

		require.NoError(t, p.Release(as(db, martin), &Order{ID: 7}))
		l.OrderID = 7
		require.ErrorIs(t, as(db, martin).Save(&l).Error, offlinelock.ErrNotLocked, "moving back needs 7 again")
	})
}

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
	{`Model(&line).Update("ORDER_ID", 8): the link in another spelling`, func(tx *gorm.DB) error {
		return tx.Model(&LineItem{ID: 70000}).Update("ORDER_ID", 8).Error
	}, fcLineMoved},
	{`Model(&line).Updates(map{"Order_Id": 8})`, func(tx *gorm.DB) error {
		return tx.Model(&LineItem{ID: 70000}).Updates(map[string]any{"Order_Id": 8}).Error
	}, fcLineMoved},
	{`Model(&line).UpdateColumn("order_ID", 8)`, func(tx *gorm.DB) error {
		return tx.Model(&LineItem{ID: 70000}).UpdateColumn("order_ID", 8).Error
	}, fcLineMoved},
	{`Where.Update("ORDER_ID", 8)`, func(tx *gorm.DB) error {
		return tx.Model(&LineItem{}).Where("id = ?", 70000).Update("ORDER_ID", 8).Error
	}, fcLineMoved},
	{`Select("ORDER_ID").Updates`, func(tx *gorm.DB) error {
		return tx.Model(&LineItem{ID: 70000}).Select("ORDER_ID").Updates(LineItem{OrderID: 8}).Error
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
	{"Save after assigning the belongs-to Order", func(tx *gorm.DB) error {
		var line LineItem
		if err := admin(tx).First(&line, 70000).Error; err != nil {
			return err
		}
		line.Order = &Order{ID: 8} // GORM saves it first and copies its key into OrderID
		return tx.Save(&line).Error
	}, fcLineMoved},
	{"Save(&[]LineItem) with the belongs-to Order assigned", func(tx *gorm.DB) error {
		return tx.Save(&[]LineItem{{ID: 70000, OrderID: 7, Order: &Order{ID: 8}, Qty: 1}}).Error
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

func TestAMemberWithoutARootRowIsAnError(t *testing.T) {
	eachDBWithAggregates(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		_, err := p.Acquire(as(db, martin), &LineItem{OrderID: 999}, offlinelock.Write)
		require.ErrorIs(t, err, offlinelock.ErrInvalid)
		assert.Contains(t, err.Error(), "orders 999 does not exist")
		require.ErrorIs(t, as(db, martin).Create(&Shipment{ID: 1, OrderID: 999}).Error, offlinelock.ErrInvalid)
		all, err := p.List(db, offlinelock.Filter{})
		require.NoError(t, err)
		assert.Empty(t, all, "no lock on a phantom key")
	})
}

type CycleA struct {
	ID       uint
	CycleBID uint `lock:"root=cycle_bs"`
}
type CycleB struct {
	ID       uint
	CycleAID uint `lock:"root=cycle_as"`
}

func TestRootCyclesAreReported(t *testing.T) {
	db := openSQLite(t)
	p := offlinelock.New(offlinelock.Config{})
	require.NoError(t, db.Use(p))
	require.NoError(t, admin(db).AutoMigrate(&CycleA{}, &CycleB{}))
	err := as(db, martin).Find(&[]CycleB{}).Error // parses CycleB
	require.Error(t, err)
	err = as(db, martin).Find(&[]CycleA{}).Error
	require.ErrorIs(t, err, offlinelock.ErrInvalid)
	assert.Contains(t, err.Error(), "loops back")
}

// CjReport is untagged and has a member (a line of an order) as its
// belongs-to association.
type CjReport struct {
	ID         uint `gorm:"primaryKey"`
	LineItemID uint
	LineItem   LineItem
}

// TestFailClosedJoinedMemberIsRefused: a Joins by association that fills
// an aggregate member from a model that is not its own reads the member
// without its root's lock: refused, the destination untouched, no lock
// taken. Preload, which loads the member through its own model, locks the
// root.
func TestFailClosedJoinedMemberIsRefused(t *testing.T) {
	eachDBWithAggregates(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcDropCleanup(t, db, &CjReport{})
		require.NoError(t, admin(db).AutoMigrate(&CjReport{}))
		seedOrder(t, db, 7, 1)
		require.NoError(t, admin(db).Create(&CjReport{ID: 1, LineItemID: 70000}).Error)
		_, err := p.Acquire(as(db, david), &Order{ID: 7}, offlinelock.Write)
		require.NoError(t, err)
		loads := []struct {
			name string
			load func(tx *gorm.DB, dst *[]CjReport) error
		}{
			{"Joins.Find", func(tx *gorm.DB, dst *[]CjReport) error { return tx.Joins("LineItem").Find(dst).Error }},
			{"InnerJoins.Find", func(tx *gorm.DB, dst *[]CjReport) error { return tx.InnerJoins("LineItem").Find(dst).Error }},
			{"Joins.Where.First", func(tx *gorm.DB, dst *[]CjReport) error {
				return tx.Joins("LineItem").Where("cj_reports.id = ?", 1).Limit(1).Find(dst).Error
			}},
			{"Joins.Rows", func(tx *gorm.DB, dst *[]CjReport) error {
				rows, err := tx.Model(&CjReport{}).Joins("LineItem").Rows()
				if err == nil {
					rows.Close()
				}
				return err
			}},
		}
		for _, l := range loads {
			for _, who := range []*gorm.DB{as(db, martin), db} {
				var got []CjReport
				err := fcSafe(t, func() error { return l.load(who, &got) })
				assert.True(t, fcUnenforceable(err), "%s: got %v", l.name, err)
				assert.Empty(t, got, l.name)
			}
		}
		locks, err := p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		assert.Empty(t, locks, "a refused load took a lock")

		var got []CjReport
		require.ErrorIs(t, as(db, martin).Preload("LineItem").Find(&got).Error, offlinelock.ErrLocked, "Preload meets david's lock")
		fcReset(t, db, p)
		got = nil
		require.NoError(t, as(db, martin).Preload("LineItem").Find(&got).Error)
		require.Len(t, got, 1)
		assert.Equal(t, uint(7), got[0].LineItem.OrderID)
		assert.True(t, fcHolds(t, db, p, &Order{ID: 7}, martin, offlinelock.Write), "Preload locked the root")
	})
}

// CjSeat is an aggregate member that joins a model locked on load.
type CjSeat struct {
	ID      uint `gorm:"primaryKey"`
	OrderID uint `lock:"root"`
	Order   *Order
	DeskID  uint
	Desk    *Desk
}

// TestFailClosedAMemberJoiningALockedModelIsRefused: a load of members
// locks their roots, not what they join: a Joins of a model locked on load
// is refused; Preload locks it.
func TestFailClosedAMemberJoiningALockedModelIsRefused(t *testing.T) {
	eachDBWithAggregates(t, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		fcDropCleanup(t, db, &CjSeat{}, &Desk{})
		require.NoError(t, admin(db).AutoMigrate(&Desk{}, &CjSeat{}))
		seedOrder(t, db, 7, 0)
		require.NoError(t, admin(db).Create(&Desk{ID: 129, Floor: 99}).Error)
		require.NoError(t, admin(db).Create(&CjSeat{ID: 1, OrderID: 7, DeskID: 129}).Error)
		require.NoError(t, as(db, martin).First(&Desk{}, 129).Error)
		for name, load := range map[string]func(tx *gorm.DB, dst *[]CjSeat) error{
			"Joins.Find":      func(tx *gorm.DB, dst *[]CjSeat) error { return tx.Joins("Desk").Find(dst).Error },
			"InnerJoins.Find": func(tx *gorm.DB, dst *[]CjSeat) error { return tx.InnerJoins("Desk").Find(dst).Error },
			"Joins.First": func(tx *gorm.DB, dst *[]CjSeat) error {
				var s CjSeat
				err := tx.Joins("Desk").First(&s, 1).Error
				if s.ID != 0 {
					*dst = append(*dst, s)
				}
				return err
			},
		} {
			var got []CjSeat
			err := fcSafe(t, func() error { return load(as(db, david), &got) })
			assert.True(t, fcUnenforceable(err), "%s: %v", name, err)
			for _, s := range got {
				assert.Nil(t, s.Desk, "%s: david read martin's desk 129", name)
			}
		}
		var got []CjSeat
		require.ErrorIs(t, as(db, david).Preload("Desk").Find(&got).Error, offlinelock.ErrLocked)
		require.NoError(t, as(db, martin).Preload("Desk").Find(&got).Error, "the holder of the desk, order 7 free")
		require.Len(t, got, 1)
		assert.Equal(t, 99, got[0].Desk.Floor)
	})
}
