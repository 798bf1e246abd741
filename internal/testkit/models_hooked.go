package testkit

import (
	"sync/atomic"

	"gorm.io/gorm"
)

// FcHooked counts its hooks in a counter carried by the statement's
// context, so each test has its own.
type FcHooked struct {
	ID   uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name string
}

// FcHooksKey is the context key of the FcHookCounter that FcHooked's
// hooks count in.
type FcHooksKey struct{}

// FcHookCounter counts the hooks FcHooked ran.
type FcHookCounter struct{ N atomic.Int64 }

// FcCount counts one hook in the FcHookCounter of tx's context, if it
// carries one (at FcHooksKey); models of a test's own count with it too.
func FcCount(tx *gorm.DB) error {
	if c, ok := tx.Statement.Context.Value(FcHooksKey{}).(*FcHookCounter); ok {
		c.N.Add(1)
	}
	return nil
}

// BeforeSave counts.
func (h *FcHooked) BeforeSave(tx *gorm.DB) error { return FcCount(tx) }

// AfterSave counts.
func (h *FcHooked) AfterSave(tx *gorm.DB) error { return FcCount(tx) }

// BeforeCreate counts.
func (h *FcHooked) BeforeCreate(tx *gorm.DB) error { return FcCount(tx) }

// AfterCreate counts.
func (h *FcHooked) AfterCreate(tx *gorm.DB) error { return FcCount(tx) }

// BeforeUpdate counts.
func (h *FcHooked) BeforeUpdate(tx *gorm.DB) error { return FcCount(tx) }

// AfterUpdate counts.
func (h *FcHooked) AfterUpdate(tx *gorm.DB) error { return FcCount(tx) }

// BeforeDelete counts.
func (h *FcHooked) BeforeDelete(tx *gorm.DB) error { return FcCount(tx) }

// AfterDelete counts.
func (h *FcHooked) AfterDelete(tx *gorm.DB) error { return FcCount(tx) }
