package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/offlinelock/offlinelock"
)

// guardCmd shows, installs or removes the database guard (docs/guard.md).
func guardCmd(ctx context.Context, c cli, args []string) error {
	fs := newFlags("guard", "status|install|remove [flags]",
		"status lists the tables that carry the database guard of the lock table.\n"+
			"install installs it (or upgrades it in place) on every lockable table of the catalog, as db.Use does.\n"+
			"remove drops it from every table and drops its routines: afterwards the database no longer refuses\n"+
			"writes of held records from clients that do not pass through the plugin, until a node's db.Use\n"+
			"installs it again (set offlinelock.Config.DisableGuard there to keep it off).")
	d := addDBFlags(c, fs)
	pos, err := parse(c, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || (pos[0] != "status" && pos[0] != "install" && pos[0] != "remove") {
		return usagef(fs, "guard takes one of status, install or remove: got %q", withoutPasswords(pos))
	}
	// The guard is not installed by opening: each action does its own.
	a := writes
	if pos[0] == "install" {
		a = deploys // the owner's step at deploy time: the lock table too
	}
	db, locks, closeDB, err := d.open(ctx, offlinelock.Config{LeaveGuard: true}, a)
	if err != nil {
		return err
	}
	defer closeDB()
	switch pos[0] {
	case "install":
		if err := locks.InstallGuard(db); err != nil {
			return err
		}
	case "remove":
		if err := locks.RemoveGuard(db); err != nil {
			return err
		}
	}
	tables, err := locks.GuardedTables(db)
	if err != nil {
		return err
	}
	if len(tables) == 0 {
		fmt.Fprintln(c.stdout, "no table carries the guard")
		return nil
	}
	fmt.Fprintf(c.stdout, "guarded: %s\n", strings.Join(tables, ", "))
	states, err := locks.GuardStatus(db)
	if err != nil {
		return err
	}
	for _, s := range states {
		if s.State != "ok" {
			fmt.Fprintf(c.stdout, "not in place: %s (%s): `offlinelock guard install` repairs it\n", s.Table, s.State)
		}
	}
	return nil
}
