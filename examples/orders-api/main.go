// Command orders-api serves the order API of the pessimistic locking HTTP
// pattern (seed 003): lock and unlock endpoints, GET /openapi.yaml, and a
// PATCH /orders/{id} refused with 423 unless the caller holds the order's
// lock. The seed's own session runs against it word for word (its test,
// TestSeedSession, replays testdata/seed003_session.txt).
//
//	go run ./examples/orders-api                  # on an embedded SQLite file, at 127.0.0.1:8080
//	go run ./examples/orders-api -dsn 'host=127.0.0.1 user=postgres dbname=test' -addr 127.0.0.1:9090
//	go run ./examples/orders-api -dsn 'root@tcp(127.0.0.1:3306)/test?parseTime=true'
//
// API clients name themselves with "Authorization: Bearer <user>"; a
// browser signs in at /login (any user name, the password "demo") and
// carries a session cookie. Both are stand-ins for real authentication, for
// the demonstration only; "admin" is the operator.
package main

import (
	"context"
	"encoding/json"
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

// Order is the order of the seed's pattern, with its fields. It may be read
// by anyone; changing it needs its lock.
type Order struct {
	OrderID    string    `gorm:"primaryKey;column:id" lock:"exclusive_write" json:"orderId"`
	Status     string    `json:"status"`
	SeatNumber string    `json:"seatNumber"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	dsn := flag.String("dsn", "", "PostgreSQL or MySQL/MariaDB DSN of a scratch database; default: an embedded SQLite file")
	sqlitePath := flag.String("sqlite", "", "the SQLite file to use and keep (for the offlinelock command, say); default: a temporary one, removed at exit")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "orders-api:", err)
		os.Exit(1)
	}
	// Everything that can fail does so before the server says it listens.
	handler, closeAll, err := build(ctx, *dsn, *sqlitePath)
	if err != nil {
		fail(err)
	}
	defer closeAll()
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		fail(err)
	}
	fmt.Printf("orders-api listening on http://%s\n", l.Addr())
	if err := run(ctx, l, handler); err != nil {
		fail(err)
	}
}

// serve runs the API on l until ctx is done, on dsn (or a temporary
// SQLite file).
func serve(ctx context.Context, l net.Listener, dsn string) error {
	handler, closeAll, err := build(ctx, dsn, "")
	if err != nil {
		return err
	}
	defer closeAll()
	return run(ctx, l, handler)
}

// build opens the database, registers the plugin, creates the demo order
// and returns the API's handler, and what closes it all.
func build(ctx context.Context, dsn, sqlitePath string) (http.Handler, func(), error) {
	db, cleanup, err := open(dsn, sqlitePath)
	if err != nil {
		return nil, nil, err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	meters, metrics, err := newMetrics()
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	closeAll := func() {
		meters.Shutdown(context.Background())
		cleanup()
	}
	locks := offlinelock.New(offlinelock.Config{
		Logger: log, MeterProvider: meters,
		Authorize: func(ctx context.Context, action string, _ offlinelock.Lock) error {
			if o, _ := offlinelock.OwnerFrom(ctx); o.User == "admin" {
				return nil
			}
			return errors.New("only admin may " + action)
		},
	})
	if err := db.Use(locks); err != nil {
		closeAll()
		return nil, nil, err
	}
	if err := createOrders(ctx, db); err != nil {
		closeAll()
		return nil, nil, err
	}
	users := newAuth()
	api, err := httplock.New(httplock.Config{Locks: locks, DB: db, Principal: users.principal, Admin: users.admin, TakeOver: users.takeOver, Logger: log,
		Resources: []httplock.Resource{{Name: "orders", Model: &Order{}, IDName: "orderId"}}})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return routes(db, api, metrics, newSignIn(users, log)), closeAll, nil
}

// run serves handler on l until ctx is done.
func run(ctx context.Context, l net.Listener, handler http.Handler) error {
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// createOrders creates the orders table and its demo orders.
func createOrders(ctx context.Context, db *gorm.DB) error {
	if err := db.AutoMigrate(&Order{}); err != nil {
		return err
	}
	if db.Dialector.Name() == "mysql" {
		// MySQL's default collations take "ord_1", "ORD_1" and "ord_1 " as
		// one order; the plugin refuses such a key. Binary and not padding,
		// each spelling is its own order, as it is its own lock.
		var version string
		if err := db.Raw("SELECT VERSION()").Scan(&version).Error; err != nil {
			return err
		}
		collation := "utf8mb4_0900_bin" // MySQL 8.0
		if strings.Contains(version, "MariaDB") {
			collation = "utf8mb4_nopad_bin"
		}
		if err := db.Exec("ALTER TABLE orders MODIFY id VARCHAR(191) CHARACTER SET utf8mb4 COLLATE " + collation + " NOT NULL").Error; err != nil {
			return err
		}
	}
	seed := db.WithContext(offlinelock.Bypass(ctx, "demo data"))
	for _, id := range []string{"ord_99182", "ord_40017", "ord_31337"} { // the seed's order, and two more for the console
		if err := seed.Save(&Order{OrderID: id, Status: "PENDING"}).Error; err != nil {
			return err
		}
	}
	return nil
}

// routes are the example's endpoints: the lock API, the admin API and
// console, the browser's sign-in, the metrics, and the order itself.
func routes(db *gorm.DB, api *httplock.Server, metrics http.Handler, signIn *signIn) *http.ServeMux {
	mux := http.NewServeMux()
	api.Register(mux)
	mux.Handle("/admin/", api.AdminHandler())
	// The lock console (GET /admin/console, POST /admin/console/release…);
	// a browser that comes without credentials is sent to /login first.
	console := api.ConsoleHandler()
	mux.Handle(consolePath, signIn.first(console))
	mux.Handle(consolePath+"/", console)
	signIn.register(mux) // GET and POST /login, POST /logout
	mux.Handle("GET /metrics", metrics)
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		var o Order
		if err := db.WithContext(r.Context()).First(&o, "id = ?", r.PathValue("id")).Error; err != nil {
			api.WriteError(w, r, err)
			return
		}
		o.UpdatedAt = o.UpdatedAt.UTC().Truncate(time.Millisecond) // as MySQL keeps it
		writeJSON(w, orderJSON{ID: o.OrderID, Order: o})
	})
	// The Middleware refuses the write before patchOrder runs unless the
	// caller holds the order's lock; the plugin checks the write again.
	mux.Handle("PATCH /orders/{id}", api.Middleware(patchOrder(db, api)))
	return mux
}

// patchOrder changes an order's status and seatNumber; it does nothing
// about locks itself.
func patchOrder(db *gorm.DB, api *httplock.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Status     *string `json:"status"`
			SeatNumber *string `json:"seatNumber"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			api.WriteError(w, r, fmt.Errorf("%w: body", offlinelock.ErrInvalid))
			return
		}
		changes := map[string]any{}
		if in.Status != nil {
			changes["status"] = *in.Status
		}
		if in.SeatNumber != nil {
			changes["seat_number"] = *in.SeatNumber
		}
		o := Order{OrderID: r.PathValue("id")}
		tx := db.WithContext(r.Context())
		if len(changes) > 0 {
			if err := tx.Model(&o).Updates(changes).Error; err != nil {
				api.WriteError(w, r, err)
				return
			}
		}
		if err := tx.First(&o, "id = ?", o.OrderID).Error; err != nil {
			api.WriteError(w, r, err)
			return
		}
		o.UpdatedAt = o.UpdatedAt.UTC().Truncate(time.Millisecond) // as MySQL keeps it
		writeJSON(w, orderJSON{ID: o.OrderID, Order: o})
	})
}

