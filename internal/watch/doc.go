// Package watch is how offlinelock tells a record's pages what happens to
// its lock: one watcher per database polls the lock table for every Watch
// there, the notes table (<table>_notes) carries what a lock row cannot
// say (a take-over, a request to edit, how a lock ended), and the viewers
// table (<table>_viewers) says who has a record open (View). Changes are
// read from the database, so a change made through any node reaches every
// node's watches within one poll.
//
// It imports internal/lockstore for the lock and key types, never the
// root: the root converts its Event to the public one.
//
// The API, on one screen:
//
//	Hub, New, Config                one database's watches, views and notes
//	  Watch                         a record's events, to a callback, until ctx ends
//	  View                          a user has a record open until ctx ends
//	  EnsureNotes, Note, Request    the notes table: made, written, a rate-limited request
//	Event, Viewer, Note             what a watch is told; a row of the notes table
//	Locked, Released, …, Viewers    the events' kinds; ReasonReleased, … how a lock ended
//	Tables, NotesTable, CreateTables
//	                                the feature tables, for an owner's install
//	DefaultEvery, ExpiringWithin, ViewerGone, RequestsPerMinute, ErrTooManyRequests
package watch
