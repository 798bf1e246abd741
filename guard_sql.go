package offlinelock

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock/internal/guard"
	"github.com/offlinelock/offlinelock/internal/lockstore"
)

// GuardSQL returns the statements that `offlinelock guard install` (the
// lock table's Migrate, CreateFeatureTables and InstallGuard) would run
// on db now, in order, without running any: for shops whose DBAs run
// migrations (`offlinelock guard install --print-sql`). It reads the
// database (the catalog, what is in place) and changes nothing. Run the
// statements as the tables' owner, in one transaction on PostgreSQL; on
// MySQL/MariaDB they carry routine bodies with semicolons, so run each as
// one statement (the command's output sets a DELIMITER).
//
// Where the lock table does not exist yet there is no catalog, so no
// table is declared: the statements make the lock table, its catalog and
// the feature tables; run GuardSQL again once the application has
// declared its tables. A declared table the guard cannot follow is
// reported as InstallGuard reports it, with the statements of the others.
// The statements carry the guard's key (MySQL/MariaDB's routines carry it
// in their bodies): keep them as private as the lock table. SQLite has no
// guard: nil.
func (p *Plugin) GuardSQL(db *gorm.DB) ([]string, error) {
	db = onPrimary(db)
	t, err := p.storeFor(db)
	if err != nil || t.caps.Guard == nil {
		return nil, err // SQLite has no guard, and db.Use makes its lock table
	}
	existed := db.Session(&gorm.Session{NewDB: true}).Migrator().HasTable(p.cfg.Table)
	plan := lockstore.NewPlan(!existed)
	c := direct(p.background(db).WithContext(ctxOf(db))).Planning(plan)
	if err := t.Migrate(c); err != nil {
		return nil, err
	}
	features, err := p.featureSQL(db)
	if err != nil {
		return nil, err
	}
	out := append(plan.Statements(), features...)
	if p.cfg.DisableGuard {
		return out, nil
	}
	before := len(plan.Statements())
	unfollowed, err := guard.SQL(c, t.caps.Guard, func() ([]guard.Table, error) {
		if !existed { // no catalog yet: no table declared
			return nil, nil
		}
		specs, err := t.specs(c)
		return guardTables(specs), err
	})
	if err != nil {
		return nil, err
	}
	return append(out, plan.Statements()[before:]...), unfollowed
}

// featureSQL is the DDL of the feature tables that are missing, as GORM
// would send it (a dry run of its migrator, whose statements a logger
// collects).
func (p *Plugin) featureSQL(db *gorm.DB) ([]string, error) {
	s := p.background(db).WithContext(ctxOf(db))
	var out []string
	for _, f := range featureTables(p.cfg.Table) {
		if s.Migrator().HasTable(f.name) {
			continue
		}
		rec := &sqlRecorder{}
		dry := s.Session(&gorm.Session{DryRun: true, Logger: rec})
		if err := dry.Table(f.name).Migrator().CreateTable(f.model); err != nil {
			return nil, fmt.Errorf("offlinelock: writing the DDL of the table %s: %w", f.name, err)
		}
		out = append(out, rec.stmts...)
	}
	return out, nil
}

// sqlRecorder is a GORM logger that keeps the statements it is told of
// (a dry run's, which GORM traces without sending them).
type sqlRecorder struct{ stmts []string }

func (r *sqlRecorder) LogMode(logger.LogLevel) logger.Interface      { return r }
func (r *sqlRecorder) Info(context.Context, string, ...interface{})  {}
func (r *sqlRecorder) Warn(context.Context, string, ...interface{})  {}
func (r *sqlRecorder) Error(context.Context, string, ...interface{}) {}
func (r *sqlRecorder) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	if q, _ := fc(); q != "" {
		r.stmts = append(r.stmts, q)
	}
}
