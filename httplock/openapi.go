package httplock

import _ "embed"

//go:embed openapi.yaml
var openAPI []byte

// OpenAPI returns the OpenAPI 3 document of the lock and admin endpoints.
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }
