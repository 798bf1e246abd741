package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/offlinelock/offlinelock"
)

// printGuardSQL is guard install --print-sql: the statements the install
// would run, changing nothing; exit 5 with no lockable table declared.
func printGuardSQL(ctx context.Context, c cli, d *dbFlags) error {
	db, locks, closeDB, err := d.open(ctx, offlinelock.Config{LeaveGuard: true}, plans)
	if err != nil {
		return err
	}
	defer closeDB()
	if db.Dialector.Name() == "sqlite" {
		fmt.Fprintln(c.stdout, "-- SQLite has no guard: db.Use creates the lock table")
		return nil
	}
	existed := db.Migrator().HasTable(d.table)
	stmts, err := locks.GuardSQL(db)
	if err != nil && stmts == nil {
		return err
	}
	mysql := db.Dialector.Name() == "mysql"
	var b strings.Builder
	b.WriteString("-- offlinelock guard install, as SQL: run it as the tables' owner. It carries the guard's key: keep it private.\n")
	if mysql {
		b.WriteString("DELIMITER //\n")
	} else {
		b.WriteString("BEGIN;\n")
	}
	for _, q := range stmts {
		if mysql {
			b.WriteString(q + "\n//\n")
		} else {
			b.WriteString(q + ";\n")
		}
	}
	if mysql {
		b.WriteString("DELIMITER ;\n")
	} else {
		b.WriteString("COMMIT;\n")
	}
	declared := 0
	if existed {
		tables, derr := locks.DeclaredTables(db)
		if derr != nil {
			return errors.Join(err, derr)
		}
		declared = len(tables)
	}
	if declared == 0 {
		b.WriteString("-- No lockable table is declared yet, so this guards none: run `offlinelock guard install --print-sql` again\n" +
			"-- once the application has declared its tables (its db.Use with Config.Models, or its first statements).\n")
	}
	fmt.Fprint(c.stdout, b.String())
	if declared == 0 {
		return errors.Join(err, errNothingDeclared)
	}
	return err
}
