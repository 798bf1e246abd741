package offlinelock_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// Order is an aggregate root; its lines, shipments and parcels are members.
type Order struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_read"`
	Note  string
	Lines []LineItem
}

type LineItem struct {
	ID      uint `gorm:"primaryKey"`
	OrderID uint `lock:"root"` // through the belongs-to field Order
	Order   *Order
	Qty     int
}

type Shipment struct {
	ID      uint `gorm:"primaryKey"`
	OrderID uint `lock:"root=orders"` // no association field: the root's table is named
	Carrier string
}

type Parcel struct {
	ID         uint `gorm:"primaryKey"`
	ShipmentID uint `lock:"root"` // two levels: Parcel -> Shipment -> Order
	Weight     int
}

// Client and Address are customer 129 and address 301 of the walk-through.
type Client struct {
	ID        uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name      string
	Addresses []Address
}

type Address struct {
	ID       uint `gorm:"primaryKey"`
	ClientID uint `lock:"root"`
	City     string
}

var aggregateModels = []any{&Order{}, &LineItem{}, &Shipment{}, &Parcel{}, &Client{}, &Address{}}

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

// seedOrder creates order id with n lines, a shipment and a parcel.
func seedOrder(t testing.TB, db *gorm.DB, id uint, n int) {
	t.Helper()
	o := Order{ID: id, Note: "new"}
	for i := 0; i < n; i++ {
		o.Lines = append(o.Lines, LineItem{ID: id*10000 + uint(i), Qty: 1})
	}
	require.NoError(t, admin(db).CreateInBatches(&o, 500).Error)
	require.NoError(t, admin(db).Create(&Shipment{ID: id, OrderID: id, Carrier: "post"}).Error)
	require.NoError(t, admin(db).Create(&Parcel{ID: id, ShipmentID: id, Weight: 1}).Error)
}

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
			return c.n.Load(), len(lines)
		}
		n1000, rows := count(martin, func(tx *gorm.DB) *gorm.DB { return tx.Where("order_id = ?", 1) })
		assert.Equal(t, 1000, rows)
		mine, err := p.List(db, offlinelock.Filter{Session: martin.Session})
		require.NoError(t, err)
		assert.Len(t, mine, 1, "1000 lines of one order: one lock row")

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
		orders = c.n.Load()
		t.Logf("statements: %d for 1000 lines of one order, %d for lines of 20 orders, %d for the 20 orders themselves", n1000, n20, orders)
		assert.Equal(t, orders, n20, "the root key in the member's row costs no extra query")
		assert.LessOrEqual(t, n1000, n20+2)
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
			return c.n.Load()
		}
		one := measure(&[]Parcel{}, "id = ?", 1)
		five := measure(&[]Parcel{})
		shipments := measure(&[]Shipment{})
		t.Logf("statements: %d for the parcels of 1 order, %d for those of 5, %d for 5 shipments (root key in the row)", one, five, shipments)
		assert.Equal(t, one, five, "the level's query is one for the whole batch, not one per row")
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
