package testkit

// Customer is not lockable.
type Customer struct {
	ID     uint `gorm:"primaryKey"`
	Name   string
	Credit int
}

// Doc is free to load; writes need a Write lock taken with Acquire.
type Doc struct {
	ID    uint `gorm:"primaryKey" lock:"exclusive_write"`
	Title string
	Body  string
}

// OtCustomer is the root of the telemetry tests' aggregate.
type OtCustomer struct {
	ID        uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name      string
	Credit    int
	Addresses []OtAddress `gorm:"foreignKey:CustomerID"`
}

// OtAddress is a member of an OtCustomer's aggregate.
type OtAddress struct {
	ID         uint `gorm:"primaryKey"`
	CustomerID uint `lock:"root=ot_customers"`
	City       string
}

// OtPolicy takes shared Read locks on load.
type OtPolicy struct {
	ID     uint `gorm:"primaryKey" lock:"read_write"`
	Holder string
}

// Policy takes shared Read locks on load (read_write) that live 2 hours.
type Policy struct {
	ID   uint `gorm:"primaryKey" lock:"read_write,ttl=2h"`
	Name string
}
