package model

import (
	"context"
	"fmt"
	"reflect"

	"github.com/offlinelock/offlinelock/internal/lockstore"
)

// LinkReader reads the foreign keys (toward the root) of m's rows whose
// primary keys are pks, leaving out NULLs.
type LinkReader func(m *Model, pks []any) ([]any, error)

// RootKeys maps member rows of m, given by their foreign key's raw values,
// to their root and its keys, reading each level's links with read for the
// batch. A missing parent row is an error: no lock on a phantom root.
func (r *Registry) RootKeys(m *Model, links []any, read LinkReader) (*Model, []string, error) {
	if err := r.Resolve(m); err != nil {
		return nil, nil, err
	}
	chain := m.Chain()
	if len(chain) == 0 {
		return nil, nil, nil
	}
	vals, from := dedupe(links), m
	for _, parent := range chain[:len(chain)-1] {
		next, err := read(parent, vals)
		if err != nil {
			return nil, nil, err
		}
		if len(next) < len(vals) {
			return nil, nil, fmt.Errorf("%w: a %s refers to a %s that does not exist", lockstore.ErrInvalid, from.Name, parent.Name)
		}
		vals, from = dedupe(next), parent
	}
	root := chain[len(chain)-1]
	ids := make([]string, len(vals))
	for i, v := range vals {
		id, err := Canonical(root.Kinds[0], v)
		if err != nil {
			return nil, nil, err
		}
		ids[i] = id
	}
	return root, ids, nil
}

// RootLinks reads the foreign key toward the root of every member struct
// in v, and says whether v holds m's structs.
func (m *Model) RootLinks(ctx context.Context, v reflect.Value) ([]any, bool) {
	var links []any
	ok := StructsOf(v, m.Type, func(e reflect.Value) {
		if val, zero := m.Root.Field.ValueOf(ctx, e); !zero {
			links = append(links, val)
		}
	})
	return links, ok
}

// dedupe keeps the first of the values that spell the same key.
func dedupe(vals []any) []any {
	seen := map[string]bool{}
	out := vals[:0:0]
	for _, v := range vals {
		t := TextKey(v)
		if !seen[t] {
			seen[t] = true
			out = append(out, v)
		}
	}
	return out
}
