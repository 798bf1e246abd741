package offlinelock

import (
	"fmt"
	"reflect"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
)

// rootsOf maps member rows, given by the raw values of their foreign key,
// to their root's lock targets (model.RootKeys).
func (p *Plugin) rootsOf(db *gorm.DB, m *model.Model, links []any) ([]target, error) {
	root, ids, err := p.reg.RootKeys(m, links, func(parent *model.Model, pks []any) ([]any, error) {
		return p.linksOf(db, parent, pks)
	})
	if err != nil || root == nil {
		return nil, err
	}
	out := make([]target, len(ids))
	for i, id := range ids {
		out[i] = target{key{Resource: root.Table, ID: id}, root}
	}
	return out, nil
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
		rows, err := rowsOf(db, q, args, 1)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			out = append(out, r[0])
		}
	}
	return out, nil
}

// memberRootOf finds the root of one member given as a model value: its
// foreign key when set, else the one stored in its row. The root row must
// exist.
func (p *Plugin) memberRootOf(db *gorm.DB, m *model.Model, v reflect.Value) (target, error) {
	links, _ := m.RootLinks(db.Statement.Context, v)
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

// linksOfRows reads the foreign keys of m's rows given by primary key
// values, in any spelling.
func (p *Plugin) linksOfRows(db *gorm.DB, m *model.Model, rows [][]any) ([]any, error) {
	if len(m.PK) != 1 {
		return nil, invalid("member %s needs a single-column primary key", m.Name)
	}
	pks := make([]any, len(rows))
	for i, r := range rows {
		pks[i] = m.KeyArgs(r)[0]
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
