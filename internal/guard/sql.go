package guard

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// SQL sends an install's statements to c, a planning connection
// (lockstore.NewPlan). err stops everything; unfollowed joins the failures
// of tables the guard cannot follow, whose statements are left out.
func SQL(c lockstore.Conn, g lockstore.Guard, tables func() ([]model.Spec, error)) (unfollowed, err error) {
	if err := g.InstallGuardRoutine(c); errors.Is(err, lockstore.ErrGuardProtocol) {
		return nil, err // names the upgrade: no install is the way out
	} else if err != nil {
		return nil, installError("the guard routine", err)
	}
	ts, err := tables()
	if err != nil {
		return nil, err
	}
	fails := map[string]Failure{}
	plans, err := Plan(c, g, ts, fails)
	if err != nil {
		return nil, err
	}
	for _, p := range plans {
		if err := g.GuardTable(c, p); err != nil && !lockstore.IsMissingTable(err) {
			return nil, installError("table "+p.Table, err)
		}
	}
	for _, table := range slices.Sorted(maps.Keys(fails)) {
		unfollowed = errors.Join(unfollowed, fails[table].Err)
	}
	return unfollowed, nil
}

// CreateSQL is the DDL that GORM's migrator on s would send to create
// table for model, recorded by a dry run, not sent.
func CreateSQL(s *gorm.DB, table string, model any) ([]string, error) {
	rec := &recorder{}
	if err := s.Session(&gorm.Session{DryRun: true, Logger: rec}).Table(table).Migrator().CreateTable(model); err != nil {
		return nil, fmt.Errorf("offlinelock: writing the DDL of the table %s: %w", table, err)
	}
	return rec.stmts, nil
}

// recorder is a GORM logger that keeps the statements it is told of (a
// dry run's, which GORM traces without sending them).
type recorder struct{ stmts []string }

func (r *recorder) LogMode(logger.LogLevel) logger.Interface      { return r }
func (r *recorder) Info(context.Context, string, ...interface{})  {}
func (r *recorder) Warn(context.Context, string, ...interface{})  {}
func (r *recorder) Error(context.Context, string, ...interface{}) {}
func (r *recorder) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	if q, _ := fc(); q != "" {
		r.stmts = append(r.stmts, q)
	}
}
