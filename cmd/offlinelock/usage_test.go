package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUsageErrorsExit2AndTouchNothing: every mistake in the command line
// is found before the database is opened (the DSN here does not exist).
func TestUsageErrorsExit2AndTouchNothing(t *testing.T) {
	t.Setenv("USER", "")
	missing := filepath.Join(t.TempDir(), "never.db")
	on := []string{"--dsn", missing}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"frobnicate"}, `offlinelock: unknown command "frobnicate"`},
		{[]string{"list", "orders"}, `offlinelock list: list takes no arguments, only flags: got ["orders"]`},
		{[]string{"list", "--limit", "-1"}, "offlinelock list: --limit -1 is negative"},
		{[]string{"list", "--limit", "many"}, `offlinelock list: invalid value "many" for flag -limit`},
		{[]string{"list", "--nosuch"}, "offlinelock list: flag provided but not defined: -nosuch"},
		{[]string{"list", "--sort", "age"}, `offlinelock list: --sort "age" is not one of resource, since, until, user`},
		{[]string{"list", "--sort="}, `offlinelock list: --sort "" is not one of resource, since, until, user`},
		{[]string{"list", "--sort", "Since"}, `offlinelock list: --sort "Since" is not one of resource, since, until, user`},
		{[]string{"show", "customers"}, "offlinelock show: show needs RESOURCE and ID, got 1 arguments"},
		{[]string{"show", "customers", "1", "2"}, "offlinelock show: show needs RESOURCE and ID, got 3 arguments"},
		{[]string{"release", "customers", "1"}, "offlinelock release: release needs --reason"},
		{[]string{"release", "customers", "1", "--reason", " \t"}, "offlinelock release: release needs --reason"},
		{[]string{"release", "customers", "1", "--reason", strings.Repeat("x", 1001)}, "offlinelock release: release needs --reason, at most 1000 bytes"},
		{[]string{"release", "customers", "1", "--reason", "x"}, "offlinelock release: release needs --operator NAME ($USER is not set)"},
		{[]string{"release", "--reason", "x", "--operator", "ops"}, "offlinelock release: release needs RESOURCE and ID, got 0 arguments"},
		{[]string{"sweep", "now"}, `offlinelock sweep: sweep takes no arguments, only flags: got ["now"]`},
		{[]string{"stats", "--json=maybe"}, `offlinelock stats: invalid boolean value "maybe" for -json`},
		{[]string{"guard", "status", "--print-sql"}, "offlinelock guard: --print-sql goes with guard install only"},
		{[]string{"guard", "remove", "--print-sql"}, "offlinelock guard: --print-sql goes with guard install only"},
	} {
		r := cmd(append(c.args, on...)...)
		assert.Equal(t, exitUsage, r.code, "%q", c.args)
		assert.True(t, strings.HasPrefix(r.stderr, c.msg), "%q: stderr starts with %q:\n%s", c.args, c.msg, r.stderr)
		assert.Contains(t, r.stderr, "usage:", "%q: the usage follows", c.args)
		assert.Empty(t, r.stdout, "%q", c.args)
	}
	_, err := os.Stat(missing)
	assert.True(t, os.IsNotExist(err), "no database was created")

	r := cmd()
	assert.Equal(t, exitUsage, r.code)
	assert.Equal(t, usage, r.stderr)

	t.Setenv("OFFLINELOCK_DSN", "")
	r = cmd("list")
	assert.Equal(t, result{exitUsage, "", "offlinelock list: no database: pass --dsn or set OFFLINELOCK_DSN\n"}, r)
}

func TestHelpGoesToStdoutAndExits0(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		assert.Equal(t, result{exitOK, usage, ""}, cmd(args...), "%q", args)
	}
	assert.Contains(t, usage, "exit codes:\n  0  done\n  1  the database failed or refused, or the DSN is wrong\n  2  bad flags or arguments; nothing was done\n  3  show or release of a record nobody holds\n")
	for _, name := range []string{"list", "show", "release", "sweep", "stats"} {
		r := cmd(name, "-h")
		assert.Equal(t, exitOK, r.code, name)
		assert.True(t, strings.HasPrefix(r.stdout, "usage: offlinelock "+name+" "), "%s:\n%s", name, r.stdout)
		assert.Contains(t, r.stdout, "-dsn DSN")
		assert.Empty(t, r.stderr, name)
	}
}

func TestFlagsAroundAndBetweenArguments(t *testing.T) {
	for _, c := range []struct {
		args   []string
		pos    []string
		reason string
		json   bool
	}{
		{[]string{"orders", "7", "--reason", "r"}, []string{"orders", "7"}, "r", false},
		{[]string{"--json", "orders", "--reason=r", "7"}, []string{"orders", "7"}, "r", true},
		{[]string{"orders", "--", "-7"}, []string{"orders", "-7"}, "", false},
		{[]string{"--reason", "--", "orders", "7"}, []string{"orders", "7"}, "--", false},
		{[]string{"--json", "--", "--reason", "7"}, []string{"--reason", "7"}, "", true},
		{[]string{"orders", "--json", "--", "-7", "--json"}, []string{"orders", "-7", "--json"}, "", true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		reason := fs.String("reason", "", "")
		asJSON := fs.Bool("json", false, "")
		pos, err := parse(cli{}, fs, c.args)
		require.NoError(t, err, "%q", c.args)
		assert.Equal(t, c.pos, pos, "%q", c.args)
		assert.Equal(t, c.reason, *reason, "%q", c.args)
		assert.Equal(t, c.json, *asJSON, "%q", c.args)
	}
}
