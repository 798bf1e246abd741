package offlinelock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/offlinelock/offlinelock/internal/galera"
	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/model"
	"github.com/offlinelock/offlinelock/internal/telemetry"
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
	// Logger receives admin actions (force releases, releases of another
	// session's locks) and sweeper errors; default slog.Default(). Tokens
	// are never logged.
	Logger *slog.Logger
	// Authorize decides admin actions: "force_release", and "release_all"
	// or "renew" of a session other than the caller's. It gets the lock (or,
	// for session-wide actions, a Lock with only Owner.Session set) and
	// returns nil to allow. A nil Authorize allows none of them.
	Authorize func(ctx context.Context, action string, l Lock) error
	// Strict refuses Exec and Raw statements whose SQL names a lockable
	// table (ErrStrict), since the plugin cannot see which rows they touch.
	// Bypass lets one through. Default false: such statements run
	// unchecked (docs/fail-closed.md); set true to refuse them.
	Strict bool
	// Models are parsed when the plugin is registered, so that a bad lock
	// tag fails db.Use and Strict knows their tables from the start. Each
	// must be lockable (a lock tag on its primary key, or lock:"root" on a
	// foreign key): a model listed without one fails db.Use with ErrInvalid,
	// naming it and any lock tag the plugin does not read.
	// Models are also parsed on first use without being listed here.
	// Default none: each model is parsed, and its table recorded as
	// lockable, on first use; list them to learn of a bad tag at start-up.
	Models []any
	// MeterProvider receives the plugin's metrics: grants, refusals, fence
	// failures, upgrades, releases, hold times, lock-SQL latency, sweeps and
	// live locks (docs/observability.md). Nil means otel.GetMeterProvider()
	// at New: the application's global provider once it has set one (the
	// global delegates to a provider set later), a no-op until then. Pass
	// noop.NewMeterProvider() to turn the metrics off whatever the global.
	MeterProvider metric.MeterProvider
	// TracerProvider receives a span per lock-table statement, a child of
	// the span in the statement's context, and the decisions as events on
	// that caller's span. Nil means otel.GetTracerProvider() at New, as for
	// MeterProvider; pass a noop provider to turn the spans off.
	TracerProvider trace.TracerProvider
	// DisableGuard turns off the database guard (docs/guard.md): the
	// triggers that make PostgreSQL and MySQL/MariaDB refuse, for every
	// client, a write of a record another session holds. Default false
	// (guarded). With it set, only writes that pass through the plugin are
	// checked: Exec without Strict, Bypass, GORM without the plugin, other
	// services and SQL consoles write held records unchecked, and a
	// statement the plugin reads differently from the server is not caught
	// where it lands. Set it only where the database role may not create
	// triggers; RemoveGuard drops a guard already installed. A guard of
	// this lock table still installed makes db.Use fail: the database would
	// go on refusing writes of held records, this plugin's own included,
	// that no statement of its would prove.
	DisableGuard bool
	// GuardCheckEvery is how often the plugin reads again, in the
	// background, whether the database guard covers every table that can
	// hold rows of lockable records (docs/guard.md, "No guard, no
	// grant"): a trigger disabled or dropped, or a table created, outside
	// the plugin is found within this period, and grants of its records
	// are refused from then on. The plugin's own installs, repairs and
	// DDL through GORM are seen at once. Default DefaultGuardCheckEvery.
	GuardCheckEvery time.Duration
	// LeaveGuard makes db.Use neither install the guard nor check for it,
	// and the plugin never installs it on a statement's way; statements
	// still carry the identity the guard reads. For tools that install,
	// inspect or remove the guard themselves (the offlinelock command).
	LeaveGuard bool
	// GuardNamesRecordOnly makes the database guard's refusal of another
	// client's write name the record only ("… is locked by another
	// session"), not its holder nor the lock's times, which by default any
	// role whose write is refused reads. It is a setting of the database
	// (a catalog row), not of this node: the last node to start decides.
	GuardNamesRecordOnly bool
	// WatchEvery is how often Watch reads the locks it watches (one read
	// per watched record, however many watch it); default
	// DefaultWatchEvery.
	WatchEvery time.Duration
	// SessionAlive, if set, makes locks end with the session that owns
	// them: Sweep (and so StartSweeper) asks it about each session holding
	// live locks (those of the first SessionsPerSweep locks, per Sweep) and releases
	// every lock of a session it reports dead, as ReleaseAll does. Give it
	// your session store's lookup (scs: Store.Find of the session's token;
	// gorilla/sessions: the store's Get) when the lock's Owner.Session is
	// the login session's id. An error leaves that session's locks alone
	// and is logged.
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
	spans bool                 // spans are recorded: statements keep theirs aside (spans.go)
	hints hints                // which locks this process granted: a routing guess, never trusted

	bindings sync.Map   // databaseOf → *binding: the plugin on each database (binding.go)
	chains   chainCache // whether a callback chain is GORM's and the plugin's alone

	initErr atomic.Pointer[error] // why Initialize failed: every statement on a lockable table and every call fails with it
}

var _ gorm.Plugin = (*Plugin)(nil)

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,50}$`)

// New returns a plugin for cfg, with defaults filled in. A bad Config (a
// table name that is not a plain identifier, a negative TTL) is reported
// by Initialize and by every call.
func New(cfg Config) *Plugin {
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.MaxTTL == 0 {
		cfg.MaxTTL = DefaultMaxTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
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
		// A gorm.Open with a copy of a Config this plugin is registered
		// on: dbresolver opens each replica so, and the copy initialises
		// every plugin again. The replica is dbresolver's connection pool,
		// not a database of the plugin's: no lock table, no guard, no
		// callbacks (statements run on the source's *gorm.DB).
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
		if err := p.prepareDatabase(db, b.t); err != nil {
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
// break the lock table's transactions, creates the lock table, records the
// models, installs or checks the guard and loads the guard's key.
func (p *Plugin) prepareDatabase(db *gorm.DB, t lockStore) error {
	if err := lockstore.CheckPooler(t.Store, db); err != nil {
		return err
	}
	if err := p.Migrate(db); err != nil {
		return err
	}
	if err := p.checkFeaturePrivileges(db); err != nil {
		return err
	}
	if err := p.rememberModels(db); err != nil {
		return err
	}
	b, err := p.bindingOf(db)
	if err != nil {
		return err
	}
	return b.guard.Start(db)
}

// boundKey marks a Config this plugin was registered on (initialize): a
// Config copied from it carries the mark to the copy's gorm.Open.
const boundKey = "offlinelock:registered"

// failInit makes a plugin whose Initialize failed fail closed, whether or
// not the caller looks at db.Use's error: its calls return the error, and
// its callbacks (registered here if they were not) refuse every statement
// on a lockable table with it.
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
func (p *Plugin) rememberModels(db *gorm.DB) error {
	b, err := p.bindingOf(db)
	if err != nil {
		return err
	}
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

// ttl is the lifetime for a lock asked for in ctx: WithTTL or Config.TTL,
// capped by MaxTTL.
func (p *Plugin) ttl(ctx context.Context) (time.Duration, error) {
	d := p.cfg.TTL
	if v, ok := ttlFrom(ctx); ok {
		if v <= 0 {
			return 0, invalid("TTL %v must be positive", v)
		}
		d = v
	}
	return min(d, p.cfg.MaxTTL), nil
}

// observeLive registers the gauges for db, once per database: the live
// locks, and the tables the guard does not cover (coverage.go).
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
