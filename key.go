package offlinelock

import (
	"fmt"
	"reflect"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock/internal/model"
)

// The parsed model (tags, keys, aggregates, links) is internal/model's;
// this file is the plugin's side of it: the key a lock call's target is
// locked by, and the model a value parses as.

// TagName is the struct tag the plugin reads. On a model's primary key it
// sets the model's Mode and options: `lock:"exclusive_read,ttl=2h"`. On a
// foreign key it makes the model a member of an aggregate whose lock is its
// root's: `lock:"root"` or `lock:"root=orders"`.
const TagName = "lock"

// targetKey finds the key target is locked by: its own table and primary
// key, or, for a member of an aggregate, its root's.
func (p *Plugin) targetKey(db *gorm.DB, target any) (key, error) {
	k, _, err := p.targetKeyModel(db, target)
	return k, err
}

// targetKeyModel is targetKey, and the model target parsed as (nil when
// it did not parse).
func (p *Plugin) targetKeyModel(db *gorm.DB, target any) (key, *model.Model, error) {
	if err := checkTarget(target); err != nil {
		return key{}, nil, err
	}
	m, stmt, err := p.modelFor(db, target)
	k, err := p.modelKey(db, target, m, stmt, err)
	if err == nil && m != nil && !m.Lockable && m.Slip != "" && p.reg.TableModel(k.Resource) == nil {
		// An explicit lock on a model without lock tags is a lock like any
		// other (Fowler's explicit lock manager); one whose tags show a
		// slipped lock tag was meant to be lockable, and is not.
		return key{}, m, model.NotLockable(m)
	}
	return k, m, err
}

// modelKey is targetKey of a target modelFor parsed into m and stmt (with
// its error err): its own key, or its root's.
func (p *Plugin) modelKey(db *gorm.DB, target any, m *model.Model, stmt *gorm.Statement, err error) (key, error) {
	if m == nil || m.Root == nil || err != nil {
		if err != nil && m != nil {
			return key{}, err
		}
		var k key
		if stmt != nil {
			k, err = parsedKey(db, stmt, target) // parsed once, above
		} else {
			k, err = targetRowKey(db, target)
		}
		if tm := p.reg.TableModel(k.Resource); tm != nil {
			k.Resource = tm.Table // a DTO of a lockable table names its lock
		}
		return k, err
	}
	root, err := p.memberRootOf(db, m, reflect.ValueOf(target).Elem())
	return root.k, err
}

func checkTarget(target any) error {
	if target == nil {
		return invalid("target is nil")
	}
	rv := reflect.ValueOf(target)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return invalid("target must be a non-nil pointer to a model, got %T", target)
	}
	if rv.Elem().Kind() != reflect.Struct {
		return invalid("target must point to a struct, got %T", target)
	}
	return nil
}

// targetRowKey is the key of target's own row: its table and primary key
// (targetKey resolves a member to its root's). target must be a non-nil
// pointer to a model whose primary key is set.
func targetRowKey(db *gorm.DB, target any) (key, error) {
	if err := checkTarget(target); err != nil {
		return key{}, err
	}
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(target); err != nil {
		return key{}, invalid("cannot parse model %T: %v", target, err)
	}
	return parsedKey(db, stmt, target)
}

// parsedKey is targetRowKey of a target stmt has parsed already.
func parsedKey(db *gorm.DB, stmt *gorm.Statement, target any) (key, error) {
	rv := reflect.ValueOf(target)
	fields := stmt.Schema.PrimaryFields
	if len(fields) == 0 {
		return key{}, invalid("model %s has no primary key", stmt.Schema.Name)
	}
	parts := make([]string, len(fields))
	for i, f := range fields {
		v, zero := f.ValueOf(db.Statement.Context, rv.Elem())
		if zero {
			return key{}, invalid("model %s has no value in primary key field %s", stmt.Schema.Name, f.Name)
		}
		id, err := model.Canonical(model.KindOf(f), v)
		if err != nil {
			return key{}, fmt.Errorf("model %s field %s: %w", stmt.Schema.Name, f.Name, err)
		}
		parts[i] = id
	}
	k := key{Resource: stmt.Table, ID: model.EncodeKey(parts)}
	return k, model.ValidateKey(k)
}

// pkRow is a row's key with the primary key values it came from.
type pkRow struct {
	k    key
	vals []any
}

// modelFor parses the schema of value (a model or a pointer to one).
func (p *Plugin) modelFor(db *gorm.DB, value any) (*model.Model, *gorm.Statement, error) {
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(value); err != nil {
		return nil, nil, err
	}
	m := p.reg.ModelOf(stmt.Schema, db.NamingStrategy)
	if err := p.reg.Resolve(m); err != nil {
		return m, stmt, err
	}
	return m, stmt, nil
}
