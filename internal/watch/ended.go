package watch

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock/internal/lockstore"
)

// Ended are the notes that tell how locks ended (kind: ReasonForceReleased,
// ReasonSignedOut), by user, or by each lock's own user when by is "".
func Ended(kind, by string, ls ...lockstore.Lock) []Note {
	out := make([]Note, 0, len(ls))
	at := time.Now().UTC()
	for _, l := range ls {
		out = append(out, Note{Resource: l.Resource, LockID: l.ID, Kind: kind, ByUser: cmp.Or(by, l.Owner.User), Generation: l.Generation, At: at})
	}
	return out
}

// EndSession releases every lock of session and notes each live one as
// signed out (where the notes table can be), in one transaction, and
// returns how many lock rows it removed.
func (h *Hub) EndSession(db *gorm.DB, session string) (int64, error) {
	noted := h.EnsureNotes(db) == nil
	var n int64
	err := db.Transaction(func(tx *gorm.DB) (err error) {
		var live []lockstore.Lock
		if noted {
			if live, err = h.cfg.Store.List(h.cfg.Conn(tx), lockstore.Filter{Session: session}); err != nil {
				return err
			}
		}
		if n, err = h.cfg.Store.ReleaseAll(h.cfg.Conn(tx), session); err != nil {
			return err
		}
		return h.Note(tx, Ended(ReasonSignedOut, "", live...)...)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// CheckPrivileges is db.Use's check of the notes table where it exists:
// it names the grants this role lacks, rather than let the first take-over
// fail with a bare "permission denied" (PostgreSQL).
func (h *Hub) CheckPrivileges(db *gorm.DB) error {
	tp, ok := h.cfg.Store.(lockstore.TablePrivileges)
	if !ok {
		return nil
	}
	missing, err := tp.MissingTablePrivileges(h.cfg.Conn(db), []string{`"` + h.notes + `"`})
	if err != nil || len(missing) == 0 {
		return err
	}
	return fmt.Errorf("offlinelock: permission denied: this role may not use the notes table %s, which TakeOver, RequestEdit, ForceRelease and Watch write; as the owner, run: %s TO <this role>",
		h.notes, strings.Join(missing, " TO <this role>; "))
}
