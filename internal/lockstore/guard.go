package lockstore

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"strings"
)

// queryStrings runs q and returns its one text column.
func queryStrings(c Conn, q string, args ...any) ([]string, error) {
	var out []string
	_, err := c.Query(q, args, func(r *sql.Rows) error {
		var v string
		err := r.Scan(&v)
		out = append(out, v)
		return err
	})
	return out, err
}

// queryPairs runs q and returns its two text columns as a map, nil when it
// returns no row.
func queryPairs(c Conn, q string, args ...any) (map[string]string, error) {
	var out map[string]string
	_, err := c.Query(q, args, func(r *sql.Rows) error {
		var k, v string
		if err := r.Scan(&k, &v); err != nil {
			return err
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
		return nil
	})
	return out, err
}

// GuardPlan is what the triggers of one table check.
type GuardPlan struct {
	Table    string
	Records  []GuardRecord  // how a row belongs to lockable records
	Cascades []GuardCascade // children a delete of table's rows changes, unseen by their triggers
	Version  string         // a hash of what it checks: a changed catalog changes it
	// Partitioned: the table is a partitioned table (PostgreSQL), whose
	// partitions carry statement triggers of their own (plans of their
	// own) and whose row trigger, cloned onto every partition, checks the
	// rows of a partition attached since (pgPartitionRow).
	Partitioned bool
	// Inherits is the table whose plan a partition's or an inheritance
	// child's is (its rows are that table's records), or "".
	Inherits string
}

// GuardRecord is one way a row of the table belongs to a record: resource
// is the record's lock resource, key the SQL spelling of its lock_id from a
// row alias (NULL when the row belongs to none).
type GuardRecord struct {
	Resource string
	Key      func(row string) string
	// Match, where not nil, finds by indexes every row (alias row) whose
	// Key is the SQL expression id (and maybe others): joins are the
	// tables to read before the row's, each followed by STRAIGHT_JOIN
	// (its parents, from the root down), and cond the condition on them
	// and the row. A grant's probe reads the record's rows by it
	// (MariaDB, guard_probe_mysql.go); without it, by Key, by scan.
	Match func(row, id string) (joins, cond string)
}

// GuardCascade is a foreign key whose ON DELETE or ON UPDATE action
// changes rows of child when rows of parent are deleted or their key
// changes: child's column holds parent's parentColumn; records are the
// child rows' records.
type GuardCascade struct {
	Parent, ParentColumn, Child, Column string
	// Constraint is the foreign key's name; Columns how many columns it
	// has (the guard follows one-column keys only: the plugin refuses the
	// others, naming the constraint).
	Constraint string
	Columns    int
	// OnDelete and OnUpdate are the actions on the parent's deletes and key
	// changes that change child's rows (CASCADE, SET NULL or SET
	// DEFAULT), or "".
	OnDelete, OnUpdate string
	// ChildName is Child quoted and qualified by its database, fixed at
	// install (QualifiedName): the trigger reads it by that name.
	ChildName string
	Records   []GuardRecord
}

// planResources are the resources plan's triggers order.
func planResources(plan GuardPlan) []string {
	var out []string
	for _, r := range plan.Records {
		out = append(out, r.Resource)
	}
	for _, cc := range plan.Cascades {
		for _, r := range cc.Records {
			out = append(out, r.Resource)
		}
	}
	return out
}

// guardName derives a short, stable name for a guard object of a lock
// table: identifiers are limited to 63 (PostgreSQL) and 64 (MySQL) bytes.
func guardName(lockTable string, parts ...string) string {
	h := sha256.Sum256([]byte(lockTable + "\x00" + strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:5])
}

// guardVersion hashes generated SQL: a changed plugin or catalog changes it.
func guardVersion(sql ...string) string {
	h := sha256.Sum256([]byte(strings.Join(sql, "\x00")))
	return hex.EncodeToString(h[:8])
}

// sqlLiteral is s as a SQL string literal. DDL takes no parameters; the
// names it carries are the catalog's table names.
func sqlLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// GuardRefusal is a refusal raised by the guard, as the database reports
// it: the record and, where the message carried it whole, its key.
type GuardRefusal struct {
	Resource, ID string
}

// parseRefusal reads the record out of a guard's message, "offlinelock:
// <resource> <id> is locked by …": the resource is the longest known one
// it starts with, the id runs to the last " is locked by " (MySQL cuts
// messages at 128 characters: then the id is unknown).
func parseRefusal(msg string, resources []string) GuardRefusal {
	_, rest, ok := strings.Cut(msg, "offlinelock: ")
	if !ok {
		return GuardRefusal{}
	}
	best := ""
	for _, r := range resources {
		if strings.HasPrefix(rest, r+" ") && len(r) > len(best) {
			best = r
		}
	}
	if best == "" {
		return GuardRefusal{}
	}
	rest = rest[len(best)+1:]
	i := strings.LastIndex(rest, " is locked by ")
	if i < 0 {
		return GuardRefusal{Resource: best}
	}
	return GuardRefusal{Resource: best, ID: rest[:i]}
}

// GuardVersion hashes generated SQL: a changed plugin or catalog changes it.
func GuardVersion(sql ...string) string { return guardVersion(sql...) }
