package lockstore

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// The driver's error type is read by reflection (mysql_errors.go); these
// hold it to the spelling the store reads, through every way an error
// reaches the store wrapped.
func TestMySQLErrorsAreReadWithoutTheDriver(t *testing.T) {
	me := &mysql.MySQLError{Number: 1213, SQLState: [5]byte{'O', 'L', '4', '2', '3'}, Message: "offlinelock: orders 7 is locked by martin"}
	for _, c := range []struct {
		name string
		err  error
		want mysqlErr
		ok   bool
	}{
		{"bare", me, mysqlErr{1213, "OL423", me.Message}, true},
		{"wrapped", fmt.Errorf("saving: %w", me), mysqlErr{1213, "OL423", me.Message}, true},
		{"joined", fmt.Errorf("%w; %w", fmt.Errorf("other"), me), mysqlErr{1213, "OL423", me.Message}, true},
		{"twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", me)), mysqlErr{1213, "OL423", me.Message}, true},
		{"none", fmt.Errorf("plain"), mysqlErr{}, false},
		{"nil", nil, mysqlErr{}, false},
		{"nil pointer", (*mysql.MySQLError)(nil), mysqlErr{}, false},
	} {
		got, ok := mysqlErrorOf(c.err)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: mysqlErrorOf = %+v, %v; want %+v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
	if mysqlCode(fmt.Errorf("x: %w", &mysql.MySQLError{Number: 1146})) != 1146 {
		t.Error("mysqlCode misses a wrapped error")
	}
}

// A program that imports the plugin for PostgreSQL or SQLite does not link
// the MySQL driver, whose init registers "mysql" with database/sql.
func TestPluginDoesNotLinkTheMySQLDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/offlinelock/offlinelock", "gorm.io/driver/postgres").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == mysqlErrorPkg || dep == "gorm.io/driver/mysql" {
			t.Errorf("the plugin links %s", dep)
		}
	}
}
