package offlinelock

import (
	"fmt"

	"gorm.io/gorm"
)

// The feature tables: what the plugin's features beside the lock itself
// write, each made on first use by a role that may create tables. In a
// least-privileged deployment the application's role may not, so the
// owner's install makes them (CreateFeatureTables, which `offlinelock
// guard install` runs), and the application needs only DML on them.
//
//   - the notes table (<Config.Table>_notes, notes.go): TakeOver,
//     RequestEdit, ForceRelease's and EndSession's notes, and every Watch;
//   - the viewers table (<Config.Table>_viewers, viewers.go): View, and
//     the viewers a Watch reports.

// featureTable is one table a feature needs: its name and its model.
type featureTable struct {
	name  string
	model any
}

// featureTables are the feature tables of lock table table.
func featureTables(table string) []featureTable {
	return []featureTable{
		{notesOf(table), &lockNote{}},
		{viewersOf(table), &viewerRow{}},
	}
}

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

// CreateFeatureTables creates the tables FeatureTables lists where they
// are missing, as the plugin would on first use, so that an application
// whose role may not create tables finds them in place. `offlinelock
// guard install` runs it as the tables' owner. Idempotent.
func (p *Plugin) CreateFeatureTables(db *gorm.DB) error {
	s := p.background(onPrimary(db)).WithContext(ctxOf(db)).Set(resolverWrite, struct{}{})
	for _, f := range featureTables(p.cfg.Table) {
		if s.Migrator().HasTable(f.name) {
			continue
		}
		// made meanwhile by another process: PostgreSQL fails the second
		// of two CREATE TABLEs at once (a duplicate type)
		if err := s.Table(f.name).AutoMigrate(f.model); err != nil && !s.Migrator().HasTable(f.name) {
			return fmt.Errorf("offlinelock: creating the table %s: %w", f.name, err)
		}
	}
	return nil
}
