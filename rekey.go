package offlinelock

import (
	"fmt"
	"reflect"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/offlinelock/offlinelock/internal/model"
	"github.com/offlinelock/offlinelock/internal/telemetry"
)

// The keys a write finally carries. The plugin checks a write before its
// hooks, so that a refused write runs none; but a Before hook (a natural
// key derived in BeforeCreate), another plugin's callback (an ID
// generator) or GORM's own save of belongs-to associations (which copies
// the associated record's key into the member's link) may change the
// model's key or link after the check. The statement is built from the
// model as it is then. So the check notes the keys and links it read
// (keySignature) when anything could change them, and
// offlinelock:rekey_<op>, just before the statement is built, checks the
// write again if they changed.

// noteKeys remembers the keys and links the check of st's write read, when
// something between the check and the write could change them.
func (p *Plugin) noteKeys(db *gorm.DB, st *state, op opKind) {
	if db.Error != nil || !p.mayRekey(db, op) {
		return
	}
	st.keysRead, st.rekey = keySignature(db.Statement, st.m), true
}

// mayRekey: a hook of the model's runs before the write, the model has
// associations GORM saves first, or the chain holds another's callback.
func (p *Plugin) mayRekey(db *gorm.DB, op opKind) bool {
	s := db.Statement.Schema
	if s == nil {
		return false
	}
	if !db.Statement.SkipHooks {
		switch op {
		case opCreate:
			if s.BeforeSave || s.BeforeCreate {
				return true
			}
		case opUpdate:
			if s.BeforeSave || s.BeforeUpdate {
				return true
			}
		case opDelete:
			if s.BeforeDelete {
				return true
			}
		}
	}
	if len(s.Relationships.BelongsTo) > 0 && op != opDelete {
		return true
	}
	var proc any
	switch op {
	case opCreate:
		proc = db.Callback().Create()
	case opUpdate:
		proc = db.Callback().Update()
	default:
		proc = db.Callback().Delete()
	}
	return !p.chains.own(proc)
}

// rekey checks a write again when the keys or links it carries now are not
// the ones its check read: on the rows as the statement will write them.
func (b *binding) rekey(op opKind) func(*gorm.DB) {
	p := b.p
	return func(db *gorm.DB) {
		st := statementState(db.Statement)
		if p.spans && (st == nil || !st.noSpans) {
			telemetry.AdoptSpan(db)
		}
		if st == nil || !st.rekey || db.Error != nil || db.DryRun {
			return
		}
		if keySignature(db.Statement, st.m) == st.keysRead {
			return
		}
		st.rekey = false
		if op == opUpdate {
			if err := b.checkNewKeys(db, st); err != nil {
				st.fail(db, err)
				return
			}
		}
		if st.m.Root != nil {
			b.checkMemberWrite(db, st, op)
			return
		}
		if err := b.checkRowsWritten(db, st, op); err != nil {
			st.fail(db, err)
		}
	}
}

// keySignature spells the values of the model's rows that the check reads
// keys from: each row's primary key and, for a member, its link.
func keySignature(stmt *gorm.Statement, m *model.Model) string {
	fields := append([]*schema.Field(nil), m.PK...)
	if m.Root != nil {
		fields = append(fields, m.Root.Field)
	}
	var b strings.Builder
	row := func(v reflect.Value) {
		for _, f := range fields {
			if f == nil || f.Schema == nil || v.Type() != f.Schema.ModelType {
				b.WriteString("?\x00") // not the model's struct: nothing to compare
				continue
			}
			x, zero := f.ValueOf(stmt.Context, v)
			if rv := reflect.ValueOf(x); rv.Kind() == reflect.Pointer && !rv.IsNil() {
				x = rv.Elem().Interface()
			}
			fmt.Fprintf(&b, "%t %#v\x00", zero, x)
		}
		b.WriteByte('\n')
	}
	// What the statement writes besides the model: a hook's SetColumn
	// writes a map Dest, and a hook may add a SET clause.
	if dest := reflect.Indirect(reflect.ValueOf(stmt.Dest)); dest.Kind() == reflect.Map && dest.Type().Key().Kind() == reflect.String {
		for _, f := range fields {
			for _, k := range model.MapKeysNaming(stmt.Schema, dest, f) {
				fmt.Fprintf(&b, "map %s=%#v\x00", k.String(), dest.MapIndex(k).Interface())
			}
		}
	}
	if set, ok := stmt.Clauses["SET"].Expression.(clause.Set); ok {
		for _, a := range set {
			for _, f := range fields {
				if model.NamesField(stmt.Schema, a.Column.Name, f) {
					fmt.Fprintf(&b, "set %s=%#v\x00", a.Column.Name, a.Value)
				}
			}
		}
	}
	rv := reflect.Indirect(stmt.ReflectValue)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		for i := 0; i < rv.Len(); i++ {
			if e := reflect.Indirect(rv.Index(i)); e.Kind() == reflect.Struct {
				row(e)
			}
		}
	case reflect.Struct:
		row(rv)
	}
	return b.String()
}
