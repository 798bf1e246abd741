package main

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/offlinelock/offlinelock"
)

// defaultSort is list's order without --sort: the console's, oldest first.
const defaultSort = "since"

// listSorts are list's orders: the same as httplock's unexported
// consoleSorts, so both show the same locks first; change both together.
var listSorts = map[string]func(a, b offlinelock.Lock) int{
	"since": func(a, b offlinelock.Lock) int { return a.AcquiredAt.Compare(b.AcquiredAt) },
	"until": func(a, b offlinelock.Lock) int { return a.ExpiresAt.Compare(b.ExpiresAt) },
	"resource": func(a, b offlinelock.Lock) int {
		return cmp.Or(cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.ID, b.ID))
	},
	"user": func(a, b offlinelock.Lock) int { return cmp.Compare(a.Owner.User, b.Owner.User) },
}

// sortNames lists the keys --sort accepts.
func sortNames() string {
	return strings.Join(slices.Sorted(maps.Keys(listSorts)), ", ")
}

// sortLocks orders locks by column by, then resource, id and user, stably,
// as the console does.
func sortLocks(locks []offlinelock.Lock, by string) {
	column := listSorts[by]
	slices.SortStableFunc(locks, func(a, b offlinelock.Lock) int {
		return cmp.Or(column(a, b), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.ID, b.ID), cmp.Compare(a.Owner.User, b.Owner.User))
	})
}
