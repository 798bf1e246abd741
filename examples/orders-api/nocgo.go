//go:build !cgo

package main

// This example runs on SQLite through gorm.io/driver/sqlite, whose driver
// (mattn/go-sqlite3) is C: it needs cgo and a C compiler (gcc). Without
// them the build stops here, with the undefined name below as its message,
// instead of the driver failing at run time.
var _ = SQLite_needs_cgo__build_with_CGO_ENABLED_1_and_a_C_compiler_such_as_gcc
