package httplock

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/offlinelock/offlinelock"
)

// The endpoints of a page being edited: take over, ask to edit, events.

// SameUserTakeOver is the default Config.TakeOver: a principal may take
// over only its own locks (another tab, a reload, another device).
func SameUserTakeOver(_ *http.Request, principal string, holder offlinelock.Lock) error {
	if holder.Owner.User == principal {
		return nil
	}
	return fmt.Errorf("%s holds this lock; only they may take it over", holder.Owner.User)
}

// takeOver is POST /{resource}/{id}/lock/takeover.
func (s *Server) takeOver(w http.ResponseWriter, r *http.Request, res *resource) error {
	res, target, principal, err := s.liveCheck(r, res, ActionTakeOver)
	if err != nil {
		return err
	}
	var req lockRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := checkReason(req.Reason); err != nil {
		return err
	}
	policy := s.cfg.TakeOver
	if policy == nil {
		policy = SameUserTakeOver
	}
	// The policy judges the holders inside the take-over's transaction: a
	// holder that changed since the page last looked is judged as it is.
	allow := func(h offlinelock.Lock) error {
		if err := policy(r, principal, h); err != nil {
			return forbidden("you may not take over this lock: " + err.Error())
		}
		return nil
	}
	owner := offlinelock.Owner{Session: s.lockSession(r), User: principal}
	ctx := offlinelock.WithTTL(offlinelock.WithOwner(r.Context(), owner), s.cfg.DefaultTTL)
	l, err := s.cfg.Locks.TakeOverIf(s.cfg.DB.WithContext(ctx), target, req.Reason, allow)
	if err != nil {
		return err
	}
	w.Header().Set(LockTokenHeader, l.Token)
	writeJSON(w, http.StatusCreated, s.body(res, l, l.ExpiresAt.Sub(l.AcquiredAt)))
	return nil
}

// request is POST /{resource}/{id}/lock/request: ask the holder to let the
// caller edit; 409 when the caller holds it or nobody does.
func (s *Server) request(w http.ResponseWriter, r *http.Request, res *resource) error {
	_, target, principal, err := s.liveCheck(r, res, ActionRequest)
	if err != nil {
		return err
	}
	holders, err := s.cfg.Locks.Holders(s.cfg.DB.WithContext(r.Context()), target)
	if err != nil {
		return err
	}
	for _, h := range holders {
		if h.Owner.User == principal {
			return conflict("you hold this lock yourself")
		}
	}
	owner := offlinelock.Owner{Session: newSession("http-"), User: principal}
	err = s.cfg.Locks.RequestEdit(s.cfg.DB.WithContext(offlinelock.WithOwner(r.Context(), owner)), target)
	if errors.Is(err, offlinelock.ErrNotLocked) {
		err = conflict("nobody holds this lock: take it")
	}
	if err == nil {
		w.WriteHeader(http.StatusAccepted)
	}
	return err
}

// liveCheck checks what every live endpoint needs: a principal (401), a
// served record (404, 400) and Resource.Allow (403, 404).
func (s *Server) liveCheck(r *http.Request, res *resource, action string) (*resource, any, string, error) {
	principal, err := s.cfg.Principal(r)
	if err != nil || principal == "" {
		return nil, nil, "", offlinelock.ErrNoOwner
	}
	res, target, err := s.target(res, r.PathValue("id"))
	if err == nil {
		var found bool
		if found, err = s.exists(r, res, target); err == nil && !found {
			err = notFound
		}
	}
	if err == nil {
		err = s.allow(r, res, principal, action)
	}
	if err != nil {
		return nil, nil, "", err
	}
	return res, target, principal, nil
}

// eventBody is one lock event as a text/event-stream's data: never a
// token or a session.
type eventBody struct {
	Resource            string     `json:"resource"`
	ID                  string     `json:"id"`
	LockedBy            string     `json:"lockedBy,omitempty"`
	Access              string     `json:"access,omitempty"`
	AcquiredAt          *time.Time `json:"acquiredAt,omitempty"`
	ExpiresAt           *time.Time `json:"expiresAt,omitempty"`
	TTLRemainingSeconds *int64     `json:"ttlRemainingSeconds,omitempty"`
	Generation          int64      `json:"generation,omitempty"`
	// LockedSince and LockedUntil are AcquiredAt and ExpiresAt as a 423
	// problem gives them, so that both say "locked" in one shape.
	LockedSince *time.Time `json:"lockedSince,omitempty"`
	LockedUntil *time.Time `json:"lockedUntil,omitempty"`
	By          string     `json:"by,omitempty"`
	Reason      string     `json:"reason,omitempty"`
	// Viewers are the users who have the record open (a viewers event).
	Viewers *[]viewerBody `json:"viewers,omitempty"`
	At      time.Time     `json:"at"`
}

// viewerBody is one user who has a record open.
type viewerBody struct {
	User  string    `json:"user"`
	Since time.Time `json:"since"`
}

// keepAliveEvery is how often an idle event stream sends a comment, so
// that proxies and load balancers keep it open.
const keepAliveEvery = 15 * time.Second

// signedIn says whether the stream's request is still principal's; a stream
// whose login ended stops, and the reconnect's 401 ends the EventSource.
func (s *Server) signedIn(r *http.Request, principal string) bool {
	now, err := s.cfg.Principal(r)
	return err == nil && now == principal
}

// eventOf is e as stream data: released names no holder; the others name
// it as the LockEvent schema says.
func eventOf(res *resource, e offlinelock.Event) eventBody {
	b := eventBody{Resource: res.Name, ID: e.ID, By: e.By, Reason: e.Reason, At: e.At.UTC()}
	if e.Kind == offlinelock.EventViewers {
		list := make([]viewerBody, len(e.Viewers))
		for i, v := range e.Viewers {
			list[i] = viewerBody{User: v.User, Since: v.Since.UTC()}
		}
		b.Viewers = &list
		return b
	}
	if e.Kind == offlinelock.EventReleased {
		if e.Lock != nil {
			b.Generation = e.Lock.Generation
		}
		return b
	}
	if l := e.Lock; l != nil {
		acquired, expires := l.AcquiredAt.UTC(), l.ExpiresAt.UTC()
		left := int64(math.Round(max(time.Until(l.ExpiresAt), 0).Seconds()))
		b.LockedBy, b.Access, b.Generation = l.Owner.User, string(l.Access), l.Generation
		b.AcquiredAt, b.ExpiresAt, b.TTLRemainingSeconds = &acquired, &expires, &left
		since, until := acquired.Truncate(time.Second), expires.Truncate(time.Second)
		b.LockedSince, b.LockedUntil = &since, &until
	}
	return b
}
