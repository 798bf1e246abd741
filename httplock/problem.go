package httplock

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// ProblemBase prefixes the type URI of every problem this package writes.
const ProblemBase = "https://github.com/offlinelock/offlinelock/blob/main/httplock/README.md#"

// Problem is an RFC 9457 problem detail, with the lock's holder and expiry
// when the problem is a lock held by someone else.
type Problem struct {
	Type        string     `json:"type"`
	Title       string     `json:"title"`
	Status      int        `json:"status"`
	Detail      string     `json:"detail"`
	LockedBy    string     `json:"lockedBy,omitempty"`
	LockedUntil *time.Time `json:"lockedUntil,omitempty"`
	// LockedSince is when the holder took the lock.
	LockedSince *time.Time `json:"lockedSince,omitempty"`
	// LockedByYou: the holder is the caller's own principal, in another
	// tab, client or session. It may take the lock over
	// (POST …/lock/takeover) to resume here.
	LockedByYou bool `json:"lockedByYou,omitempty"`
	// Generation is the holder's lock's generation, as lock events carry
	// it: a page can tell a later lock from the one it was refused by.
	Generation int64 `json:"generation,omitempty"`
}

// requestError is an error this package made, with its status and a detail
// that is safe to show.
type requestError struct {
	status int
	kind   string
	detail string
}

func (e *requestError) Error() string { return e.detail }

var (
	errUnknownResource = &requestError{http.StatusNotFound, "not-found", "there is no such resource"}
	notFound           = &requestError{http.StatusNotFound, "not-found", "there is no such record"}
	notFoundLock       = &requestError{http.StatusNotFound, "not-locked", "nobody holds a lock on this record"}
)

func badRequest(format string, args ...any) error {
	return &requestError{http.StatusBadRequest, "bad-request", fmt.Sprintf(format, args...)}
}

// lockRequired is the 423 of a write whose Lock-Token is no lock of the
// caller's on the record: detail says why.
func lockRequired(detail string) error {
	return &requestError{http.StatusLocked, "lock-required", detail + ": POST …/lock, then send its Lock-Token header"}
}

func conflict(detail string) error {
	return &requestError{http.StatusConflict, "conflict", detail}
}

func forbidden(detail string) error {
	return &requestError{http.StatusForbidden, "forbidden", detail}
}

