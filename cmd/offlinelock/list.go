package main

import (
	"context"
	"fmt"
	"math"

	"github.com/offlinelock/offlinelock"
)

// defaultLimit caps list's output unless --limit says otherwise.
const defaultLimit = 1000

// listCmd prints the locks that match the filter flags.
func listCmd(ctx context.Context, c cli, args []string) error {
	fs := newFlags("list", "[flags]", "Prints the live locks (or, with --expired, the expired ones not swept yet)\nthat match every filter given, by resource, id and holder. Never tokens.")
	d := addDBFlags(c, fs)
	var f offlinelock.Filter
	fs.StringVar(&f.Resource, "resource", "", "only locks on this `resource` (the locked table, or its aggregate root's)")
	fs.StringVar(&f.ID, "id", "", "only locks on the record with this `id` (its primary key as text)")
	fs.StringVar(&f.User, "user", "", "only locks of this `user`")
	fs.StringVar(&f.Session, "session", "", "only locks of this `session`")
	fs.BoolVar(&f.Expired, "expired", false, "the expired locks the sweep has not removed yet, instead of the live ones")
	fs.IntVar(&f.Limit, "limit", defaultLimit, "at most `n` locks; 0 for all")
	asJSON := fs.Bool("json", false, "print a JSON array instead of a table")
	pos, err := parse(c, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "list takes no arguments, only flags: got %q", withoutPasswords(pos))
	}
	if f.Limit < 0 {
		return usagef(fs, "--limit %d is negative", f.Limit)
	}
	db, locks, closeDB, err := d.open(ctx, offlinelock.Config{}, reads)
	if err != nil {
		return err
	}
	defer closeDB()
	limit := f.Limit
	if limit > 0 && limit < math.MaxInt { // at MaxInt one more would wrap around
		f.Limit++ // one more, to tell whether there are more
	}
	got, err := locks.List(db, f)
	if err != nil {
		return err
	}
	if limit > 0 && len(got) > limit {
		got = got[:limit]
		fmt.Fprintf(c.stderr, "offlinelock list: more than %d locks match; these are the first %d (raise --limit, or 0 for all)\n", limit, limit)
	}
	return writeLocks(c.stdout, got, *asJSON)
}

// showCmd prints the live holders of one record: its writer, or its
// readers.
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
