package guard

import (
	"slices"
	"strings"

	"github.com/offlinelock/offlinelock/internal/model"
	"gorm.io/gorm"
)

// The reads behind the plugin's public guard methods, each on a session
// outside the caller's transaction (Host.Background). Without a guard
// (SQLite) they have nothing to read: nil.

// States is Status of the catalog's tables.
func (k *Keeper) States(db *gorm.DB) ([]State, error) {
	h := k.cfg.Host
	if k.cfg.Guard == nil {
		return nil, nil
	}
	specs, err := h.Catalog(h.Background(db))
	if err != nil {
		return nil, err
	}
	return Status(h.Conn(h.Background(db)), k.cfg.Guard, specs)
}

// Declared lists, in order, the catalog's tables (lower case), guard or
// none.
func (k *Keeper) Declared(db *gorm.DB) ([]string, error) {
	h := k.cfg.Host
	specs, err := h.Catalog(h.Background(db))
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(specs))
	for _, s := range specs {
		if s.Table != "" {
			out = append(out, strings.ToLower(s.Table))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// GuardedTables is Guarded on db.
func (k *Keeper) GuardedTables(db *gorm.DB) ([]string, error) {
	if k.cfg.Guard == nil {
		return nil, nil
	}
	return Guarded(k.cfg.Host.Conn(k.cfg.Host.Background(db)), k.cfg.Guard)
}

// Lacks is Missing on db: to install, on the catalog's tables once the
// lock table exists; to remove, on the tables that carry the guard.
func (k *Keeper) Lacks(db *gorm.DB, remove bool) ([]string, error) {
	if k.cfg.Guard == nil {
		return nil, nil
	}
	h := k.cfg.Host
	s := h.Background(db).WithContext(ctxOf(db))
	var specs []model.Spec
	if !remove && db.Session(&gorm.Session{NewDB: true}).Migrator().HasTable(k.cfg.LockTable) {
		var err error
		if specs, err = h.Catalog(s); err != nil {
			return nil, err
		}
	}
	return Missing(h.Conn(s), k.cfg.Guard, specs, remove)
}
