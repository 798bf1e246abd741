package offlinelock

import (
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock/internal/watch"
)

// The feature tables: what the plugin's features beside the lock itself
// write, each made on first use by a role that may create tables. In a
// least-privileged deployment the application's role may not, so the
// owner's install makes them (CreateFeatureTables, which `offlinelock
// guard install` runs), and the application needs only DML on them.
//
//   - the notes table (<Config.Table>_notes, internal/watch): TakeOver,
//     RequestEdit, ForceRelease's and EndSession's notes, and every Watch;
//   - the viewers table (<Config.Table>_viewers, internal/watch): View,
//     and the viewers a Watch reports.

// FeatureTables lists the tables the plugin's features beside the lock
// table need on db's lock table: the notes table (TakeOver, RequestEdit,
// Watch) and the viewers table (View). CreateFeatureTables makes them;
// the application's role needs SELECT, INSERT, UPDATE and DELETE on them
// (and on PostgreSQL USAGE on the notes table's id sequence).
func (p *Plugin) FeatureTables() []string {
	var out []string
	for _, f := range featureTables(p.cfg.Table) {
		out = append(out, f.name)
	}
	return out
}

// featureTable is one feature table: its name and its model.
type featureTable struct {
	name  string
	model any
}

// featureTables are the feature tables of lock table table.
func featureTables(table string) []featureTable {
	var out []featureTable
	for _, t := range watch.Tables(table) {
		out = append(out, featureTable{t.Name, t.Model})
	}
	return out
}

// CreateFeatureTables creates the tables FeatureTables lists where they
// are missing, as the plugin would on first use, so that an application
// whose role may not create tables finds them in place. `offlinelock
// guard install` runs it as the tables' owner. Idempotent.
func (p *Plugin) CreateFeatureTables(db *gorm.DB) error {
	s := p.background(onPrimary(db)).WithContext(ctxOf(db)).Set(resolverWrite, struct{}{})
	return watch.CreateTables(s, p.cfg.Table)
}

// checkFeaturePrivileges is db.Use's check of the notes table (the hub's
// CheckPrivileges).
func (p *Plugin) checkFeaturePrivileges(db *gorm.DB) error {
	b, err := p.bindingOf(db)
	if err != nil {
		return err
	}
	return b.watch.CheckPrivileges(p.background(db).WithContext(ctxOf(db)))
}
