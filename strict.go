package offlinelock

import (
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"github.com/offlinelock/offlinelock/internal/sqlscan"
	"github.com/offlinelock/offlinelock/internal/telemetry"
)

// Config.Strict: Exec and raw queries whose SQL may read or write rows of
// a lockable table are refused, since the plugin cannot see which rows
// they touch. The SQL is tokenised (sqlscan.go), so a table named in a
// literal or a comment is not a reference.

// beforeRaw refuses, under Config.Strict, an Exec whose SQL names a
// lockable table: the plugin cannot see which rows it touches.
func (b *binding) beforeRaw(db *gorm.DB) {
	p := b.p
	if p.spans {
		p.tel.TraceStatement(db)
	}
	if db.Error != nil || db.DryRun {
		return
	}
	if err := p.initFailed(); err != nil {
		if sql := db.Statement.SQL.String(); sqlscan.Read(sql).RowAccess && len(p.namedModels(sql)) > 0 {
			db.AddError(err)
			return
		}
	}
	if p.strict(db, opExec) {
		return
	}
	p.refuseViews(db)
	if db.Error == nil {
		b.rawIdentity(db)
	}
}

// afterRaw names the lock a guard's refusal of a raw write stands for, and
// guards again a lockable table that DDL named (created, renamed, altered).
func (b *binding) afterRaw(db *gorm.DB) {
	p := b.p
	if p.spans {
		telemetry.AdoptSpan(db)
		telemetry.EndSpans(db)
	}
	lockstore.EndRawTx(db)
	if db.Error != nil {
		p.lockedByGuard(db)
		return
	}
	if db.DryRun || p.cfg.DisableGuard {
		return
	}
	sql := db.Statement.SQL.String()
	switch sqlscan.FirstWord(sql) {
	case "create", "alter", "drop", "rename":
	default:
		return
	}
	p.reg.LearnParsed(db) // AutoMigrate parsed its models before this DDL: a member declared on its side only is known before its table is made
	for _, m := range p.namedModels(sql) {
		b.guard.AfterDDL(db, m)
	}
}

// strict applies Config.Strict to a statement whose SQL the plugin cannot
// see into. It reports whether it refused it. A statement that only names a
// lockable table in a literal or a comment is not refused, nor is DDL
// (migrations change no row) or the migrator's own work.
func (p *Plugin) strict(db *gorm.DB, op opKind) bool {
	if !p.cfg.Strict {
		return false
	}
	sql := db.Statement.SQL.String()
	if !sqlscan.Read(sql).RowAccess {
		return false
	}
	if sqlscan.Dynamic(sql) && len(p.reg.Lockable()) > 0 && !p.bypassed(db, op) && !p.fromMigrator() {
		// SQL built at run time, or a table named in a string: it may
		// name any lockable table, and no reading can tell which.
		err := fmt.Errorf("%w: %s runs dynamic SQL (EXECUTE of built text, PREPARE from a variable, a function that reads a table named in a string), which may reach any lockable table; use the model's methods, or offlinelock.Bypass", ErrStrict, op)
		p.tel.Refused(ctxOf(db), db, telemetry.Implicit, string(Write), "", err)
		db.AddError(err)
		return true
	}
	named := p.namedModels(sql)
	if len(named) == 0 || p.bypassed(db, op) || p.fromMigrator() {
		return false
	}
	err := fmt.Errorf("%w: %s names lockable table %s; use the model's methods, or offlinelock.Bypass", ErrStrict, op, named[0].Table)
	p.tel.Refused(ctxOf(db), db, telemetry.Implicit, string(Write), named[0].Table, err)
	db.AddError(err)
	return true
}

// plainSelect says whether raw SQL only reads: it starts with SELECT, WITH,
// VALUES or TABLE and names no writing statement anywhere (a data-modifying
// CTE, SELECT … INTO). A raw SELECT … FOR UPDATE is taken as writing too:
// refusing more is the safe side.
func plainSelect(sql string) bool {
	idents := sqlscan.Read(sql).Idents
	if len(idents) == 0 {
		return false
	}
	switch strings.ToLower(idents[0]) {
	case "select", "with", "values", "table":
	default:
		return false
	}
	for _, id := range idents {
		switch strings.ToLower(id) {
		case "insert", "update", "delete", "merge", "truncate", "replace", "upsert", "into", "copy", "call", "do", "execute":
			return false
		}
	}
	return true
}
