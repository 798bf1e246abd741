package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/offlinelock/offlinelock"
)

// statsJSON is stats --json.
type statsJSON struct {
	Live         int64       `json:"live"`
	ExpiredRows  int64       `json:"expiredRows"`
	ExpiredLocks int64       `json:"expiredLocks"`
	Oldest       *lockJSON   `json:"oldest"`
	ByResource   []countJSON `json:"byResource"`
	ByUser       []countJSON `json:"byUser"`
}

type countJSON struct {
	Name  string `json:"name"`
	Locks int64  `json:"locks"`
}

// statsCmd prints Plugin.Stats.
func statsCmd(ctx context.Context, c cli, args []string) error {
	fs := newFlags("stats", "[flags]",
		fmt.Sprintf("Prints the live locks by resource and by user (the %d largest of each), the\n"+
			"oldest live lock, the expired locks (as list --expired shows them), and the\n"+
			"expired rows waiting for the sweep (a record's key row too).", offlinelock.StatsGroups))
	d := addDBFlags(c, fs)
	asJSON := fs.Bool("json", false, "print a JSON object instead of text")
	pos, err := parse(c, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "stats takes no arguments, only flags: got %q", withoutPasswords(pos))
	}
	db, locks, closeDB, err := d.open(ctx, offlinelock.Config{}, reads)
	if err != nil {
		return err
	}
	defer closeDB()
	s, err := locks.Stats(db)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c.stdout, statsToJSON(s))
	}
	return writeStats(c.stdout, s)
}

func statsToJSON(s offlinelock.Stats) statsJSON {
	out := statsJSON{Live: s.Live, ExpiredRows: s.ExpiredRows, ExpiredLocks: s.ExpiredLocks, ByResource: counts(s.ByResource), ByUser: counts(s.ByUser)}
	if s.Oldest != nil {
		l := toJSON(*s.Oldest)
		out.Oldest = &l
	}
	return out
}

func counts(cs []offlinelock.Count) []countJSON {
	out := make([]countJSON, 0, len(cs))
	for _, c := range cs {
		out = append(out, countJSON(c))
	}
	return out
}

// writeStats prints s as aligned text: each figure, resource and user.
func writeStats(w io.Writer, s offlinelock.Stats) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "live locks\t%d\n", s.Live)
	fmt.Fprintf(tw, "expired locks\t%d\n", s.ExpiredLocks) // as list --expired shows them
	fmt.Fprintf(tw, "expired rows\t%d\n", s.ExpiredRows)
	if l := s.Oldest; l != nil {
		fmt.Fprintf(tw, "oldest lock\t%s %s %s by %s (session %s) since %s until %s\n", cell(l.Resource), cell(l.ID),
			l.Access, cell(l.Owner.User), cell(l.Owner.Session), tableTime(l.AcquiredAt), tableTime(l.ExpiresAt))
	} else {
		fmt.Fprintln(tw, "oldest lock\tnone")
	}
	for _, g := range []struct {
		title string
		cs    []offlinelock.Count
	}{{"by resource", s.ByResource}, {"by user", s.ByUser}} {
		title := g.title
		for _, c := range g.cs {
			fmt.Fprintf(tw, "%s\t%s\t%d\n", title, cell(c.Name), c.Locks)
			title = ""
		}
	}
	return tw.Flush()
}
