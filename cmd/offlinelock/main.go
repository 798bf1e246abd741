package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/offlinelock/offlinelock"
)

// Exit codes, for scripts (doc.go and the usage text list them too).
const (
	exitOK       = 0 // done
	exitFailed   = 1 // the database failed or refused, or the DSN is wrong
	exitUsage    = 2 // bad flags or arguments; nothing was done
	exitNotFound = 3 // show or release of a record nobody holds
	exitUnguard  = 4 // guard status or install: a declared table is not fully guarded
	exitNoTables = 5 // guard status or install: no lockable table is declared yet
)

const usage = `offlinelock inspects and administers the lock table of github.com/offlinelock/offlinelock.

usage:
  offlinelock list    [--resource R] [--id ID] [--user U] [--session S] [--expired] [--sort COLUMN] [--limit N] [--json]
  offlinelock show    RESOURCE ID [--json]
  offlinelock release RESOURCE ID --reason TEXT [--operator NAME] [--json]
  offlinelock release --user U | --session S [--older-than D] --reason TEXT [--operator NAME] [--json]
  offlinelock sweep
  offlinelock stats   [--json]
  offlinelock guard   status|install|remove
  offlinelock help

Every command takes --dsn DSN (default $OFFLINELOCK_DSN) and --table NAME
(default offline_locks). A DSN is one of:
  postgres://… or postgresql://…        PostgreSQL URL
  host=… dbname=… …                      PostgreSQL key=value
  mysql://user:pass@host:port/db?…       MySQL or MariaDB URL
  user:pass@tcp(host:port)/db?…          MySQL or MariaDB (go-sql-driver form)
  sqlite:PATH, file:PATH?… or PATH       an existing SQLite file
The lock table must exist: the command never creates it.

Run "offlinelock COMMAND -h" for a command's flags.

exit codes:
  0  done
  1  the database failed or refused, or the DSN is wrong
  2  bad flags or arguments; nothing was done
  3  show or release of a record nobody holds
  4  guard status or install: a declared table is not fully guarded
  5  guard status or install: no lockable table is declared yet
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// cli is what every command writes to and reads its defaults from.
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

// run runs the command in args and returns its exit code; main and the
// tests call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	cmd, ok := map[string]func(context.Context, cli, []string) error{"list": listCmd, "show": showCmd,
		"release": releaseCmd, "sweep": sweepCmd, "stats": statsCmd, "guard": guardCmd}[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "offlinelock: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	c := cli{stdout: stdout, stderr: stderr, getenv: os.Getenv}
	return c.exit(args[0], cmd(ctx, c, args[1:]))
}

// exit reports err on stderr and returns its exit code.
func (c cli) exit(name string, err error) int {
	var u *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &u):
		fmt.Fprintf(c.stderr, "offlinelock %s: %s\n", name, u.msg)
		if u.fs != nil {
			u.fs.SetOutput(c.stderr)
			u.fs.Usage()
		}
		return exitUsage
	}
	fmt.Fprintf(c.stderr, "offlinelock %s: %v\n", name, err)
	switch {
	case errors.Is(err, errNotHeld):
		return exitNotFound
	case errors.Is(err, errUnguarded) && !errors.Is(err, errNothingDeclared):
		return exitUnguard
	case errors.Is(err, errNothingDeclared):
		return exitNoTables
	case errors.Is(err, offlinelock.ErrInvalid):
		return exitUsage // the library refused an argument; nothing changed
	}
	return exitFailed
}
