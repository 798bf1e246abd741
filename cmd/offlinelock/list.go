package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/offlinelock/offlinelock"
)

// defaultLimit caps list's output unless --limit says otherwise.
const defaultLimit = 1000

// listCmd prints the locks that match the filter flags, in --sort's order.
func listCmd(ctx context.Context, c cli, args []string) error {
	fs := newFlags("list", "[flags]", "Prints the live locks (or, with --expired, the expired ones not swept yet)\n"+
		"that match every filter given, by resource, id and holder; oldest first, or\n"+
		"as --sort says, in the console's orders. Never tokens.")
	d := addDBFlags(c, fs)
	var f offlinelock.Filter
	fs.StringVar(&f.Resource, "resource", "", "only locks on this `resource` (the locked table, or its aggregate root's)")
	fs.StringVar(&f.ID, "id", "", "only locks on the record with this `id` (its primary key as text)")
	fs.StringVar(&f.User, "user", "", "only locks of this `user`")
	fs.StringVar(&f.Session, "session", "", "only locks of this `session`")
	fs.BoolVar(&f.Expired, "expired", false, "the expired locks the sweep has not removed yet, instead of the live ones")
	limit := fs.Int("limit", defaultLimit, "at most `n` locks, the first in --sort's order of all that match; 0 for all")
	sortBy := fs.String("sort", defaultSort, "order by this `column`, as the console does: "+sortNames()+
		"\n(since: oldest first; until: soonest to expire first; resource: then by id);\nties go by resource, id and user")
	asJSON := fs.Bool("json", false, "print a JSON array instead of a table")
	pos, err := parse(c, fs, args)
	if err != nil {
		return err
	}
	if err := checkList(fs, pos, *limit, *sortBy); err != nil {
		return err
	}
	db, locks, closeDB, err := d.open(ctx, offlinelock.Config{}, reads)
	if err != nil {
		return err
	}
	defer closeDB()
	// List orders by key only, so every matching lock is read, then sorted as
	// the console sorts them and cut to --limit; the filters bound memory.
	got, err := locks.List(db, f)
	if err != nil {
		return err
	}
	sortLocks(got, *sortBy)
	if *limit > 0 && len(got) > *limit {
		got = got[:*limit]
		fmt.Fprintf(c.stderr, "offlinelock list: more than %d locks match; these are the first %d (raise --limit, or 0 for all)\n", *limit, *limit)
	}
	return writeLocks(c.stdout, got, *asJSON)
}

// checkList finds list's usage errors before the database is opened.
func checkList(fs *flag.FlagSet, pos []string, limit int, sortBy string) error {
	if len(pos) > 0 {
		return usagef(fs, "list takes no arguments, only flags: got %q", withoutPasswords(pos))
	}
	if limit < 0 {
		return usagef(fs, "--limit %d is negative", limit)
	}
	if _, ok := listSorts[sortBy]; !ok {
		return usagef(fs, "--sort %q is not one of %s", sortBy, sortNames())
	}
	return nil
}

// showCmd prints the live holders of one record.
func showCmd(ctx context.Context, c cli, args []string) error {
	fs := newFlags("show", "RESOURCE ID [flags]", "Prints who holds the record RESOURCE ID (as list shows them): its writer,\nor its readers. Exit code 3 when nobody does.")
	d := addDBFlags(c, fs)
	asJSON := fs.Bool("json", false, "print a JSON array instead of a table")
	pos, err := parse(c, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef(fs, "show needs RESOURCE and ID, got %d arguments", len(pos))
	}
	db, locks, closeDB, err := d.open(ctx, offlinelock.Config{}, reads)
	if err != nil {
		return err
	}
	defer closeDB()
	held, err := locks.List(db, offlinelock.Filter{Resource: pos[0], ID: pos[1]})
	if err != nil {
		return err
	}
	if len(held) == 0 {
		return fmt.Errorf("%s %s: %w", pos[0], pos[1], errNotHeld)
	}
	return writeLocks(c.stdout, held, *asJSON)
}
