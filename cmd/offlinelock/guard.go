package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/internal/lockstore"
)

// errUnguarded: a declared table is not fully guarded (exit code 4).
var errUnguarded = errors.New("a declared table is not fully guarded")

// errNothingDeclared: no lockable table is declared yet (exit code 5).
var errNothingDeclared = errors.New("no lockable table is declared yet")

// guardCmd shows, installs or removes the database guard (docs/guard.md).
func guardCmd(ctx context.Context, c cli, args []string) error {
	fs := newFlags("guard", "status|install|remove [flags]",
		"status reports, per table, whether the database guard of the lock table is in place on every table\n"+
			"the catalog declares (and their join tables and foreign-key parents); it exits 4 when one is not.\n"+
			"install installs it (or upgrades it in place) on every lockable table of the catalog, as db.Use does,\n"+
			"and creates the tables the plugin's features need beside the lock table (notes, viewers),\n"+
			"and reports as status does: exit 4 when a declared table is left unguarded.\n"+
			"Both exit 5 when no lockable table is declared yet: the application's db.Use (Config.Models) or\n"+
			"its first statement on a lockable table declares it; its grants are refused until the guard covers it.\n"+
			"remove drops it from every table and drops its routines: afterwards the database no longer refuses\n"+
			"writes of held records from clients that do not pass through the plugin, until a node's db.Use\n"+
			"installs it again (set offlinelock.Config.DisableGuard there to keep it off).")
	d := addDBFlags(c, fs)
	printSQL := fs.Bool("print-sql", false, "with install: print the SQL the install would run (the lock table's, the feature tables', the guard's)\n"+
		"instead of running it, for DBAs who run migrations; run it as the tables' owner (it carries the guard's key: keep it private)")
	pos, err := parse(c, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || (pos[0] != "status" && pos[0] != "install" && pos[0] != "remove") {
		return usagef(fs, "guard takes one of status, install or remove: got %q", withoutPasswords(pos))
	}
	if *printSQL {
		if pos[0] != "install" {
			return usagef(fs, "--print-sql goes with guard install only")
		}
		return printGuardSQL(ctx, c, d)
	}
	// The guard is not installed by opening: each action does its own.
	a := writes
	if pos[0] == "install" {
		a = plans // checked first, then registered (the lock table too)
	}
	db, locks, closeDB, err := d.open(ctx, offlinelock.Config{LeaveGuard: true}, a)
	if err != nil {
		return err
	}
	defer closeDB()
	var installErr error
	switch pos[0] {
	case "install":
		if err := checkThenRegister(db, locks, d.table); err != nil {
			return err
		}
		// The feature tables first, so a role with DML only finds them; then the guard.
		if err := locks.CreateFeatureTables(db); err != nil {
			return err
		}
		installErr = installPatiently(locks, db)
	case "remove":
		if err := locks.RemoveGuard(db); err != nil {
			return err
		}
		tables, err := locks.GuardedTables(db)
		if err != nil {
			return err
		}
		if len(tables) == 0 {
			fmt.Fprintln(c.stdout, "no table carries the guard")
			return nil
		}
		return fmt.Errorf("the guard is still on %s after its removal", strings.Join(tables, ", "))
	}
	if db.Dialector.Name() == "sqlite" {
		fmt.Fprintln(c.stdout, "no table carries the guard") // SQLite has no guard (docs/guard.md)
		return installErr
	}
	declared, err := locks.DeclaredTables(db)
	if err != nil {
		return errors.Join(installErr, err)
	}
	if len(declared) == 0 {
		fmt.Fprintf(c.stdout, "no lockable table is declared in the catalog yet: nothing is guarded.\n"+
			"The application declares its tables at db.Use (Config.Models) or at its first statement on each; "+
			"with the guard on, it installs the guard on them if its role may, and refuses their grants until it is in place. "+
			"Run `offlinelock guard install` again once it has.\n")
		return errors.Join(installErr, errNothingDeclared)
	}
	states, err := locks.GuardStatus(db)
	if err != nil {
		return errors.Join(installErr, err)
	}
	bad := 0
	seen := map[string]bool{}
	for _, s := range states {
		seen[s.Table] = true
		switch s.State {
		case "ok":
			fmt.Fprintf(c.stdout, "%s: guarded\n", s.Table)
		case "hidden":
			bad++
			fmt.Fprintf(c.stdout, "%s: not shown: this role may not read the guard's definitions; run `offlinelock guard status` as the tables' owner\n", s.Table)
		case "unguardable":
			bad++
			fmt.Fprintf(c.stdout, "%s: not guarded: %s\n", s.Table, s.Reason)
		default:
			bad++
			fmt.Fprintf(c.stdout, "%s: not guarded (%s): `offlinelock guard install` as the tables' owner repairs it\n", s.Table, s.State)
		}
	}
	for _, t := range declared {
		if !seen[t] {
			fmt.Fprintf(c.stdout, "%s: declared, no such table yet (guarded when it is made through GORM, or by `offlinelock guard install`)\n", t)
		}
	}
	if bad > 0 {
		return errors.Join(installErr, fmt.Errorf("%w: %d of %d tables", errUnguarded, bad, len(states)))
	}
	return installErr
}

// checkThenRegister checks this role's privileges before an install changes
// anything, so it never stops half-way, then registers the plugin (which
// creates a missing lock table, as db.Use would).
func checkThenRegister(db *gorm.DB, locks *offlinelock.Plugin, table string) error {
	if db.Dialector.Name() != "sqlite" {
		// A newer guard (ErrGuardProtocol) is the install's to report.
		todo, err := locks.GuardSQL(db)
		if err != nil && todo == nil && !errors.Is(err, offlinelock.ErrGuardProtocol) {
			return err
		}
		if len(todo) > 0 {
			if err := locks.CheckGuardPrivileges(db, false); err != nil {
				return err
			}
		}
	}
	if err := db.Use(locks); err != nil {
		return fmt.Errorf("opening lock table %q: %w", table, err)
	}
	return nil
}

// installTries bounds installPatiently's tries under traffic (each waits up
// to 1 s for a business table in use).
const installTries = 10

// installPatiently is InstallGuard, tried again, later each time, on lock timeouts.
func installPatiently(locks *offlinelock.Plugin, db *gorm.DB) error {
	err := locks.InstallGuard(db)
	for i := 1; i < installTries && lockstore.IsLockTimeout(err); i++ {
		time.Sleep(time.Duration(i) * 100 * time.Millisecond)
		err = locks.InstallGuard(db)
	}
	return err
}
