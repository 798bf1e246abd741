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
	// ErrLocked: another holds a conflicting lock.
	ErrLocked = errors.New("offlinelock: locked by another session")
	// ErrBeingWritten: a grant's bounded wait for another transaction's open
	// write ran out; retry. It is an ErrLocked.
	ErrBeingWritten = fmt.Errorf("%w: the record is being written by another transaction; retry", ErrLocked)
	// ErrReadOnly: a read-only server refused a lock statement.
	ErrReadOnly = errors.New("offlinelock: lock statements need the primary, and this connection is read-only")
)

// Conflict is a refusal: other sessions (holders, without tokens) hold key.
type Conflict struct {
	Resource, ID string
	Wanted       Access
	Holders      []Lock
}

func (e *Conflict) Error() string {
	return "offlinelock: " + e.Resource + " " + e.ID + " is locked"
}

// refused is the refusal of wanted on k, naming its holders.
func refused(k Key, wanted Access, holders []Lock) error {
	for i := range holders {
		holders[i].Token = ""
	}
	return &Conflict{Resource: k.Resource, ID: k.ID, Wanted: wanted, Holders: holders}
}

// ReadOnly is err, told as ErrReadOnly when a read-only server refused it.
func ReadOnly(err error) error {
	if err == nil || errors.Is(err, ErrReadOnly) {
		return err
	}
	if sqlState(err) == "25006" || mysqlCode(err) == 1290 || mysqlCode(err) == 1792 {
		return fmt.Errorf("%w: %w", ErrReadOnly, err)
	}
	return err
}

// BeingWritten is err, told as ErrBeingWritten when a grant's wait timed
// out (55P03, pgGrantWait).
func BeingWritten(err error) error {
	if err == nil || errors.Is(err, ErrLocked) {
		return err
	}
	if sqlState(err) == "55P03" {
		return fmt.Errorf("%w: %w", ErrBeingWritten, err)
	}
	return err
}

// IsServerError says whether err is the server's own coded answer.
func IsServerError(err error) bool {
	var coded interface{ SQLState() string }
	return errors.As(err, &coded) || mysqlCode(err) != 0
}

// IsMissingTable says whether err reports a table that does not exist.
func IsMissingTable(err error) bool {
	return sqlState(err) == "42P01" || mysqlCode(err) == 1146
}

// sqlState is err's SQLSTATE (PostgreSQL), "" when it has none.
func sqlState(err error) string {
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		return coded.SQLState()
	}
	return ""
}

// TxRolledBack says whether err rolled the whole transaction back, its
// savepoints with it: MySQL's 1213 or ErrTxLost.
func TxRolledBack(err error) bool { return mysqlCode(err) == 1213 || errors.Is(err, ErrTxLost) }
