package main

import (
	"context"
	"fmt"

	"github.com/offlinelock/offlinelock"
)

// sweepCmd deletes the expired rows once, as the sweeper does.
func sweepCmd(ctx context.Context, c cli, args []string) error {
	fs := newFlags("sweep", "[flags]",
		"Deletes the lock table's expired rows (Plugin.Sweep: in batches, resting between\n"+
			"them) and prints how many. Expired locks are already free; this keeps the table small.")
	d := addDBFlags(c, fs)
	pos, err := parse(c, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "sweep takes no arguments, only flags: got %q", withoutPasswords(pos))
	}
	db, locks, closeDB, err := d.open(ctx, offlinelock.Config{LeaveGuard: true}, writes) // a sweep grants nothing: the guard is left as it is
	if err != nil {
		return err
	}
	defer closeDB()
	n, err := locks.Sweep(db)
	// Rows deleted before an interruption stay deleted: say how many.
	fmt.Fprintf(c.stdout, "deleted %d expired rows\n", n)
	return err
}
