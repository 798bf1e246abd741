package guard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/offlinelock/offlinelock/internal/lockstore"
	"gorm.io/gorm"
)

// retryWait bounds each of retry's installs on PostgreSQL.
const retryWait = time.Second

// retries and retryMax bound retry: about 10 minutes.
const (
	retries  = 25
	retryMax = 30 * time.Second
)

// Start is db.Use's part of the guard: install it, leave it (LeaveGuard),
// or check that none is installed (DisableGuard); then read its key.
func (k *Keeper) Start(db *gorm.DB) error {
	if err := k.start(db); err != nil {
		return err
	}
	return k.LoadKey(k.cfg.Host.Conn(k.cfg.Host.Background(db)))
}

// start installs, leaves or checks the guard, as Start says.
func (k *Keeper) start(db *gorm.DB) error {
	g, log := k.cfg.Guard, k.cfg.Logger
	switch {
	case k.cfg.Leave || g == nil:
		return nil
	case !k.cfg.Off:
		err := k.Install(db)
		if err == nil {
			err = k.setRefusal(db)
		}
		if errors.Is(err, lockstore.ErrGuardProtocol) {
			// A newer node installed it: serve, grant nothing, leave it.
			log.WarnContext(ctxOf(db), "offlinelock: the database guard was installed by a newer offlinelock; this node grants no lock until it is upgraded", "error", err)
			return nil
		}
		if err != nil && lockstore.Denied(err) && k.routineInPlace() {
			// A DML-only role: start, and refuse those records' grants.
			log.WarnContext(ctxOf(db), "offlinelock: this role may not install the database guard on a declared table; "+
				"grants of the records it covers are refused until the tables' owner runs `offlinelock guard install`", "error", err)
			return nil
		}
		if err != nil && lockstore.IsLockTimeout(err) {
			// A table in use: start, refuse, and retry in the background.
			log.WarnContext(ctxOf(db), "offlinelock: the database guard could not be installed or repaired at start-up: a table is in use; "+
				"grants of the records it covers are refused until it is, and it is tried again in the background", "error", err)
			go k.retry(k.cfg.Host.Background(db))
			return nil
		}
		return err
	}
	tables, err := Guarded(k.cfg.Host.Conn(k.cfg.Host.Background(db)), g)
	if err != nil {
		return err
	}
	if len(tables) == 0 {
		for _, m := range k.cfg.Models.Lockable() {
			k.learnPartitions(db, m)
		}
		return nil
	}
	return fmt.Errorf("offlinelock: Config.DisableGuard is set, but the database guard of lock table %s is still installed on %s: "+
		"the database would go on refusing writes of held records, this plugin's own included; "+
		"remove it first with `offlinelock guard remove --dsn … --table %s` (or Plugin.RemoveGuard), or unset DisableGuard",
		k.cfg.LockTable, strings.Join(tables, ", "), k.cfg.LockTable)
}

// routineInPlace says whether this process found or installed the
// guard's shared routine.
func (k *Keeper) routineInPlace() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.routine
}

// setRefusal writes Config.GuardNamesRecordOnly where the guard reads it;
// failing, only a node that asked for it fails to start.
func (k *Keeper) setRefusal(db *gorm.DB) error {
	err := k.cfg.Guard.SetRefusal(k.cfg.Host.Conn(k.cfg.Host.Background(db)), k.cfg.RecordOnly)
	if err != nil && !k.cfg.RecordOnly {
		k.cfg.Logger.WarnContext(ctxOf(db), "offlinelock: could not write the guard's refusal setting; it is left as it was", "error", err)
		return nil
	}
	return err
}

// retry tries Install again, with pauses doubling up to retryMax, until
// it succeeds, fails otherwise than by a lock wait, or retries run out.
func (k *Keeper) retry(db *gorm.DB) {
	pause := time.Second
	for range retries {
		time.Sleep(pause)
		pause = min(2*pause, retryMax)
		err := k.retryOnce(db)
		if err == nil {
			k.cfg.Logger.InfoContext(ctxOf(db), "offlinelock: the database guard is installed")
			return
		}
		if !lockstore.IsLockTimeout(err) && !errors.Is(err, context.DeadlineExceeded) {
			k.cfg.Logger.WarnContext(ctxOf(db), "offlinelock: installing the database guard in the background failed", "error", err)
			return
		}
	}
}

// retryOnce is one of retry's installs, given retryWait on PostgreSQL:
// cancelling it drops the lock it queued, which every reader waits behind.
func (k *Keeper) retryOnce(db *gorm.DB) error {
	if !k.cfg.Guard.InstallEndsWithContext() {
		return k.Install(db)
	}
	ctx, cancel := context.WithTimeout(context.Background(), retryWait)
	defer cancel()
	return k.Install(db.WithContext(ctx))
}
