package offlinelock

import "time"

// Mode is a model's locking policy, set with the lock struct tag on its
// primary key. It decides what the plugin's callbacks do on loads and writes.
type Mode string

const (
	// ExclusiveWrite: loads are free; a write needs a Write lock taken with
	// Acquire when the edit starts. The most common choice.
	ExclusiveWrite Mode = "exclusive_write"
	// ExclusiveRead: every load takes the exclusive lock for the session, so
	// only one session may even read the record; writes need it too.
	ExclusiveRead Mode = "exclusive_read"
	// ReadWrite: every load takes a shared Read lock; a write needs a Write
	// lock, which is granted only when no other session reads.
	ReadWrite Mode = "read_write"
)

// Access is what one lock grants.
type Access string

const (
	// Read is shared: many sessions may hold it together, but not while
	// another session holds Write.
	Read Access = "read"
	// Write is exclusive: no other session holds anything on the record.
	// A session that is the only reader may upgrade its Read to Write.
	Write Access = "write"
)

func (a Access) valid() bool { return a == Read || a == Write }

// Lock is one granted lock, as stored in the lock table.
type Lock struct {
	// Resource and ID name the locked row: its table and its primary key as
	// text (composite keys are joined with ',' and escaped).
	Resource, ID string
	Access       Access
	Owner        Owner
	// Token is a secret capability of 128 bits from crypto/rand, for
	// clients that cannot carry a session (HTTP Lock-Token). It is filled
	// only in what Acquire returns when it grants a new lock, once: the
	// lock table keeps only its SHA-256 hash, so re-acquiring a lock the
	// session holds (or upgrading its Read lock) returns Token "" and the
	// holder keeps the token it was given first. Never in Holders, List,
	// LockByToken or errors.
	Token string
	// Generation grows at every grant of the key and is never reused, so it
	// serves as a fencing token: a later holder always has a larger one.
	// Re-acquiring a lock you hold keeps its generation. On PostgreSQL it
	// carries the WAL timeline above 2^40, or where the role cannot read
	// the timeline an epoch that follows the server's clock, so a standby
	// promoted after a failover issues larger ones than the old primary
	// did (docs/scaling.md).
	Generation int64
	// AcquiredAt and ExpiresAt come from the database's clock.
	AcquiredAt, ExpiresAt time.Time
	// Reason is why the lock was taken, as its holder said (WithReason;
	// httplock's lock request): at most MaxReason bytes of printable text,
	// shown to whoever may see the lock (Holders, List, the console, the
	// command), never put in metrics or traces. A lock taken again keeps
	// it unless a new one is given; a lock taken over loses it.
	Reason string
}

// MaxReason is the longest Reason, in bytes.
const MaxReason = 255
