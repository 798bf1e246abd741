package httplock

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"reflect"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock"
)

// LockTokenHeader carries a lock's token: in the response that grants it,
// and in every request that uses it. Never in a body or a URL.
const LockTokenHeader = "Lock-Token"

type lockRequest struct {
	TTLSeconds *int64 `json:"ttlSeconds"`
	Reason     string `json:"reason"`
}

// lockBody is a lock as the holder sees it, token included.
type lockBody struct {
	Resource            string     `json:"resource"`
	ID                  string     `json:"id"`
	LockToken           string     `json:"lockToken,omitempty"`
	LockedBy            string     `json:"lockedBy"`
	Access              string     `json:"access"`
	Reason              string     `json:"reason,omitempty"`
	AcquiredAt          time.Time  `json:"acquiredAt"`
	ExpiresAt           time.Time  `json:"expiresAt"`
	TTLRemainingSeconds int64      `json:"ttlRemainingSeconds"`
	Generation          int64      `json:"generation"`
	Holders             []lockBody `json:"holders,omitempty"`
	// idName is Resource.IDName: the id is also sent under this name.
	idName string
}

// isLockBodyName tells whether name is one of lockBody's JSON names (and so
// may not be a Resource.IDName).
func isLockBodyName(name string) bool {
	t := reflect.TypeFor[lockBody]()
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if tag != "" && tag == name {
			return true
		}
	}
	return false
}

// MarshalJSON writes the lock, with the id also under Resource.IDName
// (first, as the seed's lock response has its "orderId").
func (b lockBody) MarshalJSON() ([]byte, error) {
	type plain lockBody
	out, err := json.Marshal(plain(b))
	if err != nil || b.idName == "" {
		return out, err
	}
	name, _ := json.Marshal(b.idName)
	id, _ := json.Marshal(b.ID)
	head := append(append(append([]byte{'{'}, name...), ':'), id...)
	return append(append(head, ','), out[1:]...), nil
}

// body renders l; remaining is its lease left, in whole seconds.
func (s *Server) body(res *resource, l *offlinelock.Lock, remaining time.Duration) lockBody {
	return lockBody{
		Resource: res.Name, ID: l.ID, LockToken: l.Token, LockedBy: l.Owner.User, Access: string(l.Access), Reason: l.Reason,
		AcquiredAt: l.AcquiredAt.UTC(), ExpiresAt: l.ExpiresAt.UTC(),
		TTLRemainingSeconds: int64(math.Round(max(remaining, 0).Seconds())), Generation: l.Generation,
		idName: res.IDName,
	}
}

// lock is POST /{resource}/{id}/lock.
func (s *Server) lock(w http.ResponseWriter, r *http.Request, res *resource) error {
	res, target, err := s.target(res, r.PathValue("id"))
	if err != nil {
		return err
	}
	principal, req, err := s.lockInput(r, res, target)
	if err != nil {
		return err
	}
	ttl, err := s.lockTTL(req)
	if err != nil {
		return err
	}
	// Without a Lock-Token the request is a new session's: the principal's own
	// lock is refused too, since only its first holder knows its token.
	owner := offlinelock.Owner{Session: s.lockSession(r), User: principal}
	status := http.StatusCreated
	presented := r.Header.Get(LockTokenHeader)
	if presented != "" {
		held, err := s.lockFor(r, presented, principal, target)
		if err != nil {
			return s.notYours(r, target, err)
		}
		owner, status = held.Owner, http.StatusOK // a refresh of the lease
	}
	ctx := offlinelock.WithTTL(offlinelock.WithOwner(r.Context(), owner), ttl)
	if req.Reason != "" {
		ctx = offlinelock.WithReason(ctx, req.Reason) // kept with the lock; a refresh without one keeps the old
	}
	l, err := s.cfg.Locks.Acquire(s.cfg.DB.WithContext(ctx), target, offlinelock.Write)
	if err != nil {
		return err
	}
	if l.Token == "" {
		// A refresh returns no token: the one presented stands.
		l.Token = presented
	} else if presented != "" {
		status = http.StatusCreated // expired between the check and the refresh: a new lock
	}
	b := s.body(res, l, l.ExpiresAt.Sub(l.AcquiredAt))
	if status == http.StatusOK {
		// The lease asked for is the lease kept: Shorten cuts what is beyond ttl.
		cut, left, err := s.cfg.Locks.Shorten(s.cfg.DB.WithContext(ctx), target, ttl)
		if err != nil {
			return err
		}
		b.ExpiresAt, b.TTLRemainingSeconds = cut.ExpiresAt.UTC(), int64(math.Round(left.Seconds()))
	}
	if b.Reason == "" && status == http.StatusOK { // a refresh without a reason keeps the lock's
		b.Reason = s.keptReason(ctx, target, l.Owner.Session)
	}
	w.Header().Set(LockTokenHeader, l.Token)
	writeJSON(w, status, b)
	return nil
}

