// Command editor is the seed-001 scene in a browser: Martin and David edit
// customers in a small server-rendered web application. Martin opens
// customer 129; David, opening it too, is told at once "Locked by martin
// since 10:00" and may ask to edit; an admin may take it over, and Martin's
// page says so within seconds; Martin's lock lives while his page is open
// (offlinelock.js renews it) and ends when he leaves the page, signs out,
// or his session expires.
//
//	go run ./examples/editor                  # on an embedded SQLite file, at 127.0.0.1:8081
//	go run ./examples/editor -dsn 'host=127.0.0.1 user=postgres dbname=test'
//	go run ./examples/editor -dsn 'root@tcp(127.0.0.1:3306)/test?parseTime=true'
//
// Sign in with any user name and the password "demo"; "admin" may take
// over anyone's lock. The password check is a stand-in for real authentication;
// the sessions are gorilla/sessions cookies (sessions.go), and a sign-out or
// an idle session releases its locks.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
	"github.com/offlinelock/offlinelock/httplock"
)

// Customer is the record Martin and David edit: free to read, its writes
// need its lock.
type Customer struct {
	ID     uint `gorm:"primaryKey" lock:"exclusive_write"`
	Name   string
	Credit int
	// Version counts the customer's saves: a save that names the version
	// its page loaded (the autosave page's) is refused when it changed
	// since, the optimistic check of the gap between a page's load and
	// the lock its first change takes (autosave.go).
	Version int `gorm:"not null;default:1"`
}

// options are the example's timings: the lock's lease and how often the
// page renews it, how long a session lives without a request, how long a
// holder must have been idle before anyone may take over.
type options struct {
	ttl, renew, sessionIdle, idleTakeOver time.Duration
	watchEvery                            time.Duration
}

func defaults() options {
	return options{ttl: 2 * time.Minute, renew: 40 * time.Second, sessionIdle: 30 * time.Minute,
		idleTakeOver: 90 * time.Second, watchEvery: time.Second}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "address to listen on")
	dsn := flag.String("dsn", "", "PostgreSQL or MySQL/MariaDB DSN of a scratch database; default: an embedded SQLite file")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	l, err := net.Listen("tcp", *addr)
	if err == nil {
		fmt.Printf("editor listening on http://%s\n", l.Addr())
		err = serve(ctx, l, *dsn, defaults())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "editor:", err)
		os.Exit(1)
	}
}

// serve runs the editor on l until ctx is done.
func serve(ctx context.Context, l net.Listener, dsn string, o options) error {
	app, closeDB, err := build(ctx, dsn, o)
	if err != nil {
		return err
	}
	defer closeDB()
	go app.sweep(ctx, 5*time.Second)
	srv := &http.Server{Handler: app.routes(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
		srv.Close() // event streams do not end by themselves
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// app is the editor: its database, locks, lock endpoints and sessions.
type app struct {
	db       *gorm.DB
	locks    *offlinelock.Plugin
	api      *httplock.Server
	sessions *sessions
	opts     options
	log      *slog.Logger
}

// build opens the database, registers the plugin, creates the customers
// and returns the application, and what closes its database.
func build(ctx context.Context, dsn string, o options) (*app, func(), error) {
	db, closeDB, err := open(dsn)
	if err != nil {
		return nil, nil, err
	}
	a := &app{db: db, opts: o, log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	a.locks = offlinelock.New(offlinelock.Config{Logger: a.log, TTL: o.ttl, WatchEvery: o.watchEvery,
		Authorize: func(ctx context.Context, action string, _ offlinelock.Lock) error {
			if u, _ := offlinelock.OwnerFrom(ctx); action == "take_over" && u.User != "" {
				return nil // the Server's take-over policy decided already
			}
			return errors.New("not allowed: " + action)
		}})
	a.sessions = newSessions(o.sessionIdle, a.ended)
	err = db.Use(a.locks)
	if err == nil {
		err = seed(ctx, db)
	}
	if err == nil {
		a.api, err = httplock.New(httplock.Config{Locks: a.locks, DB: db, Logger: a.log, DefaultTTL: o.ttl,
			Principal: a.principal, LoginSession: a.login, TakeOver: a.mayTakeOver,
			Resources: []httplock.Resource{{Name: "customers", Model: &Customer{}, Allow: mayDo}}})
	}
	if err != nil {
		closeDB()
		return nil, nil, err
	}
	return a, closeDB, nil
}

// principal and login are httplock's Config.Principal and LoginSession:
// the signed-in user, and the id of their sign-in.
func (a *app) principal(r *http.Request) (string, error) {
	s, ok := a.sessions.of(r)
	if !ok {
		return "", errors.New("not signed in")
	}
	return s.user, nil
}

func (a *app) login(r *http.Request) (string, error) {
	s, ok := a.sessions.of(r)
	if !ok {
		return "", errors.New("not signed in")
	}
	return s.login, nil
}

// mayDo is the customers' Resource.Allow: "guest" may look at a record
// and its lock (read, watch), and do nothing else with it.
func mayDo(_ *http.Request, principal, action, _ string) error {
	if principal == "guest" && action != httplock.ActionRead && action != httplock.ActionWatch {
		return errors.New("guests may only look")
	}
	return nil
}

// mayTakeOver is the take-over policy: the holder themself (another tab),
// an admin, or anyone once the holder's page has stopped renewing for
// idleTakeOver.
func (a *app) mayTakeOver(r *http.Request, principal string, holder offlinelock.Lock) error {
	idle := a.opts.ttl - time.Until(holder.ExpiresAt)
	if principal == "admin" || holder.Owner.User == principal || idle >= a.opts.idleTakeOver {
		return nil
	}
	return fmt.Errorf("%s is still editing; ask them, or an admin", holder.Owner.User)
}

// ended releases the locks of a session that signed out or expired.
func (a *app) ended(s session) {
	if _, err := a.api.EndLogin(context.Background(), s.user, s.login); err != nil {
		a.log.Warn("editor: releasing a session's locks", "user", s.user, "error", err)
	}
}

// sweep ends idle sessions every interval until ctx is done.
func (a *app) sweep(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			a.sessions.expire()
		}
	}
}

// seed creates the customers table and the seed's customer 129.
func seed(ctx context.Context, db *gorm.DB) error {
	if err := db.AutoMigrate(&Customer{}); err != nil {
		return err
	}
	admin := db.WithContext(offlinelock.Bypass(ctx, "demo data"))
	for _, c := range []Customer{{ID: 129, Name: "Acme Widgets", Credit: 5000, Version: 1}, {ID: 130, Name: "Globex", Credit: 1200, Version: 1}} {
		if err := admin.Save(&c).Error; err != nil {
			return err
		}
	}
	return nil
}

func open(dsn string) (*gorm.DB, func(), error) {
	cfg := &gorm.Config{Logger: logger.Discard}
	if dsn != "" {
		var d gorm.Dialector = postgres.Open(dsn)
		if strings.Contains(dsn, "@tcp(") || strings.Contains(dsn, "@unix(") {
			d = mysql.Open(dsn)
		}
		db, err := gorm.Open(d, cfg)
		return db, func() {}, err
	}
	dir, err := os.MkdirTemp("", "offlinelock-editor")
	if err != nil {
		return nil, nil, err
	}
	db, err := gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(filepath.Join(dir, "editor.db"))), cfg)
	return db, func() { os.RemoveAll(dir) }, err
}
