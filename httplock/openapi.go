package httplock

import (
	_ "embed"
	"net/http"
	"strconv"
)

//go:embed openapi.yaml
var openAPI []byte

// OpenAPIContentType is the media type GET /openapi.yaml answers with
// (RFC 9512's YAML; the OpenAPI-specific application/vnd.oai.openapi is
// not yet known to most code generators' fetchers).
const OpenAPIContentType = "application/yaml"

// OpenAPI returns the OpenAPI 3 document of the lock and admin endpoints
// and of the writes Middleware guards.
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }

// ServeOpenAPI answers with the OpenAPI document, so that a client can
// generate its code from the running service. Register mounts it at
// GET /openapi.yaml.
func (s *Server) ServeOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", OpenAPIContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(openAPI)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(openAPI)
	}
}
