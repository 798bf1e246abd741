package gormstmt

import (
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// TestRetargeted pins that a write's own clause names its table only when
// it is not the statement's own, and that another write's clause does not.
func TestRetargeted(t *testing.T) {
	stmt := &gorm.Statement{Table: "orders", Clauses: map[string]clause.Clause{}}
	stmt.AddClause(clause.Insert{Table: clause.Table{Name: "customers"}})
	stmt.AddClause(clause.From{Tables: []clause.Table{{Name: "Orders"}}})
	for via, want := range map[string]string{"INSERT": "customers", "FROM": "", "UPDATE": "", "": ""} {
		if got := Retargeted(stmt, via); got != want {
			t.Errorf("Retargeted(%q) = %q, want %q", via, got, want)
		}
	}
}
