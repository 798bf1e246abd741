package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
)

// usageError is a mistake in the command line: exit code 2, nothing done.
type usageError struct {
	msg string
	fs  *flag.FlagSet // whose usage to print after msg; nil for none
}

func (e *usageError) Error() string { return e.msg }

func usagef(fs *flag.FlagSet, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), fs: fs}
}

// errNotHeld: show's and release's record nobody holds (exit code 3).
var errNotHeld = errors.New("nobody holds a lock on it")

// newFlags is one command's flag set; synopsis follows its name in usage.
func newFlags(name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet("offlinelock "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse errors are reported once, by cli.exit
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: offlinelock %s %s\n\n%s\n\nflags:\n", name, synopsis, about)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args into fs and returns the positional arguments: flags may
// stand anywhere, and everything after "--" is positional.
func parse(c cli, fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(c.stdout)
			fs.Usage()
			return nil, err
		}
		if err != nil {
			return nil, usagef(fs, "%v", err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if ended(fs, args, rest) {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// ended says whether fs.Parse stopped at a "--" (which it drops) that is not
// the value of the flag before it ("--reason --").
func ended(fs *flag.FlagSet, args, rest []string) bool {
	i := len(args) - len(rest) - 1
	if i < 0 || args[i] != "--" {
		return false
	}
	if i == 0 {
		return true
	}
	prev := args[i-1]
	if !strings.HasPrefix(prev, "-") || prev == "--" || strings.Contains(prev, "=") {
		return true
	}
	f := fs.Lookup(strings.TrimLeft(prev, "-"))
	if f == nil {
		return true
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// secrets finds the password in the DSN forms of usage: a URL's or the
// go-sql-driver form's user:PASSWORD@, and libpq's password=PASSWORD.
var secrets = regexp.MustCompile(`(?i)(^[^@\s/]*:|://[^@/\s]*:|\bpassword\s*=\s*)('[^']*'|[^@\s]*)`)

// withoutPasswords is args with DSN passwords hidden, for usage errors.
func withoutPasswords(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if u, err := url.Parse(a); err == nil && u.User != nil {
			a = u.Redacted()
		} else if strings.Contains(a, "@") || strings.Contains(strings.ToLower(a), "password") {
			a = secrets.ReplaceAllString(a, "${1}xxxxx")
		}
		out[i] = a
	}
	return out
}
