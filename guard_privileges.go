package offlinelock

import (
	"fmt"
	"strings"

	"github.com/offlinelock/offlinelock/internal/guard"
	"gorm.io/gorm"
)

// CheckGuardPrivileges reports the privileges this role lacks to install
// the database guard on every table the catalog declares (or, with remove,
// to remove it from every table that carries it), read from the database
// before anything is changed: an error naming each privilege, its object
// and the grant that gives it, or nil when the role has them all.
// RemoveGuard runs it first, and so does `offlinelock guard install`
// where there is something to install, so that neither stops half-way
// (MySQL's DDL commits statement by statement). SQLite has no guard: nil.
func (p *Plugin) CheckGuardPrivileges(db *gorm.DB, remove bool) error {
	db = onPrimary(db)
	t, g, err := p.guardStoreOf(db)
	if err != nil || g == nil {
		return err
	}
	c := direct(p.background(db).WithContext(ctxOf(db)))
	var specs []tableSpec
	if !remove && db.Session(&gorm.Session{NewDB: true}).Migrator().HasTable(p.cfg.Table) {
		if specs, err = t.specs(c); err != nil {
			return err
		}
	}
	missing, err := guard.Missing(c, g, guardTables(specs), remove)
	if err != nil || len(missing) == 0 {
		return err
	}
	verb := map[bool]string{false: "install", true: "remove"}[remove]
	return fmt.Errorf("%w: this role may not %s the database guard of lock table %s, and nothing was changed: it lacks %s",
		ErrGuardPrivileges, verb, p.cfg.Table, strings.Join(missing, "; "))
}