// WriteError turns an error from the plugin, GORM or this package into an
// application/problem+json response: ErrLocked is 423 with who holds the
// lock and until when, ErrNotLocked 423 saying a lock is needed first,
// ErrNoOwner 401, bad input 400, ErrForbidden 403, a missing record 404,
// ErrTooManyRequests 429 with Retry-After.
// Anything else is a 500 whose text is logged, never sent.
func (s *Server) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	p := Problem{Status: http.StatusInternalServerError, Type: ProblemBase + "internal", Title: "Internal Server Error",
		Detail: "the server could not complete the request"}
	var re *requestError
	var le *offlinelock.LockedError
	switch {
	case errors.As(err, &le):
		p.Status, p.Type, p.Title = http.StatusLocked, ProblemBase+"locked", "Locked"
		p.Detail = fmt.Sprintf("%s is locked", s.name(le.Resource, le.ID))
		if len(le.Holders) > 0 {
			h := le.Holders[0]
			until := h.ExpiresAt.UTC().Truncate(time.Second)
			since := h.AcquiredAt.UTC().Truncate(time.Second)
			p.LockedBy, p.LockedUntil, p.LockedSince, p.Generation = h.Owner.User, &until, &since, h.Generation
			by, resume := h.Owner.User, ""
			if principal, err := s.cfg.Principal(r); err == nil && principal != "" && principal == h.Owner.User {
				// The same person in another session: refused, but told so.
				by, p.LockedByYou = "you ("+principal+") in another session", true
				resume = fmt.Sprintf(": you are editing this in another tab since %s (UTC); to edit here instead, take it over (POST …/lock/takeover)",
					since.Format("15:04"))
			}
			p.Detail = fmt.Sprintf("%s is locked by %s until %s%s", s.name(le.Resource, le.ID), by, until.Format(time.RFC3339), resume)
		}
	case errors.Is(err, offlinelock.ErrBeingWritten): // an open write of the record: no holder to name
		p.Status, p.Type, p.Title = http.StatusLocked, ProblemBase+"locked", "Locked"
		p.Detail = "this record is being written by another transaction; try again in a moment"
		w.Header().Set("Retry-After", "1")
	case errors.As(err, &re):
		p.Status, p.Type, p.Title, p.Detail = re.status, ProblemBase+re.kind, http.StatusText(re.status), re.detail
	case errors.Is(err, offlinelock.ErrNotLocked):
		p.Status, p.Type, p.Title = http.StatusLocked, ProblemBase+"lock-required", "Locked"
		p.Detail = "this record must be locked before it is changed: POST …/lock, then send the Lock-Token header"
	case errors.Is(err, offlinelock.ErrNoOwner):
		p.Status, p.Type, p.Title, p.Detail = http.StatusUnauthorized, ProblemBase+"unauthorized", "Unauthorized", "the request does not say who sends it"
	case errors.Is(err, offlinelock.ErrTooManyRequests):
		p.Status, p.Type, p.Title = http.StatusTooManyRequests, ProblemBase+"too-many-requests", "Too Many Requests"
		p.Detail = fmt.Sprintf("you have asked to edit %d records in the last minute; ask again in a minute", offlinelock.RequestsPerMinute)
		w.Header().Set("Retry-After", "60")
	case errors.Is(err, offlinelock.ErrForbidden):
		p.Status, p.Type, p.Title, p.Detail = http.StatusForbidden, ProblemBase+"forbidden", "Forbidden", "you may not do this"
	case errors.Is(err, offlinelock.ErrInvalid):
		p.Status, p.Type, p.Title, p.Detail = http.StatusBadRequest, ProblemBase+"bad-request", "Bad Request", "the request is not valid"
	case errors.Is(err, offlinelock.ErrUnguarded):
		// No guard, no grant: an operator's matter, named in the log.
		p.Status, p.Type, p.Title = http.StatusServiceUnavailable, ProblemBase+"unguarded", "Service Unavailable"
		p.Detail = "this record cannot be locked now: the database does not enforce its lock yet; an operator has been told"
		s.cfg.Logger.ErrorContext(r.Context(), "httplock: a lock was refused: the database guard does not cover the record", slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	case errors.Is(err, gorm.ErrRecordNotFound):
		p.Status, p.Type, p.Title, p.Detail = http.StatusNotFound, ProblemBase+"not-found", "Not Found", "there is no such record"
	default:
		s.cfg.Logger.ErrorContext(r.Context(), "httplock: internal error", slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	json.NewEncoder(w).Encode(p)
}

// internal says whether WriteError answers err with a 500: an error that
// is none of the plugin's, GORM's or this package's known ones.
func internal(err error) bool {
	var re *requestError
	var le *offlinelock.LockedError
	return !errors.As(err, &re) && !errors.As(err, &le) &&
		!errors.Is(err, offlinelock.ErrNotLocked) && !errors.Is(err, offlinelock.ErrNoOwner) &&
		!errors.Is(err, offlinelock.ErrTooManyRequests) && !errors.Is(err, offlinelock.ErrForbidden) &&
		!errors.Is(err, offlinelock.ErrInvalid) && !errors.Is(err, gorm.ErrRecordNotFound)
}

// name is how a message names a record: "order 'ord_99182'".
func (s *Server) name(table, id string) string {
	for _, res := range s.resources {
		if res.table == table {
			return fmt.Sprintf("%s '%s'", res.Singular, id)
		}
	}
	return fmt.Sprintf("%s '%s'", table, id)
}

func isNotLocked(err error) bool { return errors.Is(err, offlinelock.ErrNotLocked) }
