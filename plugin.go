package offlinelock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/offlinelock/offlinelock/internal/galera"
	"github.com/offlinelock/offlinelock/internal/guard"
	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"github.com/offlinelock/offlinelock/internal/telemetry"
	"github.com/offlinelock/offlinelock/internal/watch"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Defaults for Config fields left zero.
const (
	DefaultTable  = "offline_locks"
	DefaultTTL    = 30 * time.Minute
	DefaultMaxTTL = 24 * time.Hour
)

// Config configures a Plugin. The zero value is usable.
type Config struct {
	// Table is the lock table's name; default "offline_locks". The plugin
	// creates it, with its indexes, when it is registered.
	Table string
	// TTL is how long a lock lives unless renewed; default 30 minutes.
	// WithTTL overrides it per call.
	TTL time.Duration
	// MaxTTL caps every TTL, however it was asked for; default 24 hours.
	MaxTTL time.Duration
	// Logger receives admin actions and sweeper errors; default
	// slog.Default(). Tokens are never logged.
	Logger *slog.Logger
	// Authorize decides admin actions: "force_release", "take_over" of
	// another user's lock, and "release_all" or "renew" of a session other
	// than the caller's. It gets the lock (for session-wide actions, a Lock
	// with only Owner.Session set) and returns nil to allow. Nil allows none.
	Authorize func(ctx context.Context, action string, l Lock) error
	// Strict refuses Exec and Raw statements whose SQL names a lockable
	// table (ErrStrict), since the plugin cannot see which rows they touch;
	// Bypass lets one through. Default false: they run unchecked
	// (docs/fail-closed.md).
	Strict bool
	// Models are parsed when the plugin is registered, so that a bad lock
	// tag fails db.Use and Strict knows their tables from the start. Each
	// must be lockable, else db.Use fails with ErrInvalid naming it. Models
	// not listed are parsed on first use.
	Models []any
	// MeterProvider receives the plugin's metrics (docs/observability.md).
	// Nil means otel.GetMeterProvider() at New (the global delegates to a
	// provider set later); pass noop.NewMeterProvider() to turn them off.
	MeterProvider metric.MeterProvider
	// TracerProvider receives a span per lock-table statement and the
	// decisions as events on the caller's span. Nil means
	// otel.GetTracerProvider() at New; pass a noop provider to turn it off.
	TracerProvider trace.TracerProvider
	// DisableGuard turns off the database guard (docs/guard.md): the
	// triggers that make PostgreSQL and MySQL/MariaDB refuse, for every
	// client, a write of a record another session holds. With it set, only
	// writes through the plugin are checked. Set it only where the role may
	// not create triggers; a guard of this lock table still installed makes
	// db.Use fail (RemoveGuard drops it).
	DisableGuard bool
	// GuardCheckEvery is how often the plugin reads again, in the
	// background, whether the guard covers every table that can hold rows
	// of lockable records; grants of a table found uncovered are refused
	// (docs/guard.md). Default DefaultGuardCheckEvery.
	GuardCheckEvery time.Duration
	// LeaveGuard makes the plugin neither install the guard nor check for
	// it at db.Use; statements still carry the identity the guard reads.
	// For tools that manage the guard themselves (the offlinelock command).
	LeaveGuard bool
	// GuardNamesRecordOnly makes the guard's refusal of another client's
	// write name the record only, not its holder nor the lock's times. It
	// is a setting of the database: the last node to start decides.
	GuardNamesRecordOnly bool
	// WatchEvery is how often Watch reads the locks it watches; default
	// DefaultWatchEvery.
	WatchEvery time.Duration
	// SessionAlive, if set, makes locks end with the session that owns
	// them: Sweep asks it about each session holding live locks (among the
	// first SessionsPerSweep) and releases every lock of a session it
	// reports dead, as ReleaseAll does; an error is logged and leaves the
	// session's locks alone (docs/browser.md).
	SessionAlive func(ctx context.Context, owner Owner) (bool, error)
}

