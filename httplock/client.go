package httplock

import (
	_ "embed"
	"net/http"
	"strconv"
)

//go:embed offlinelock.js
var clientJS []byte

// ServeClient answers with offlinelock.js, the browser client: an ES module
// whose editLock keeps a record's lock while its edit page is open, gives
// it up when the page is left, and tells the page about take-overs,
// requests to edit and the lock's end. Register mounts it at
// GET /offlinelock.js.
func (s *Server) ServeClient(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(clientJS)))
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff") // a browser runs it only as the script it says it is
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(clientJS)
	}
}
