package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/offlinelock/offlinelock"
)

// lockJSON is a lock in --json output, never with a token.
type lockJSON struct {
	Resource   string `json:"resource"`
	ID         string `json:"id"`
	Access     string `json:"access"`
	User       string `json:"user"`
	Session    string `json:"session"`
	Generation int64  `json:"generation"`
	AcquiredAt string `json:"acquiredAt"`
	ExpiresAt  string `json:"expiresAt"`
	Reason     string `json:"reason"`
}

func toJSON(l offlinelock.Lock) lockJSON {
	return lockJSON{
		Resource: l.Resource, ID: l.ID, Access: string(l.Access), User: l.Owner.User, Session: l.Owner.Session,
		Generation: l.Generation, AcquiredAt: jsonTime(l.AcquiredAt), ExpiresAt: jsonTime(l.ExpiresAt), Reason: l.Reason,
	}
}

// jsonTime is RFC 3339 in UTC with the database's fractions of a second.
func jsonTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// tableTime is RFC 3339 in UTC to the second.
func tableTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeLocks prints locks as a JSON array or an aligned table with a header.
func writeLocks(w io.Writer, locks []offlinelock.Lock, asJSON bool) error {
	if asJSON {
		out := make([]lockJSON, 0, len(locks))
		for _, l := range locks {
			out = append(out, toJSON(l))
		}
		return writeJSON(w, out)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE\tID\tACCESS\tUSER\tSESSION\tGENERATION\tACQUIRED\tEXPIRES\tREASON")
	for _, l := range locks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", cell(l.Resource), cell(l.ID), l.Access,
			cell(l.Owner.User), cell(l.Owner.Session), l.Generation, tableTime(l.AcquiredAt), tableTime(l.ExpiresAt), cell(l.Reason))
	}
	return tw.Flush()
}

// cell is s as a table cell, Go-quoted when empty or holding spaces, quotes
// or control characters: same columns, no terminal escapes.
func cell(s string) string {
	odd := func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) || r == '"' }
	if s == "" || strings.ContainsFunc(s, odd) {
		return strconv.Quote(s)
	}
	return s
}
