package lockstore

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// ErrGrantExecute: this role may not execute the guard's routines, which
// are in place; the owner grants EXECUTE (the error names the grant).
var ErrGrantExecute = errors.New("offlinelock: this role may not execute the database guard's routines")

// executeDenied tells a routine that is in place but hidden from this user
// (no EXECUTE: information_schema shows it nothing) from one that is
// missing, by calling it with a NULL record, which the routine answers at
// once: 1370 is a routine this user may not execute, 1305 one that does
// not exist. nil unless it is denied.
func (s *mysqlStore) executeDenied(c Conn, kind, name string) error {
	q := "CALL " + s.Quote(name) + "(NULL, NULL)"
	if kind == "FUNCTION" {
		q = "SELECT " + s.Quote(name) + "(NULL, NULL, NULL, 0)"
	}
	_, err := c.Query(q, nil, func(*sql.Rows) error { return nil })
	if mysqlCode(err) != 1370 {
		return nil
	}
	var db, user string
	if _, err := c.Query(`SELECT DATABASE(), CONCAT('''', SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '''@''', SUBSTRING_INDEX(CURRENT_USER(), '@', -1), '''')`, nil,
		func(r *sql.Rows) error { return r.Scan(&db, &user) }); err != nil {
		return err
	}
	return fmt.Errorf("%w: the %s %s is installed, and this user may not execute it: as the tables' owner, run GRANT EXECUTE ON %s.* TO %s (or GRANT EXECUTE ON %s %s.%s TO %s)",
		ErrGrantExecute, strings.ToLower(kind), name, s.Quote(db), user, kind, s.Quote(db), s.Quote(name), user)
}
