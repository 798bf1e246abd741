package watch

import (
	"fmt"

	"gorm.io/gorm"
)

// Table is one feature table: its name and the model GORM makes it from.
type Table struct {
	Name  string
	Model any
}

// Tables are the feature tables of lock table table: the notes table
// (every Watch) and the viewers table (View).
func Tables(table string) []Table {
	return []Table{{NotesTable(table), &Note{}}, {viewersTable(table), &viewerRow{}}}
}

// CreateTables makes the feature tables of lock table table on s where
// they are missing, as a Hub would on first use.
func CreateTables(s *gorm.DB, table string) error {
	for _, t := range Tables(table) {
		if err := create(s, t.Name, t.Model); err != nil {
			return fmt.Errorf("offlinelock: creating the table %s: %w", t.Name, err)
		}
	}
	return nil
}

// create makes the table name of model on s if it is missing; one made
// meanwhile elsewhere (PostgreSQL: a duplicate type) is no error.
func create(s *gorm.DB, name string, model any) error {
	if s.Migrator().HasTable(name) {
		return nil
	}
	if err := s.Table(name).AutoMigrate(model); err != nil && !s.Migrator().HasTable(name) {
		return err
	}
	return nil
}