// Plugin is a Pessimistic Offline Lock manager whose lock table lives in the
// application's database. Register it with db.Use(offlinelock.New(cfg)); it
// is safe for concurrent use and holds no per-request state.
type Plugin struct {
	cfg   Config
	err   error                // a configuration error, reported by Initialize and every call
	reg   *model.Registry      // parsed models
	tel   *telemetry.Telemetry // OpenTelemetry instruments, made once
	spans bool                 // spans are recorded: statements keep theirs aside (internal/telemetry)
	hints hints                // which locks this process granted: a routing guess, never trusted

	bindings sync.Map   // databaseOf → *binding: the plugin on each database (plugin.go)
	chains   chainCache // whether a callback chain is GORM's and the plugin's alone

	initErr atomic.Pointer[error] // why Initialize failed: every statement on a lockable table and every call fails with it
}

var _ gorm.Plugin = (*Plugin)(nil)

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,50}$`)

// New returns a plugin for cfg, with defaults filled in. A bad Config (a
// table name that is not a plain identifier, a negative TTL) is reported
// by Initialize and by every call.
func New(cfg Config) *Plugin {
	cfg.Table, cfg.TTL, cfg.MaxTTL = cmp.Or(cfg.Table, DefaultTable), cmp.Or(cfg.TTL, DefaultTTL), cmp.Or(cfg.MaxTTL, DefaultMaxTTL)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	p := &Plugin{cfg: cfg, reg: &model.Registry{}}
	tel, telErr := telemetry.New(cfg.MeterProvider, cfg.TracerProvider, refusals()...)
	p.tel = tel
	p.spans = tel.Tracing() // else no statement keeps spans aside
	switch {
	case telErr != nil:
		p.err = fmt.Errorf("offlinelock: creating OpenTelemetry instruments: %w", telErr)
	case !identifier.MatchString(cfg.Table):
		p.err = fmt.Errorf("%w: table name %q must be a plain identifier", ErrInvalid, cfg.Table)
	case cfg.TTL < 0 || cfg.MaxTTL < 0:
		p.err = fmt.Errorf("%w: TTL %v and MaxTTL %v must be positive", ErrInvalid, cfg.TTL, cfg.MaxTTL)
	}
	if p.cfg.TTL > p.cfg.MaxTTL {
		p.cfg.TTL = p.cfg.MaxTTL
	}
	return p
}

// Name returns the plugin's name for gorm.DB.Use.
func (p *Plugin) Name() string { return "offlinelock" }

// Initialize creates the lock table if it is missing, parses
// Config.Models, and registers the callbacks that lock on load and check on
// write. It is called by db.Use and is safe to run from several
// application nodes at once.
func (p *Plugin) Initialize(db *gorm.DB) error {
	err := p.initialize(db)
	if err != nil {
		p.failInit(db, err)
	}
	return err
}

// initialize binds the plugin to db: models checked, database prepared,
// callbacks registered once per database.
func (p *Plugin) initialize(db *gorm.DB) error {
	if p.err != nil {
		return p.err
	}
	if _, copied := db.Config.ClauseBuilders[boundKey]; copied {
		// A copy of a registered Config (dbresolver opens each replica
		// so): a pool of the source's, not a database of the plugin's.
		return nil
	}
	b, err := p.bindingOf(db)
	if err != nil {
		return err
	}
	if err := p.checkModels(db); err != nil {
		return err
	}
	if !db.DryRun {
		if err := p.prepareDatabase(db, b); err != nil {
			return err
		}
		if b.t.Store.Galera() {
			galera.Install(db) // a caller's own COMMIT, told as a lock answer
		}
	}
	if db.Callback().Query().Get("offlinelock:before_query") != nil {
		return nil // already registered on this database
	}
	if err := b.observeLive(db); err != nil {
		return err
	}
	b.registerIdentity(db)
	if err := b.registerCallbacks(db); err != nil {
		return err
	}
	if db.ClauseBuilders == nil {
		db.ClauseBuilders = map[string]clause.ClauseBuilder{}
	}
	db.ClauseBuilders[boundKey] = func(c clause.Clause, b clause.Builder) { c.Build(b) } // never a clause's name: a mark only
	return nil
}

// checkModels parses Config.Models on db, so that a wrong tag or a lock
// tag the plugin never reads fails db.Use, naming the model and the field.
func (p *Plugin) checkModels(db *gorm.DB) error {
	for _, m := range p.cfg.Models {
		pm, _, err := p.modelFor(db, m)
		if errors.Is(err, ErrInvalid) {
			return err // names the model and the field already
		}
		if err != nil {
			return fmt.Errorf("offlinelock: parsing model %T: %w", m, err)
		}
		if pm.Err != nil {
			return pm.Err
		}
		if !pm.Lockable {
			return model.NotLockable(pm)
		}
	}
	return nil
}

// prepareDatabase readies db for locking: it refuses a pooler that would
// break the lock table's transactions, creates the lock table, checks the
// notes table's privileges, records the models, installs or checks the guard.
func (p *Plugin) prepareDatabase(db *gorm.DB, b *binding) error {
	if err := lockstore.CheckPooler(b.t.Store, db); err != nil {
		return err
	}
	if err := p.Migrate(db); err != nil {
		return err
	}
	if err := b.watch.CheckPrivileges(p.background(db).WithContext(ctxOf(db))); err != nil {
		return err
	}
	if err := p.rememberModels(db, b); err != nil {
		return err
	}
	return b.guard.Start(db)
}

// boundKey marks a Config this plugin was registered on (initialize): a
// Config copied from it carries the mark to the copy's gorm.Open.
const boundKey = "offlinelock:registered"

// failInit makes a plugin whose Initialize failed fail closed, whether or
// not the caller looks at db.Use's error: its calls and its callbacks
// (registered here if they were not) refuse with the error.
func (p *Plugin) failInit(db *gorm.DB, err error) {
	err = fmt.Errorf("%w (the offlinelock plugin failed to initialise; statements on lockable tables are refused)", err)
	p.initErr.Store(&err)
	if db.Callback().Query().Get("offlinelock:before_query") == nil {
		b := &binding{p: p} // no store: its callbacks refuse with err
		if v, ok := p.bindings.Load(databaseOf(db)); ok {
			b = v.(*binding)
		}
		_ = b.registerCallbacks(db)
	}
}

// rememberModels writes Config.Models to the catalog and reads what other
// nodes wrote there.
func (p *Plugin) rememberModels(db *gorm.DB, b *binding) error {
	var ms []*model.Model
	for _, v := range p.cfg.Models {
		if m, _, _ := p.modelFor(db, v); m != nil && m.Lockable && m.Err == nil {
			ms = append(ms, m)
		}
	}
	if len(ms) > 0 {
		if err := b.saveModels(db, ms...); err != nil {
			return fmt.Errorf("offlinelock: writing the catalog of lockable tables: %w", err)
		}
	}
	if err := p.loadCatalog(p.background(db)); err != nil {
		return fmt.Errorf("offlinelock: reading the catalog of lockable tables: %w", err)
	}
	return nil
}

// Migrate creates the lock table, its indexes and its generation counter if
// they are missing. Initialize calls it; call it yourself only for a
// database the plugin was not registered on.
func (p *Plugin) Migrate(db *gorm.DB) error {
	t, err := p.storeFor(db)
	if err != nil {
		return err
	}
	return t.Migrate(direct(db))
}

// observeLive registers the gauges for db, once per database: the live
// locks, and the tables the guard does not cover (internal/guard).
func (b *binding) observeLive(db *gorm.DB) error {
	if db.DryRun {
		return nil
	}
	db = db.Session(&gorm.Session{NewDB: true})
	return b.p.tel.Observe(db, func(ctx context.Context) (map[string]int64, error) {
		return b.t.LiveByResource(direct(db.WithContext(ctx)))
	}, func() int64 {
		if !b.guard.Governs() {
			return -1
		}
		return b.guard.Count()
	})
}

// binding is the plugin on one database, made by db.Use or by the first
// call that names the database, and kept as long as the Plugin. The
// dialect is decided once, here; the callbacks are its methods, so a
// statement finds its store and its model's state without a lookup.
type binding struct {
	p     *Plugin
	t     lockStore    // the lock table on this database
	guard guard.Keeper // the guard here: which tables carry it, what grants read (guard.go)

	epoch     atomic.Uint64 // advanced when the guard's state is forgotten: every model is prepared again
	models    sync.Map      // *model.Model → *modelHere
	changes   atomic.Uint64 // the registry's changes (model.Registry's Changes) this binding has written
	catalogAt atomic.Int64  // when this database's catalog was last read, in Unix nanoseconds

	watch *watch.Hub // this node's watches, views and notes here (watch.go)
}

// modelHere is what a binding has done for one model on its database.
type modelHere struct {
	saved atomic.Uint64 // 1 + the model's spec version written to this catalog; 0 for none
	ready atomic.Uint64 // 1 + the binding's epoch at which the model was prepared
}

// initFailed is the error of a failed Initialize, or nil.
func (p *Plugin) initFailed() error {
	if e := p.initErr.Load(); e != nil {
		return *e
	}
	return nil
}

// bindingOf is the plugin on db's database, made on first use.
func (p *Plugin) bindingOf(db *gorm.DB) (*binding, error) {
	if err := cmp.Or(p.err, p.initFailed()); err != nil {
		return nil, err
	}
	if db == nil || db.Dialector == nil || db.Config == nil {
		return nil, invalid("db is nil or not opened")
	}
	k := databaseOf(db)
	if b, ok := p.bindings.Load(k); ok {
		return b.(*binding), nil
	}
	b, err := p.newBinding(db.Dialector.Name())
	if err != nil {
		return nil, err
	}
	v, _ := p.bindings.LoadOrStore(k, b)
	return v.(*binding), nil
}

// storeFor is the lock table of db's database.
func (p *Plugin) storeFor(db *gorm.DB) (lockStore, error) {
	b, err := p.bindingOf(db)
	if err != nil {
		return nil, err
	}
	return b.t, nil
}

// newBinding decides the dialect: the one place that switches on it for
// the lock table.
func (p *Plugin) newBinding(dialect string) (*binding, error) {
	b := &binding{p: p}
	lockTable, seq, catalog := `"`+p.cfg.Table+`"`, `"`+p.cfg.Table+`_generation"`, `"`+p.cfg.Table+`_tables"`
	obs := p.tel.Observer(dialect)
	var st lockstore.Store
	switch dialect {
	case "postgres":
		st = lockstore.NewPostgres(lockTable, seq, catalog, obs)
	case "sqlite", "sqlite3":
		st = lockstore.NewSQLite(lockTable, seq, catalog, obs)
	case "mysql": // gorm.io/driver/mysql, for MySQL and MariaDB alike
		st = lockstore.NewMySQL(p.cfg.Table, obs)
	default:
		return nil, fmt.Errorf("offlinelock: database %q is not supported (PostgreSQL, MySQL, MariaDB and SQLite are)", dialect)
	}
	b.t = &table{Store: st, caps: st.Traits(), obs: obs}
	every := p.cfg.GuardCheckEvery
	if every <= 0 {
		every = DefaultGuardCheckEvery
	}
	b.guard.Init(guard.Config{Guard: b.t.caps.Guard, Off: p.cfg.DisableGuard, Leave: p.cfg.LeaveGuard, RecordOnly: p.cfg.GuardNamesRecordOnly,
		CheckEvery: every, LockTable: p.cfg.Table, Logger: p.cfg.Logger, Unenforceable: ErrUnenforceable, Models: p.reg, Host: (*guardHost)(b)})
	b.watch = watch.New(watch.Config{Table: p.cfg.Table, Every: cmp.Or(p.cfg.WatchEvery, DefaultWatchEvery),
		OneWriter: b.t.caps.OneWriter, Logger: p.cfg.Logger, Store: b.t.Store, Conn: direct})
	return b, nil
}

// here is what b has done for m.
func (b *binding) here(m *model.Model) *modelHere {
	if h, ok := b.models.Load(m); ok {
		return h.(*modelHere)
	}
	h, _ := b.models.LoadOrStore(m, &modelHere{})
	return h.(*modelHere)
}

// prepare puts in place, once per model on this database, what a
// statement on m needs first: its key columns checked against the lock
// table, its catalog row written, its table guarded. Until all of that has
// held once every statement tries again; after it, one map read.
func (b *binding) prepare(db *gorm.DB, m *model.Model) error {
	epoch := b.epoch.Load() + 1
	if v, ok := b.models.Load(m); ok { // the common case, in one map read
		if h := v.(*modelHere); h.ready.Load() == epoch && h.saved.Load() == m.Version.Load()+1 {
			return nil
		}
	}
	h := b.here(m)
	if err := checkKeyColumns(db, b.t, m); err != nil {
		return err
	}
	if err := b.rememberModel(db, m); err != nil {
		return err
	}
	if b.guard.Lazily(db, m) && h.saved.Load() == m.Version.Load()+1 {
		h.ready.Store(epoch)
	}
	return nil
}

// freshCatalog writes again the catalog rows of models whose row grew, and
// starts a background reload of the catalog when it is older than
// catalogRefresh.
func (b *binding) freshCatalog(db *gorm.DB) {
	if n := b.p.reg.Changes.Load(); n != b.changes.Load() && !db.DryRun {
		written := true
		b.models.Range(func(k, v any) bool {
			m, h := k.(*model.Model), v.(*modelHere)
			if s := h.saved.Load(); s != 0 && s != m.Version.Load()+1 {
				// not written (or inside a SQLite transaction): next time
				written = b.rememberModel(db, m) == nil && h.saved.Load() == m.Version.Load()+1 && written
			}
			return true
		})
		if written {
			b.changes.CompareAndSwap(b.changes.Load(), n)
		}
	}
	at := b.catalogAt.Load()
	if time.Since(time.Unix(0, at)) < catalogRefresh || !b.catalogAt.CompareAndSwap(at, time.Now().UnixNano()) {
		return
	}
	go b.p.loadCatalog(b.p.background(db))
}

// learn prepares m for a statement the plugin lets through without
// enforcing it (a load that takes no lock, a bypassed statement), where a
// guard governs grants, so that its table is guarded before any of its rows
// can be held; a failure is the next statement's to retry. Inside a
// caller's transaction a read does nothing (a failed catalog write would
// abort it) and a write only writes the catalog row (an install beside the
// transaction would wait for the table it writes) (docs/guard.md).
func (b *binding) learn(db *gorm.DB, m *model.Model, write bool) {
	if !b.guard.Governs() {
		return
	}
	if _, inTx := db.Statement.ConnPool.(gorm.TxCommitter); inTx {
		if write {
			_ = b.rememberModel(db, m)
		}
		return
	}
	_ = b.prepare(db, m)
}

// databaseOf names db's database for the plugin's per-database state: its
// *sql.DB, under GORM's prepared-statement wrapper, or the connection pool
// gorm.Open was given. Not db.Config: every Session copies it.
func databaseOf(db *gorm.DB) any {
	pool := db.Config.ConnPool
	if c, ok := pool.(gorm.GetDBConnector); ok {
		if sqlDB, err := c.GetDBConn(); err == nil && sqlDB != nil {
			return sqlDB
		}
	}
	return pool
}

// forget makes every model be prepared again.
func (b *binding) forget() { b.epoch.Add(1) }

// FeatureTables lists the tables the plugin's features beside the lock
// table need on db's lock table: the notes table (TakeOver, RequestEdit,
// Watch) and the viewers table (View). CreateFeatureTables makes them;
// the application's role needs SELECT, INSERT, UPDATE and DELETE on them
// (and on PostgreSQL USAGE on the notes table's id sequence).
func (p *Plugin) FeatureTables() []string {
	var out []string
	for _, f := range featureTables(p.cfg.Table) {
		out = append(out, f.name)
	}
	return out
}

// featureTable is one feature table: its name and its model.
type featureTable struct {
	name  string
	model any
}

// featureTables are the feature tables of lock table table.
func featureTables(table string) []featureTable {
	var out []featureTable
	for _, t := range watch.Tables(table) {
		out = append(out, featureTable{t.Name, t.Model})
	}
	return out
}

// CreateFeatureTables creates the tables FeatureTables lists where they
// are missing, for an application whose role may not create them
// (`offlinelock guard install` runs it as their owner). Idempotent.
func (p *Plugin) CreateFeatureTables(db *gorm.DB) error {
	s := p.background(onPrimary(db)).WithContext(ctxOf(db)).Set(resolverWrite, struct{}{})
	return watch.CreateTables(s, p.cfg.Table)
}

// SQLiteDSN returns a DSN for gorm.io/driver/sqlite (mattn/go-sqlite3) with
// what the lock table needs under concurrency: WAL, a busy timeout, and
// immediate transactions (which take the write lock when they begin rather
// than failing to upgrade later).
func SQLiteDSN(path string) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_journal_mode=WAL&_busy_timeout=10000&_txlock=immediate&_foreign_keys=1"
}
