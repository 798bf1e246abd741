package lockstore

import (
	"context"
	"time"
)

// Observer is told what a store does, for the plugin's telemetry. It is
// handed to the store when the store is made, as pgx takes a tracer; the
// store never looks for one. Its methods are called on every statement, so
// they must be cheap and safe for concurrent use.
type Observer interface {
	// StatementStart is called before each statement on the lock table
	// (and each the plugin runs through a Conn); the context it returns is
	// the statement's, and it and started (the observer's own, a span say)
	// reach StatementEnd.
	StatementStart(ctx context.Context, query string) (stmtCtx context.Context, started any)
	// StatementEnd is called when the statement is done: rows it returned
	// or changed, and its error (nil for a refusal it raised on purpose).
	StatementEnd(ctx context.Context, started any, query string, begin time.Time, rows int64, err error)
	// Upgraded is called when a grant upgraded its session's Read lock on
	// a record of resource to Write.
	Upgraded(ctx context.Context, resource string)
	// TakenOver is called when a grant took over a record of resource
	// whose lock had expired.
	TakenOver(ctx context.Context, resource string)
}

// nopObserver is the Observer of a store made without one.
type nopObserver struct{}

func (nopObserver) StatementStart(ctx context.Context, _ string) (context.Context, any) {
	return ctx, nil
}

func (nopObserver) StatementEnd(context.Context, any, string, time.Time, int64, error) {}
func (nopObserver) Upgraded(context.Context, string)                                   {}
func (nopObserver) TakenOver(context.Context, string)                                  {}

// observer is obs, or one that ignores everything.
func observer(obs Observer) Observer {
	if obs == nil {
		return nopObserver{}
	}
	return obs
}