// notYours answers a Lock-Token that is no live lock of the caller's on
// target: 423 naming the holder, or lock-required; nothing changes.
func (s *Server) notYours(r *http.Request, target any, err error) error {
	var re *requestError
	if !errors.As(err, &re) || re.status != http.StatusForbidden {
		return err
	}
	db := s.cfg.DB.WithContext(r.Context())
	holders, err := s.cfg.Locks.Holders(db, target)
	if err != nil {
		return err
	}
	if len(holders) == 0 {
		return &requestError{http.StatusLocked, "lock-required", re.detail + ": take a new lock (POST …/lock without a Lock-Token)"}
	}
	resource, id, err := s.cfg.Locks.KeyOf(db, target)
	if err != nil {
		return err
	}
	return &offlinelock.LockedError{Resource: resource, ID: id, Wanted: offlinelock.Write, Holders: holders}
}

// lockInput is who asks to lock target and what: ErrNoOwner, a 400 for a
// bad body, a 404 for a missing record.
func (s *Server) lockInput(r *http.Request, res *resource, target any) (string, lockRequest, error) {
	var req lockRequest
	principal, err := s.cfg.Principal(r)
	if err != nil || principal == "" {
		return "", req, offlinelock.ErrNoOwner
	}
	if err := decode(r, &req); err != nil {
		return "", req, err
	}
	if ok, err := s.exists(r, res, target); err != nil || !ok {
		if err == nil {
			err = notFound
		}
		return "", req, err
	}
	if err := s.allow(r, res, principal, ActionLock); err != nil {
		return "", req, err
	}
	return principal, req, nil
}

// lockTTL checks a lock request's terms and returns the lease it asks for
// (Config.DefaultTTL when it names none).
func (s *Server) lockTTL(req lockRequest) (time.Duration, error) {
	ttl := s.cfg.DefaultTTL
	if req.TTLSeconds != nil {
		if *req.TTLSeconds < 1 || *req.TTLSeconds > int64(s.cfg.MaxTTL/time.Second) {
			return 0, badRequest("ttlSeconds must be between 1 and %d", int64(s.cfg.MaxTTL/time.Second))
		}
		ttl = time.Duration(*req.TTLSeconds) * time.Second
	}
	return ttl, checkReason(req.Reason)
}

// checkReason refuses a lock's reason that is too long or not printable UTF-8.
func checkReason(reason string) error {
	if len(reason) > offlinelock.MaxReason || !utf8.ValidString(reason) ||
		strings.IndexFunc(reason, func(c rune) bool { return !unicode.IsPrint(c) }) >= 0 {
		return badRequest("reason is longer than %d bytes, or not printable text", offlinelock.MaxReason)
	}
	return nil
}

// keptReason is the reason session's lock of target was taken with, which
// a refresh without a reason of its own keeps ("" when it cannot be read).
func (s *Server) keptReason(ctx context.Context, target any, session string) string {
	holders, err := s.cfg.Locks.Holders(s.cfg.DB.WithContext(ctx), target)
	if err != nil {
		return ""
	}
	for _, h := range holders {
		if h.Owner.Session == session {
			return h.Reason
		}
	}
	return ""
}

