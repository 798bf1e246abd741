package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/offlinelock/offlinelock"
)

// maxReason bounds --reason, as httplock bounds an admin release's reason.
const maxReason = 1000

// operatorSession is the session the operator acts as: it holds no locks,
// and the audit log shows where the release came from.
const operatorSession = "offlinelock-cli"

// releaseCmd force-releases every lock on one record, as
// Plugin.ForceRelease does, logged with the operator and the reason.
func releaseCmd(ctx context.Context, c cli, args []string) error {
	fs := newFlags("release", "RESOURCE ID --reason TEXT [flags]",
		"Removes every lock on the record RESOURCE ID, whoever holds it (ForceRelease),\n"+
			"and prints the locks it removed. Each is logged to stderr with the operator\n"+
			"and the reason. Exit code 3 when nobody holds the record.")
	d := addDBFlags(c, fs)
	reason := fs.String("reason", "", "why the locks are taken away, as `TEXT` (required; logged)")
	operator := fs.String("operator", "", "the `NAME` of who releases them, as logged (default $USER)")
	asJSON := fs.Bool("json", false, "print the released locks as a JSON array instead of a table")
	pos, err := parse(c, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef(fs, "release needs RESOURCE and ID, got %d arguments", len(pos))
	}
	why := strings.TrimSpace(*reason)
	if why == "" || len(why) > maxReason {
		return usagef(fs, "release needs --reason, at most %d bytes: it is logged with the release", maxReason)
	}
	who := *operator
	if who == "" {
		who = c.getenv("USER")
	}
	if who == "" {
		return usagef(fs, "release needs --operator NAME ($USER is not set)")
	}
	released, err := forceRelease(ctx, c, d, offlinelock.Owner{Session: operatorSession, User: who}, why, pos[0], pos[1])
	if err != nil {
		return err
	}
	return writeLocks(c.stdout, released, *asJSON)
}

// forceRelease runs ForceRelease as op and returns the locks it removed.
//
// The command runs as an admin: whoever runs it reaches the database with
// its credentials, and could delete the rows by hand. So its Authorize
// allows force_release (and nothing else), and records each holder it
// approves; the plugin's audit log line carries the reason.
func forceRelease(ctx context.Context, c cli, d *dbFlags, op offlinelock.Owner, reason, resource, id string) ([]offlinelock.Lock, error) {
	var released []offlinelock.Lock
	cfg := offlinelock.Config{
		Logger: slog.New(slog.NewTextHandler(c.stderr, nil)).With(slog.String("reason", reason)),
		Authorize: func(_ context.Context, action string, l offlinelock.Lock) error {
			if action != "force_release" {
				return fmt.Errorf("the offlinelock command does only force_release, not %s", action)
			}
			// A retried transaction asks again: keep one lock per holder.
			released = slices.DeleteFunc(released, func(r offlinelock.Lock) bool { return r.Owner.Session == l.Owner.Session })
			released = append(released, l)
			return nil
		},
	}
	db, locks, closeDB, err := d.open(ctx, cfg, writes)
	if err != nil {
		return nil, err
	}
	defer closeDB()
	err = locks.ForceRelease(db.WithContext(offlinelock.WithOwner(ctx, op)), resource, id)
	if errors.Is(err, offlinelock.ErrNotLocked) {
		return nil, fmt.Errorf("%s %s: %w; nothing released", resource, id, errNotHeld)
	}
	return released, err
}
