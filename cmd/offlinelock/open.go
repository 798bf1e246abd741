package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

// connectTimeout bounds connecting, so a host that does not answer fails.
const connectTimeout = 15 * time.Second

// dbFlags are the flags every command takes to reach the lock table.
type dbFlags struct {
	dsn, table string
	getenv     func(string) string
}

func addDBFlags(c cli, fs *flag.FlagSet) *dbFlags {
	d := &dbFlags{getenv: c.getenv}
	// The default is read when the command runs: a DSN may carry a password.
	fs.StringVar(&d.dsn, "dsn", "", "the database's `DSN` (default $OFFLINELOCK_DSN); see offlinelock help")
	fs.StringVar(&d.table, "table", offlinelock.DefaultTable, "the lock table's `name`, as in offlinelock.Config.Table")
	return d
}

// access is what a command does to the lock table.
type access int

const (
	// reads: list, show and stats only SELECT; no plugin registered (its DDL
	// needs more than a reading role).
	reads access = iota
	// writes: release and sweep register the plugin as the application does.
	writes
	// plans: guard install opens without registering, lock table or not, and
	// checks privileges first (checkThenRegister).
	plans
)

// open connects, checks the lock table is there and makes a plugin on it
// with cfg (registered for writes); closeDB closes the connections.
func (d *dbFlags) open(ctx context.Context, cfg offlinelock.Config, a access) (db *gorm.DB, locks *offlinelock.Plugin, closeDB func(), err error) {
	dsn := d.dsn
	if dsn == "" {
		dsn = d.getenv("OFFLINELOCK_DSN")
	}
	if dsn == "" {
		return nil, nil, nil, usagef(nil, "no database: pass --dsn or set OFFLINELOCK_DSN")
	}
	dial, server, err := dialectorFor(dsn)
	if err != nil {
		return nil, nil, nil, err
	}
	db, err = connect(ctx, dial, server)
	if err != nil {
		return nil, nil, nil, err
	}
	sqlDB, _ := db.DB()
	if locks, err = d.plugin(db, server, cfg, a); err != nil {
		sqlDB.Close()
		return nil, nil, nil, err
	}
	return db, locks, func() { sqlDB.Close() }, nil
}

// plugin makes a plugin with cfg on d.table, registered for writes.
func (d *dbFlags) plugin(db *gorm.DB, server string, cfg offlinelock.Config, a access) (*offlinelock.Plugin, error) {
	// db.Use would create a missing lock table: a mistyped --table would then
	// show an empty one instead of an error.
	if a != plans && !db.Migrator().HasTable(d.table) {
		return nil, fmt.Errorf("no lock table %q in this %s database: check --dsn and --table (the command never creates one), and that this role has privileges on it (a role without them does not see it); `offlinelock guard install`, run as the tables' owner, creates it", d.table, server)
	}
	cfg.Table = d.table
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	locks := offlinelock.New(cfg)
	if a == reads || a == plans {
		return locks, nil // a bad --table is reported by the first call
	}
	if err := db.Use(locks); err != nil {
		return nil, fmt.Errorf("opening lock table %q: %w", d.table, err)
	}
	return locks, nil
}

// connect opens dial and checks that the server answers.
func connect(ctx context.Context, dial gorm.Dialector, server string) (*gorm.DB, error) {
	db, err := gorm.Open(dial, &gorm.Config{Logger: logger.Discard, DisableAutomaticPing: true})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", server, err)
	}
	sqlDB, err := db.DB()
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, connectTimeout)
		err = sqlDB.PingContext(pctx)
		cancel()
		if err != nil {
			sqlDB.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", server, err)
	}
	return db.WithContext(ctx), nil
}

// keyValue is the start of a libpq key=value connection string.
var keyValue = regexp.MustCompile(`^\s*[A-Za-z_]+\s*=`)

// dialectorFor picks the driver by the DSN's form and names the server.
func dialectorFor(dsn string) (gorm.Dialector, string, error) {
	lower := strings.ToLower(dsn)
	switch {
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"), keyValue.MatchString(dsn):
		return postgres.Open(dsn), "PostgreSQL", nil
	case strings.HasPrefix(lower, "mysql://"):
		cfg, err := mysqlURL(dsn)
		if err != nil {
			return nil, "", err
		}
		return mysqlDialector(cfg)
	case strings.Contains(dsn, "@tcp("), strings.Contains(dsn, "@unix("),
		strings.HasPrefix(dsn, "tcp("), strings.HasPrefix(dsn, "unix("):
		cfg, err := mysqldriver.ParseDSN(dsn)
		if err != nil {
			return nil, "", fmt.Errorf("reading the MySQL DSN: %w", err)
		}
		return mysqlDialector(cfg)
	case strings.HasPrefix(lower, "sqlite:"), strings.HasPrefix(lower, "file:"), !strings.Contains(dsn, "://"):
		return sqliteDialector(dsn)
	}
	scheme, _, _ := strings.Cut(dsn, "://")
	return nil, "", fmt.Errorf("unsupported DSN scheme %q: use postgres://, postgresql://, mysql://, or a sqlite: or file: prefix", scheme)
}

// mysqlURL reads mysql://user:pass@host:port/db?params.
func mysqlURL(dsn string) (*mysqldriver.Config, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		// url.Parse's message quotes the password: keep only what is wrong.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("reading the MySQL URL: %w", err)
	}
	host := u.Host
	if host == "" {
		host = "127.0.0.1"
	}
	if u.Port() == "" {
		host += ":3306"
	}
	cfg, err := mysqldriver.ParseDSN("tcp(" + host + ")" + u.EscapedPath() + "?" + u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("reading the MySQL URL: %w", err)
	}
	cfg.DBName, _ = url.PathUnescape(strings.TrimPrefix(u.EscapedPath(), "/"))
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	return cfg, nil
}

// mysqlDialector opens cfg as the MySQL store needs (parseTime, UTC) with a
// connect timeout.
func mysqlDialector(cfg *mysqldriver.Config) (gorm.Dialector, string, error) {
	if cfg.DBName == "" {
		return nil, "", errors.New("the MySQL DSN names no database (…/DBNAME)")
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	if cfg.Timeout == 0 {
		cfg.Timeout = connectTimeout
	}
	return mysql.Open(cfg.FormatDSN()), "MySQL/MariaDB", nil
}

// sqliteDialector opens an existing SQLite file with offlinelock.SQLiteDSN's
// settings, or a file: URI with a query as it is.
func sqliteDialector(dsn string) (gorm.Dialector, string, error) {
	path, query, uri := dsn, "", false
	switch lower := strings.ToLower(dsn); {
	case strings.HasPrefix(lower, "sqlite:"):
		path = strings.TrimPrefix(dsn[len("sqlite:"):], "//")
	case strings.HasPrefix(lower, "file:"):
		path, query, _ = strings.Cut(dsn[len("file:"):], "?")
		path, uri = strings.TrimPrefix(path, "//"), true
		if p, err := url.PathUnescape(path); err == nil {
			path = p
		}
	}
	// SQLite would create a missing file.
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		return nil, "", fmt.Errorf("no SQLite database at %q", path)
	}
	if uri && query != "" {
		return sqlite.Open(dsn), "SQLite", nil
	}
	return sqlite.Open(offlinelock.SQLiteDSN(path)), "SQLite", nil
}
