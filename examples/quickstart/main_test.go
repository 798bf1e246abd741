package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// TestQuickStart runs the program the README's Quick start is cut from.
func TestQuickStart(t *testing.T) {
	db, err := gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(filepath.Join(t.TempDir(), "app.db"))), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	var c Customer
	if err := db.First(&c, 129).Error; err != nil || c.Name != "Acme Group" {
		t.Fatalf("after the quick start: %+v, %v", c, err)
	}
}

// TestTheREADMEIsCutFromThisProgram: every line of the README's Quick start
// Go block is a line of main.go, so the snippet cannot drift from a
// program that compiles and runs.
func TestTheREADMEIsCutFromThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, quick, ok := strings.Cut(string(readme), "## Quick start")
	if !ok {
		t.Fatal("README has no Quick start")
	}
	_, block, ok := strings.Cut(quick, "```go\n")
	if !ok {
		t.Fatal("the Quick start has no Go block")
	}
	block, _, _ = strings.Cut(block, "```")
	have := map[string]bool{}
	for _, l := range strings.Split(string(src), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l != "" && !have[l] {
			t.Errorf("README line not in examples/quickstart/main.go: %q", l)
		}
	}
}
