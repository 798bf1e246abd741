package offlinelock

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
)

// Coarse-Grained Lock: the members of an aggregate (an order's lines, a
// customer's addresses) have no lock of their own. A foreign key tagged
// `lock:"root"` points a member at its parent; the chain of parents ends at
// the aggregate root, whose lock and mode cover the whole group. Locking a
// line locks its order, and every other line of it.

// rootsOf maps member rows, given by the raw values of their foreign key,
// to their root's keys: directly when the parent is the root, else with
// one query per level for the whole batch. A parent row that does not
// exist is an error: no lock is ever taken on a phantom root.
func (p *Plugin) rootsOf(db *gorm.DB, m *model.Model, links []any) ([]target, error) {
	if err := p.reg.Resolve(m); err != nil {
		return nil, err
	}
	chain := m.Chain()
	vals := dedupe(links)
	from := m
	for i, parent := range chain {
		if i == len(chain)-1 {
			out := make([]target, 0, len(vals))
			for _, v := range vals {
				id, err := model.Canonical(parent.Kinds[0], v)
				if err != nil {
					return nil, err
				}
				out = append(out, target{key{Resource: parent.Table, ID: id}, parent})
			}
			return out, nil
		}
		next, err := p.linksOf(db, parent, vals)
		if err != nil {
			return nil, err
		}
		if len(next) < len(vals) {
			return nil, fmt.Errorf("%w: a %s refers to a %s that does not exist", ErrInvalid, from.Name, parent.Name)
		}
		vals, from = dedupe(next), parent
	}
	return nil, nil
}

// linksOf reads the foreign keys of m's rows whose primary keys are pks.
func (p *Plugin) linksOf(db *gorm.DB, m *model.Model, pks []any) ([]any, error) {
	var out []any
	for start := 0; start < len(pks); start += batchSize {
		batch := pks[start:min(start+batchSize, len(pks))]
		// A parent cannot move to another root until the lock is taken:
		// a locking read where the database has row locks.
		q := lockstore.KeysIn(db.Statement.Quote(m.Root.Field.DBName), db.Statement.Quote(m.Table),
			db.Statement.Quote(m.PK[0].DBName), len(batch), p.rowLocking(db).ShareLock)
		q, args := gormBind(db, q, batch)
		_, err := direct(db).Query(q, args, func(r *sql.Rows) error {
			var v any
			if err := r.Scan(&v); err != nil {
				return err
			}
			if v != nil {
				out = append(out, v)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// memberLinks reads the foreign key of every member struct in v.
func memberLinks(ctx context.Context, m *model.Model, v reflect.Value) ([]any, bool) {
	var links []any
	ok := model.StructsOf(v, m.Type, func(e reflect.Value) {
		if val, zero := m.Root.Field.ValueOf(ctx, e); !zero {
			links = append(links, val)
		}
	})
	return links, ok
}

// memberRootOf finds the root of one member given as a model value: its
// foreign key when set, else the one stored in its row. The root row must
// exist.
func (p *Plugin) memberRootOf(db *gorm.DB, m *model.Model, v reflect.Value) (target, error) {
	links, _ := memberLinks(db.Statement.Context, m, v)
	if len(links) == 0 {
		k, vals, ok := m.RowKey(db.Statement.Context, v)
		if !ok {
			return target{}, invalid("%s has neither its root key %s nor its primary key set", m.Name, m.Root.Field.Name)
		}
		var err error
		if links, err = p.linksOfRows(db, m, [][]any{vals}); err != nil {
			return target{}, err
		}
		if len(links) == 0 {
			return target{}, invalid("%s %s does not exist, so it has no root", m.Table, k.ID)
		}
	}
	roots, err := p.rootsOf(db, m, links)
	if err != nil {
		return target{}, err
	}
	if err := p.rootsExist(db, roots); err != nil {
		return target{}, err
	}
	return roots[0], nil
}

// linksOfRows reads the foreign keys of m's rows given by primary key values.
func (p *Plugin) linksOfRows(db *gorm.DB, m *model.Model, rows [][]any) ([]any, error) {
	if len(m.PK) != 1 {
		return nil, invalid("member %s needs a single-column primary key", m.Name)
	}
	pks := make([]any, len(rows))
	for i, r := range rows {
		pks[i] = r[0]
	}
	return p.linksOf(db, m, pks)
}

// rootsExist checks that every root row exists.
func (p *Plugin) rootsExist(db *gorm.DB, roots []target) error {
	byModel := map[*model.Model][]pkRow{}
	for _, r := range roots {
		byModel[r.m] = append(byModel[r.m], pkRow{k: r.k, vals: []any{r.k.ID}})
	}
	for m, rows := range byModel {
		found, err := p.existing(db, m, m.Table, rows)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if !found[r.k] {
				return fmt.Errorf("%w: root %s %s does not exist", ErrInvalid, r.k.Resource, r.k.ID)
			}
		}
	}
	return nil
}

func dedupe(vals []any) []any {
	seen := map[string]bool{}
	out := vals[:0:0]
	for _, v := range vals {
		t := model.TextKey(v)
		if !seen[t] {
			seen[t] = true
			out = append(out, v)
		}
	}
	return out
}
