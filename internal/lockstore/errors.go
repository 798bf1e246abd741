package lockstore

import (
	"errors"
	"fmt"
)

// The errors the store returns as values; the root package's exported
// errors are these same values, so errors.Is holds across the boundary.
var (
	// ErrNotLocked: the session holds no (live) lock where it claimed one.
	ErrNotLocked = errors.New("offlinelock: not locked by this session")
	// ErrInvalid: bad input, refused before any statement changed anything.
	ErrInvalid = errors.New("offlinelock: invalid input")
	// ErrLocked: someone else holds a lock that conflicts with the one
	// asked for (the root package's ErrLocked is this value).
	ErrLocked = errors.New("offlinelock: locked by another session")
	// ErrBeingWritten: a grant waited its bound for another transaction's
	// open write of the record, or of a record sharing its order, and was
	// refused; retry. It is an ErrLocked.
	ErrBeingWritten = fmt.Errorf("%w: the record is being written by another transaction; retry", ErrLocked)
	// ErrReadOnly: a read-only server refused a lock statement.
	ErrReadOnly = errors.New("offlinelock: lock statements need the primary, and this connection is read-only")
)

// Conflict is a refusal: other sessions hold key, so wanted cannot be
// granted. Holders never carry tokens. The root package turns it into its
// *Conflict.
type Conflict struct {
	Resource, ID string
	Wanted       Access
	Holders      []Lock
}

func (e *Conflict) Error() string {
	return "offlinelock: " + e.Resource + " " + e.ID + " is locked"
}

// refused is the refusal of wanted on k, naming its holders (never their
// tokens).
func refused(k Key, wanted Access, holders []Lock) error {
	for i := range holders {
		holders[i].Token = ""
	}
	return &Conflict{Resource: k.Resource, ID: k.ID, Wanted: wanted, Holders: holders}
}

// ReadOnly is err, told as ErrReadOnly when a read-only server refused it
// (PostgreSQL 25006; MySQL 1290 under --read-only, 1792 in a read-only
// transaction).
func ReadOnly(err error) error {
	if err == nil || errors.Is(err, ErrReadOnly) {
		return err
	}
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) && coded.SQLState() == "25006" || mysqlCode(err) == 1290 || mysqlCode(err) == 1792 {
		return fmt.Errorf("%w: %w", ErrReadOnly, err)
	}
	return err
}

// BeingWritten is err, told as ErrBeingWritten when a grant's wait for a
// lock timed out (PostgreSQL's 55P03: the guard's bounded wait for the
// writes of its record still open, pgGrantWait).
func BeingWritten(err error) error {
	if err == nil || errors.Is(err, ErrLocked) {
		return err
	}
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) && coded.SQLState() == "55P03" {
		return fmt.Errorf("%w: %w", ErrBeingWritten, err)
	}
	return err
}

// IsServerError says whether err is the database server's own answer
// (an error it raised with a code), not a failure to reach it.
func IsServerError(err error) bool {
	var coded interface{ SQLState() string }
	return errors.As(err, &coded) || mysqlCode(err) != 0
}

// IsMissingTable says whether err reports a table that does not exist.
func IsMissingTable(err error) bool {
	var coded interface{ SQLState() string }
	return errors.As(err, &coded) && coded.SQLState() == "42P01" || mysqlCode(err) == 1146
}

// TxRolledBack says whether err rolled the whole transaction back, its
// savepoints with it, so that a ROLLBACK TO a savepoint would only add
// "does not exist", and a transaction of the plugin's own may run again:
// MySQL's and MariaDB's 1213 (InnoDB chose it as a deadlock's victim, or
// Galera refused it at COMMIT), or a Galera node rolled it back without
// telling the statement then running (ErrTxLost).
func TxRolledBack(err error) bool { return mysqlCode(err) == 1213 || errors.Is(err, ErrTxLost) }
