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
//	  Watch, View                   a record's events on a channel; a user who has it open
//	  EnsureNotes, Note, Ended      the notes table: made, written; how locks ended
//	  Request, EndSession           a rate-limited request to edit; a session's end, noted
//	  CheckPrivileges               whether this role may use the notes table
//	Event, Viewer, Note             what a watch is told; a row of the notes table
//	Locked, …, Viewers; ReasonReleased, …   the events' kinds; how a lock ended
//	Tables, NotesTable, CreateTables        the feature tables, for an owner's install
//	ExpiringWithin, ViewerGone, RequestsPerMinute, ErrHeldByYou, ErrTooManyRequests
package watch
