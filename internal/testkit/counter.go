package testkit

import (
	"context"
	"sync/atomic"
	"time"

	"gorm.io/gorm/logger"
)

// Counter is a GORM logger that counts statements in N; Interface, the
// logger it stands in for, answers everything else.
type Counter struct {
	logger.Interface
	N atomic.Int64
}

// LogMode keeps the counter the logger.
func (c *Counter) LogMode(logger.LogLevel) logger.Interface { return c }

// Trace counts one statement.
func (c *Counter) Trace(_ context.Context, _ time.Time, _ func() (string, int64), _ error) {
	c.N.Add(1)
}
