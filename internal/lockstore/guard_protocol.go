package lockstore

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The guard's protocol is what grants and triggers agree on (docs/guard.md,
// "Its protocol"): 1 before issue 47 (implied where the catalog has no
// row), 2 since. A node never grants under, nor replaces, a newer one.

// GuardProtocol is the protocol this version's guard and grants speak.
const GuardProtocol = 2

const guardProtocolName = "offlinelock:guard protocol"

// ErrGuardProtocol: the installed guard speaks a newer protocol than this
// node's code; the node must be upgraded before it grants.
var ErrGuardProtocol = errors.New("offlinelock: the installed guard speaks a newer protocol than this node")

// installedProtocol is the protocol the catalog records: 1 where it
// records none (a guard installed before the row existed, or none yet).
func (t *sqlStore) installedProtocol(c Conn) (int, error) {
	return t.catalogNumber(c, guardProtocolName, 1)
}

// catalogNumber is the number the catalog's row name holds, or none
// where it has no such row (or no catalog yet, in a plan that makes it).
func (t *sqlStore) catalogNumber(c Conn, name string, none int) (int, error) {
	if c.fresh() {
		return none, nil // no catalog yet: the plan makes it
	}
	var spec sql.NullString
	_, err := c.Query(t.bind(`SELECT spec FROM `+t.catalog+` WHERE name = ?`), []any{name}, func(r *sql.Rows) error { return r.Scan(&spec) })
	if err != nil || !spec.Valid {
		return none, err
	}
	n, err := strconv.Atoi(spec.String)
	if err != nil {
		return 0, fmt.Errorf("offlinelock: the catalog's %s %q is not a number", strings.TrimPrefix(name, guardRowPrefix), spec.String)
	}
	return n, nil
}

// checkProtocol refuses to touch a guard of a newer protocol; it returns
// the installed one.
func (t *sqlStore) checkProtocol(c Conn) (int, error) {
	n, err := t.installedProtocol(c)
	if err == nil && n > GuardProtocol {
		err = fmt.Errorf("%w: protocol %d is installed and this node speaks %d: upgrade this node's offlinelock "+
			"(its grants are refused until then; the guard is left as the newer nodes installed it)", ErrGuardProtocol, n, GuardProtocol)
	}
	return n, err
}

// recordProtocol records GuardProtocol as installed, where installed (as
// checkProtocol read it) is older. upsert is the dialect's INSERT that
// replaces the row's spec, with ? for name and spec.
func (t *sqlStore) recordProtocol(c Conn, installed int, upsert string) error {
	if installed >= GuardProtocol {
		return nil
	}
	_, err := c.Exec(t.bind(upsert), guardProtocolName, strconv.Itoa(GuardProtocol))
	return err
}

// Revisions (docs/guard.md, "Its revision"): the catalog records the newest
// installed, and an older build counts a newer definition as in place
// rather than replacing it back during a rolling upgrade.

// GuardRevision numbers this version's guard SQL within GuardProtocol: a
// release that changes the SQL the guard installs, and not the protocol,
// raises it.
const GuardRevision = 4

const guardRevisionName = "offlinelock:guard revision"

// installedRevision is the revision the catalog records: 0 where it
// records none.
func (t *sqlStore) installedRevision(c Conn) (int, error) {
	return t.catalogNumber(c, guardRevisionName, 0)
}

// newerRevision says whether a newer revision of this node's protocol is
// installed: this node then leaves every definition as it is.
func (t *sqlStore) newerRevision(c Conn) (bool, error) {
	protocol, err := t.installedProtocol(c)
	if err != nil || protocol != GuardProtocol {
		return false, err
	}
	n, err := t.installedRevision(c)
	return n > int(t.revision.Load()), err
}

// recordRevision records this node's revision as installed, where the
// catalog's is older; upsert as recordProtocol's.
func (t *sqlStore) recordRevision(c Conn, upsert string) error {
	n, err := t.installedRevision(c)
	if err != nil || n >= int(t.revision.Load()) {
		return err
	}
	_, err = c.Exec(t.bind(upsert), guardRevisionName, strconv.Itoa(int(t.revision.Load())))
	return err
}

// triggersVersion is the version mark of a table's trigger statements:
// their hash, with the revision, so that two revisions' marks differ
// even where their statements do not.
func (t *sqlStore) triggersVersion(stmts []string) string {
	return guardVersion(append(slices.Clone(stmts), "revision "+strconv.Itoa(int(t.revision.Load())))...)
}

// seenAs is state as this node reports it: a definition another
// revision made counts as in place where that revision is newer.
func (t *sqlStore) seenAs(c Conn, state string) (string, error) {
	if state != GuardReplaced {
		return state, nil
	}
	if newer, err := t.newerRevision(c); err != nil || newer {
		return GuardOK, err
	}
	return state, nil
}
