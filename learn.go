package offlinelock

import (
	"reflect"
	"sync"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/offlinelock/offlinelock/internal/model"
)

// The plugin learns every model GORM parses on its database before its
// rows can be held (docs/guard.md): from the statements it sees (bypassed
// ones too), and from GORM's own cache of parsed models, which AutoMigrate
// fills before it creates a table: after DDL through GORM, and before a
// grant whose coverage is shown again (coverage.go). A member whose
// lock:"root" is declared on its side only is so known, and guarded,
// before its root's first grant.

// parsedSchemas is GORM's cache of the models it parsed on db (the
// schema cache gorm.Open made, which every Session shares), or nil. GORM
// does not export it; it is read, never written.
func parsedSchemas(db *gorm.DB) *sync.Map {
	if db == nil || db.Config == nil {
		return nil
	}
	f := reflect.ValueOf(db.Config).Elem().FieldByName("cacheStore")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*sync.Map]() || f.IsNil() {
		return nil
	}
	return (*sync.Map)(f.UnsafePointer())
}

// learnParsed registers the lockable models GORM parsed on db that the
// plugin has not met, and returns them.
func (p *Plugin) learnParsed(db *gorm.DB) []*model.Model {
	cache := parsedSchemas(db)
	if cache == nil {
		return nil
	}
	var types []reflect.Type
	cache.Range(func(_, v any) bool {
		if s, ok := v.(*schema.Schema); ok && s.ModelType != nil && s.ModelType.Name() != "" {
			if !p.reg.Known(s) {
				types = append(types, s.ModelType)
			}
		}
		return true
	})
	var out []*model.Model
	for _, t := range types {
		// Parse waits for a parse under way in another goroutine, and
		// returns the cached schema.
		s, err := schema.Parse(reflect.New(t).Interface(), cache, db.NamingStrategy)
		if err != nil || s == nil {
			continue
		}
		if m := p.reg.ModelOf(s, db.NamingStrategy); m.Lockable && m.Err == nil {
			out = append(out, m)
		}
	}
	return out
}
