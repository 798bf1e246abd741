package model

import (
	"reflect"
	"sync"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// LearnParsed registers the lockable models GORM parsed on db (its cache,
// which AutoMigrate fills) that r has not met, so that a member is guarded
// before its root's first grant (docs/guard.md).
func (r *Registry) LearnParsed(db *gorm.DB) {
	cache := parsedSchemas(db)
	if cache == nil {
		return
	}
	var types []reflect.Type
	cache.Range(func(_, v any) bool {
		if s, ok := v.(*schema.Schema); ok && s.ModelType != nil && s.ModelType.Name() != "" && !r.Known(s) {
			types = append(types, s.ModelType)
		}
		return true
	})
	for _, t := range types {
		// Parse waits for a parse under way in another goroutine, and
		// returns the cached schema.
		if s, err := schema.Parse(reflect.New(t).Interface(), cache, db.NamingStrategy); err == nil && s != nil {
			r.ModelOf(s, db.NamingStrategy)
		}
	}
}

// parsedSchemas is GORM's unexported cache of the models it parsed on db,
// or nil; it is read, never written.
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