// exists asks Resource.Exists, or counts the rows with target's key (a
// count takes no lock).
func (s *Server) exists(r *http.Request, res *resource, target any) (bool, error) {
	if res.Exists != nil {
		return res.Exists(r, r.PathValue("id"))
	}
	key := reflect.ValueOf(target).Elem().FieldByIndex(res.pk.Index).Interface()
	var n int64
	err := s.cfg.DB.WithContext(r.Context()).Model(target).
		Where(clause.Eq{Column: clause.Column{Table: clause.CurrentTable, Name: res.pkCol}, Value: key}).Count(&n).Error
	return n > 0, err
}

// unlock is POST /{resource}/{id}/unlock.
func (s *Server) unlock(w http.ResponseWriter, r *http.Request, res *resource) error {
	_, target, err := s.target(res, r.PathValue("id"))
	if err != nil {
		return err
	}
	token := r.Header.Get(LockTokenHeader)
	if token == "" {
		return badRequest("the Lock-Token header is missing")
	}
	principal, err := s.cfg.Principal(r)
	if err != nil || principal == "" {
		return offlinelock.ErrNoOwner
	}
	if err := s.allow(r, res, principal, ActionLock); err != nil {
		return err
	}
	held, err := s.lockFor(r, token, principal, target)
	if err != nil {
		return err
	}
	ctx := offlinelock.WithOwner(r.Context(), held.Owner)
	if err := s.cfg.Locks.Release(s.cfg.DB.WithContext(ctx), target); err != nil {
		if errors.Is(err, offlinelock.ErrNotLocked) {
			err = forbidden("the lock has expired or was released")
		}
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// info is GET /{resource}/{id}/lock. Like Middleware, it tells nobody
// unauthenticated who holds what.
func (s *Server) info(w http.ResponseWriter, r *http.Request, res *resource) error {
	principal, err := s.cfg.Principal(r)
	if err != nil || principal == "" {
		return offlinelock.ErrNoOwner
	}
	res, target, err := s.target(res, r.PathValue("id"))
	if err == nil {
		err = s.allow(r, res, principal, ActionRead)
	}
	if err != nil {
		return err
	}
	holders, err := s.cfg.Locks.Holders(s.cfg.DB.WithContext(r.Context()), target)
	if err != nil {
		return err
	}
	if len(holders) == 0 {
		return notFoundLock
	}
	var all []lockBody
	for i := range holders {
		all = append(all, s.body(res, &holders[i], time.Until(holders[i].ExpiresAt)))
	}
	out := all[0]
	out.Holders = all
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ownLock finds the lock a token stands for and checks that it is the
// principal's: a token presented by anyone else is refused like a wrong one.
func (s *Server) ownLock(r *http.Request, token, principal string) (*offlinelock.Lock, error) {
	l, err := s.cfg.Locks.LockByToken(s.cfg.DB.WithContext(r.Context()), token)
	if errors.Is(err, offlinelock.ErrNotLocked) || err == nil && l.Owner.User != principal {
		return nil, forbidden("the Lock-Token is wrong, expired, or not yours")
	}
	return l, err
}

// lockFor finds the principal's lock that token stands for and checks that
// it covers target (for an aggregate member, its root's): a 403 if not.
func (s *Server) lockFor(r *http.Request, token, principal string, target any) (*offlinelock.Lock, error) {
	held, err := s.ownLock(r, token, principal)
	if err != nil {
		return held, err
	}
	resource, id, err := s.cfg.Locks.KeyOf(s.cfg.DB.WithContext(r.Context()), target)
	if err == nil && (held.Resource != resource || held.ID != id) {
		err = forbidden("this Lock-Token is for another record")
	}
	return held, err
}

func decode(r *http.Request, into any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		return badRequest("the body could not be read")
	}
	if len(body) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, into); err != nil {
		return badRequest("the body is not the JSON this endpoint expects")
	}
	return nil
}

// writeJSON answers v as JSON, never sniffed or cached.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