// orderJSON is an order as the seed's PATCH answers it: "id", and the
// order's fields ("orderId" kept for clients of the GET).
type orderJSON struct {
	ID string `json:"id"`
	Order
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func open(dsn, sqlitePath string) (*gorm.DB, func(), error) {
	cfg := &gorm.Config{Logger: logger.Discard}
	if dsn != "" {
		db, err := gorm.Open(dialector(dsn), cfg)
		return db, func() {}, err
	}
	if sqlitePath != "" { // kept: the offlinelock command can be pointed at it
		db, err := gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(sqlitePath)), cfg)
		return db, func() {}, err
	}
	dir, err := os.MkdirTemp("", "offlinelock-orders-api")
	if err != nil {
		return nil, nil, err
	}
	db, err := gorm.Open(sqlite.Open(offlinelock.SQLiteDSN(filepath.Join(dir, "orders.db"))), cfg)
	return db, func() { os.RemoveAll(dir) }, err
}

// dialector opens dsn with the driver its form names: a go-sql-driver/mysql
// DSN (user@tcp(host:3306)/db?parseTime=true) opens MySQL or MariaDB, any
// other PostgreSQL.
func dialector(dsn string) gorm.Dialector {
	if strings.Contains(dsn, "@tcp(") || strings.Contains(dsn, "@unix(") || strings.HasPrefix(dsn, "tcp(") {
		return mysql.Open(dsn)
	}
	return postgres.Open(dsn)
}
