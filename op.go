package offlinelock

// opKind is the kind of statement a callback serves. It decides the lock a
// statement needs (a load's mode, a write's Write lock) and names the
// statement in errors, logs and metrics, so its values read as English.
type opKind string

const (
	opLoad     opKind = "load"      // the query chain: Find, First, Take, Scan, Pluck, Count …
	opRows     opKind = "rows"      // Row, Rows: a load whose rows the caller reads after the chain
	opRawQuery opKind = "raw query" // Raw(…): a read the plugin sees as SQL
	opCreate   opKind = "create"
	opUpdate   opKind = "update"
	opDelete   opKind = "delete"
	opExec     opKind = "exec" // Exec(…): a write the plugin sees as SQL
)

// loads says whether a statement of kind o reads, taking the locks a load
// takes: the mode's lock on load, or none.
func (o opKind) loads() bool { return o == opLoad || o == opRows || o == opRawQuery }
