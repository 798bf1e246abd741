package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// maxReason bounds --reason, as httplock bounds an admin release's reason.
const maxReason = 1000

// operatorSession is the session the operator acts as, shown in the audit log.
const operatorSession = "offlinelock-cli"

// releaseCmd force-releases every lock on one record, or in bulk a user's
// or a session's, logged with the operator and the reason.
func releaseCmd(ctx context.Context, c cli, args []string) error {
	fs := newFlags("release", "RESOURCE ID --reason TEXT [flags], or --user U | --session S [--older-than D] --reason TEXT",
		"Removes every lock on the record RESOURCE ID, whoever holds it (ForceRelease),\n"+
			"or, with --user or --session, the records that user or session locks (each\n"+
			"only when nobody else shares it: a record also held by others is skipped and\n"+
			"named on stderr), and prints the locks it removed. Each is logged to stderr\n"+
			"with the operator and the reason. Exit code 3 when nobody holds the record.")
	d := addDBFlags(c, fs)
	reason := fs.String("reason", "", "why the locks are taken away, as `TEXT` (required; logged)")
	operator := fs.String("operator", "", "the `NAME` of who releases them, as logged (default $USER)")
	user := fs.String("user", "", "release the locks of this `user` (instead of RESOURCE ID)")
	session := fs.String("session", "", "release the locks of this `session` (instead of RESOURCE ID)")
	olderThan := fs.Duration("older-than", 0, "with --user or --session: only locks acquired more than `D` ago (30m, 2h)")
	asJSON := fs.Bool("json", false, "print the released locks as a JSON array instead of a table")
	pos, err := parse(c, fs, args)
	if err != nil {
		return err
	}
	bulk := *user != "" || *session != ""
	switch {
	case bulk && len(pos) != 0:
		return usagef(fs, "release takes RESOURCE ID or --user/--session, not both")
	case !bulk && len(pos) != 2:
		return usagef(fs, "release needs RESOURCE and ID, got %d arguments", len(pos))
	case *olderThan < 0 || *olderThan > 0 && !bulk:
		return usagef(fs, "--older-than needs --user or --session, and a positive duration")
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
	op := offlinelock.Owner{Session: operatorSession, User: who}
	var released []offlinelock.Lock
	if bulk {
		released, err = bulkRelease(ctx, c, d, op, why, offlinelock.Filter{User: *user, Session: *session}, *olderThan)
	} else {
		released, err = forceRelease(ctx, c, d, op, why, pos[0], pos[1])
	}
	if err != nil {
		return err
	}
	return writeLocks(c.stdout, released, *asJSON)
}

// bulkRelease force-releases the records f selects (older than olderThan),
// each only when every holder is selected; others are named on stderr.
func bulkRelease(ctx context.Context, c cli, d *dbFlags, op offlinelock.Owner, reason string, f offlinelock.Filter, olderThan time.Duration) ([]offlinelock.Lock, error) {
	db, locks, closeDB, released, err := openForRelease(ctx, c, d, reason)
	if err != nil {
		return nil, err
	}
	defer closeDB()
	selected, err := locks.List(db, f)
	if err != nil {
		return nil, err
	}
	cutoff := time.Now().Add(-olderThan)
	type record struct{ resource, id string }
	chosen := map[record]map[string]bool{} // record → selected sessions
	var order []record
	for _, l := range selected {
		if olderThan > 0 && !l.AcquiredAt.Before(cutoff) {
			continue
		}
		r := record{l.Resource, l.ID}
		if chosen[r] == nil {
			chosen[r] = map[string]bool{}
			order = append(order, r)
		}
		chosen[r][l.Owner.Session] = true
	}
	as := db.WithContext(offlinelock.WithOwner(ctx, op))
	for _, r := range order {
		holders, err := locks.List(db, offlinelock.Filter{Resource: r.resource, ID: r.id})
		if err != nil {
			return *released, err
		}
		if slices.ContainsFunc(holders, func(h offlinelock.Lock) bool { return !chosen[r][h.Owner.Session] }) {
			fmt.Fprintf(c.stderr, "skipped %s %s: other sessions hold it too\n", r.resource, r.id)
			continue
		}
		if err := locks.ForceRelease(as, r.resource, r.id); err != nil && !errors.Is(err, offlinelock.ErrNotLocked) {
			return *released, err
		}
	}
	return *released, nil
}

// forceRelease runs ForceRelease as op and returns the locks it removed.
// Whoever runs the command could delete the rows by hand, so its Authorize
// allows force_release alone and records each holder it approves.
func forceRelease(ctx context.Context, c cli, d *dbFlags, op offlinelock.Owner, reason, resource, id string) ([]offlinelock.Lock, error) {
	db, locks, closeDB, released, err := openForRelease(ctx, c, d, reason)
	if err != nil {
		return nil, err
	}
	defer closeDB()
	err = locks.ForceRelease(db.WithContext(offlinelock.WithOwner(ctx, op)), resource, id)
	if errors.Is(err, offlinelock.ErrNotLocked) {
		return nil, fmt.Errorf("%s %s: %w; nothing released", resource, id, errNotHeld)
	}
	return *released, err
}

// openForRelease opens the database for force releases logged with reason;
// released collects the locks Authorize approves.
func openForRelease(ctx context.Context, c cli, d *dbFlags, reason string) (*gorm.DB, *offlinelock.Plugin, func(), *[]offlinelock.Lock, error) {
	released := &[]offlinelock.Lock{}
	cfg := offlinelock.Config{
		// A release grants nothing, so the role needs the lock table's grants only.
		LeaveGuard: true,
		Logger:     slog.New(slog.NewTextHandler(c.stderr, nil)).With(slog.String("reason", reason)),
		Authorize: func(_ context.Context, action string, l offlinelock.Lock) error {
			if action != "force_release" {
				return fmt.Errorf("the offlinelock command does only force_release, not %s", action)
			}
			// A retried transaction asks again: keep one lock per holder and record.
			*released = slices.DeleteFunc(*released, func(r offlinelock.Lock) bool {
				return r.Owner.Session == l.Owner.Session && r.Resource == l.Resource && r.ID == l.ID
			})
			*released = append(*released, l)
			return nil
		},
	}
	db, locks, closeDB, err := d.open(ctx, cfg, writes)
	return db, locks, closeDB, released, err
}
