// Package orderclient is the Go client oapi-codegen generates from the
// OpenAPI document that httplock's Server.OpenAPIFor("PATCH") gives an
// application serving its orders (LockOrder, GetLockOrder, UnlockOrder of
// /orders/{orderId}/lock and …/unlock, PatchOrder of the guarded
// PATCH /orders/{orderId}), committed in openapi.yaml. It exists for
// httplock's tests, which keep it honest: openapi.yaml must be what
// OpenAPIFor produces today (TestTheOrderClientIsOfTodaysDocument), the
// client must be generated from it (TestTheOrderClientIsGeneratedFromItsDocument,
// against the document oapi-codegen embeds), and it drives a running server
// through a whole lock lifecycle (TestTheOrderClientDrivesTheLockLifecycle).
//
// After a change of the document, regenerate both (the first line rewrites
// openapi.yaml, the second the client; oapi-codegen.yaml configures it):
//
//	go generate ./tests/httplock/internal/orderclient
package orderclient

//go:generate go test ../.. -count=1 -run ^TestTheOrderClientIsOfTodaysDocument$ -update-orderclient
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml openapi.yaml
