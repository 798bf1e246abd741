package main

import (
	"cmp"
	"slices"
	"strings"

	"github.com/offlinelock/offlinelock"
)

// defaultSort is list's order without --sort: the console's default,
// oldest first, the likeliest forgotten.
const defaultSort = "since"

// listSorts are list's orders, by column: the same keys and comparisons as
// the console's sort parameter (httplock's consoleSorts), so that both show
// the same locks first. The console's package keeps them unexported, so
// they are repeated here; change both together.
var listSorts = map[string]func(a, b offlinelock.Lock) int{
	"since": func(a, b offlinelock.Lock) int { return a.AcquiredAt.Compare(b.AcquiredAt) },
	"until": func(a, b offlinelock.Lock) int { return a.ExpiresAt.Compare(b.ExpiresAt) },
	"resource": func(a, b offlinelock.Lock) int {
		return cmp.Or(cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.ID, b.ID))
	},
	"user": func(a, b offlinelock.Lock) int { return cmp.Compare(a.Owner.User, b.Owner.User) },
}

// sortNames lists the keys --sort accepts, for its help and its usage
// error.
func sortNames() string {
	names := make([]string, 0, len(listSorts))
	for name := range listSorts {
		names = append(names, name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// sortLocks orders locks by the column by, then by resource, id and user,
// as the console does. The sort is stable, as the console's is, so locks
// equal in all of these (two sessions of one user reading one record) keep
// List's order, and both show them alike.
func sortLocks(locks []offlinelock.Lock, by string) {
	column := listSorts[by]
	slices.SortStableFunc(locks, func(a, b offlinelock.Lock) int {
		return cmp.Or(column(a, b), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.ID, b.ID), cmp.Compare(a.Owner.User, b.Owner.User))
	})
}
