package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	legacyrouter "github.com/getkin/kin-openapi/routers/legacy"

	"github.com/offlinelock/offlinelock/httplock"
)

// The seed's session (section 20.4 of seed 003) is copied verbatim into
// testdata/seed003_session.txt, and its OpenAPI document (section 20.6) into
// testdata/seed003_openapi.yaml.
const (
	seedSession  = "testdata/seed003_session.txt"
	seedOpenAPI  = "testdata/seed003_openapi.yaml"
	seedBearer   = "Bearer eyJhbGciOi..." // the seed's one bearer token, for both of its clients
	seedAPIHost  = "api.example.com"
	clientPrefix = "usr_client_" // the seed's "Client 1" is usr_client_1 (its lockedBy)
)

// exchange is one request of the seed's session and the response the seed
// shows for it, as written there.
type exchange struct {
	client            string // the bearer user standing for the seed's "Client N"
	request, response string
	step              string
}

// TestSeedSession replays the seed's session against the running example
// on every database: each request goes out as the seed writes it (method,
// path, Host, headers, body byte for byte) but for two values the seed
// cannot fix: the bearer token, which here names the client (the seed uses
// one token for both), and the Lock-Token, which is the one the server
// issued in step 1 (the seed's lk_tok_88291a is its own server's). Each
// response has the seed's status, headers and body fields, and validates
// against the seed's OpenAPI document and against httplock's.
func TestSeedSession(t *testing.T) {
	exchanges := readSession(t)
	if len(exchanges) != 4 {
		t.Fatalf("the seed's session has 4 exchanges, read %d", len(exchanges))
	}
	validators := []validator{loadValidator(t, "the seed's", mustRead(t, seedOpenAPI)), loadValidator(t, "httplock's", httplock.OpenAPI())}
	eachDSN(t, func(t *testing.T, base string) {
		var token, expiresAt string
		for _, ex := range exchanges {
			req := seedRequest(t, ex, base, token)
			resp, body := send(t, req)
			t.Logf("%s: %s %s as %s -> %d %s", ex.step, req.Method, req.URL.Path, ex.client, resp.StatusCode, body)
			for _, v := range validators {
				v.validate(t, req, resp, body)
			}
			want, wantBody := seedResponse(t, ex)
			if resp.StatusCode != want.StatusCode {
				t.Fatalf("%s: %s, want the seed's %s; body %s", ex.step, resp.Status, want.Status, body)
			}
			got := compareBody(t, ex.step, resp, body, want, wantBody, expiresAt)
			if token == "" && got["lockToken"] != nil {
				token, expiresAt = got["lockToken"].(string), got["expiresAt"].(string)
			}
		}
		// Afterwards anyone reads the order as its holder left it.
		req, _ := http.NewRequest("GET", base+"/orders/ord_99182", nil)
		resp, body := send(t, req)
		var o map[string]any
		json.Unmarshal(body, &o)
		if resp.StatusCode != 200 || o["seatNumber"] != "12A" || o["status"] != "CONFIRMED" || o["orderId"] != "ord_99182" {
			t.Fatalf("read after the session: %d %s", resp.StatusCode, body)
		}
		if strings.HasSuffix(t.Name(), "/sqlite") {
			readmeMetrics(t, base)
		}
		// And the service serves its OpenAPI document, for clients to generate code from.
		req, _ = http.NewRequest("GET", base+"/openapi.yaml", nil)
		resp, body = send(t, req)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != httplock.OpenAPIContentType || !bytes.Equal(body, httplock.OpenAPI()) {
			t.Fatalf("GET /openapi.yaml: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	})
}

// readSession splits the seed's section 20.4 into its exchanges: under
// each "N. Client M …" heading, the HTTP message after "Request" and the
// one after "Response" (the prose between them is not part of either).
func readSession(t *testing.T) []exchange {
	heading := regexp.MustCompile(`^\d+\. Client (\d+) `)
	var out []exchange
	var into *string
	for _, line := range strings.Split(string(mustRead(t, seedSession)), "\n") {
		switch m := heading.FindStringSubmatch(line); {
		case m != nil:
			out = append(out, exchange{client: clientPrefix + m[1], step: line})
			into = nil
		case len(out) == 0:
		case line == "Request":
			into = &out[len(out)-1].request
		case line == "Response":
			into = &out[len(out)-1].response
		case into != nil && (*into != "" || regexp.MustCompile(`^(HTTP/1\.1|[A-Z]+ /)`).MatchString(line)):
			*into += line + "\n"
		}
	}
	for i := range out {
		out[i].request = strings.TrimRight(out[i].request, "\n")
		out[i].response = strings.TrimRight(out[i].response, "\n")
	}
	return out
}

// message splits an HTTP message as the seed writes it into its head (with
// the blank line that ends it) and its body.
func message(raw string) (head, body string) {
	head, body, _ = strings.Cut(raw, "\n\n")
	return head + "\n\n", body
}

// seedRequest is ex's request, to be sent to base: the seed's words, with
// the bearer token naming the client and the seed's Lock-Token replaced by
// the issued one.
func seedRequest(t *testing.T, ex exchange, base, token string) *http.Request {
	t.Helper()
	head, body := message(ex.request)
	parsed, err := http.ReadRequest(bufio.NewReader(strings.NewReader(head)))
	if err != nil {
		t.Fatalf("%s: the seed's request: %v", ex.step, err)
	}
	if parsed.Host != seedAPIHost || parsed.Header.Get("Authorization") != seedBearer {
		t.Fatalf("%s: the seed's request changed: Host %q, Authorization %q", ex.step, parsed.Host, parsed.Header.Get("Authorization"))
	}
	req, err := http.NewRequest(parsed.Method, base+parsed.RequestURI, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = parsed.Host
	req.Header = parsed.Header.Clone()
	req.Header.Set("Authorization", "Bearer "+ex.client)
	if req.Header.Get("Lock-Token") != "" {
		if token == "" {
			t.Fatalf("%s: a Lock-Token before the session got one", ex.step)
		}
		req.Header.Set("Lock-Token", token)
	}
	return req
}

// seedResponse is the response the seed shows for ex, and its JSON body.
func seedResponse(t *testing.T, ex exchange) (*http.Response, map[string]any) {
	t.Helper()
	head, body := message(ex.response)
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(head)), nil)
	if err != nil {
		t.Fatalf("%s: the seed's response: %v", ex.step, err)
	}
	var m map[string]any
	if body != "" {
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("%s: the seed's response body: %v", ex.step, err)
		}
	}
	return resp, m
}

// sameValue are the fields whose values the seed's example fixes; the others
// (tokens, times, type URIs, wording) are this server's own, checked for
// their form.
var sameValue = map[string]bool{"id": true, "orderId": true, "lockedBy": true, "ttlRemainingSeconds": true, "seatNumber": true, "status": true}

// compareBody checks that resp has want's headers and every field of
// wantBody, and returns resp's JSON body. lockedUntil is the lock's expiry
// (expiresAt of step 1, to the second). The seed's order responses call
// the id "id", its lock response "orderId": the example answers both.
func compareBody(t *testing.T, step string, resp *http.Response, body []byte, want *http.Response, wantBody map[string]any, expiresAt string) map[string]any {
	t.Helper()
	if ct := want.Header.Get("Content-Type"); resp.Header.Get("Content-Type") != ct {
		t.Errorf("%s: Content-Type %q, the seed's %q", step, resp.Header.Get("Content-Type"), ct)
	}
	var got map[string]any
	if wantBody == nil {
		if len(body) != 0 {
			t.Errorf("%s: a body %s where the seed has none", step, body)
		}
		return nil
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%s: %v: %s", step, err, body)
	}
	if want.Header.Get("Lock-Token") != "" && (resp.Header.Get("Lock-Token") == "" || resp.Header.Get("Lock-Token") != got["lockToken"]) {
		t.Errorf("%s: Lock-Token header %q, body's lockToken %v", step, resp.Header.Get("Lock-Token"), got["lockToken"])
	}
	for k, v := range wantBody {
		name := k
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: no %q in %s", step, name, body)
		case sameValue[k] && g != v:
			t.Errorf("%s: %s is %v, the seed's %v", step, k, g, v)
		case k == "expiresAt" || k == "updatedAt":
			if _, err := time.Parse(time.RFC3339Nano, g.(string)); err != nil {
				t.Errorf("%s: %s: %v", step, k, err)
			}
		case k == "lockedUntil":
			until, _ := time.Parse(time.RFC3339Nano, expiresAt)
			if g != until.UTC().Truncate(time.Second).Format(time.RFC3339) {
				t.Errorf("%s: lockedUntil %v, the lock expires at %s", step, g, expiresAt)
			}
		}
	}
	return got
}

func send(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// validator validates responses against one OpenAPI document.
type validator struct {
	name   string
	router routers.Router
}

// loadValidator loads an OpenAPI document; its servers are dropped, since
// the replay runs on a local listener, not at the seed's api.example.com.
func loadValidator(t *testing.T, name string, data []byte) validator {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		t.Fatalf("%s document: %v", name, err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("%s document: %v", name, err)
	}
	doc.Servers = nil
	router, err := legacyrouter.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return validator{name, router}
}

// validate checks that the response to req is one the document allows:
// its status listed for the operation, its headers and body to schema.
func (v validator) validate(t *testing.T, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	vreq := req.Clone(context.Background())
	u := *req.URL
	u.Scheme, u.Host = "", ""
	vreq.URL = &u
	route, params, err := v.router.FindRoute(vreq)
	if err != nil {
		t.Fatalf("%s %s is not in %s document: %v", req.Method, req.URL.Path, v.name, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route},
		Status:                 resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s -> %d does not validate against %s document: %v", req.Method, req.URL.Path, resp.StatusCode, v.name, err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOnlyTheHolderWrites: while usr_client_1 holds the order, another
// client's PATCH is 423 naming the holder whatever its body and token, and
// changes nothing; once the order is free, a PATCH without a token is 423
// lock-required. Every response validates against both documents.
func TestOnlyTheHolderWrites(t *testing.T) {
	validators := []validator{loadValidator(t, "the seed's", mustRead(t, seedOpenAPI)), loadValidator(t, "httplock's", httplock.OpenAPI())}
	eachDSN(t, func(t *testing.T, base string) {
		call := func(method, path, user, token, body string) (int, map[string]any) {
			t.Helper()
			req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+user)
			req.Header.Set("Content-Type", "application/json")
			if token != "" {
				req.Header.Set("Lock-Token", token)
			}
			resp, raw := send(t, req)
			for _, v := range validators {
				v.validate(t, req, resp, raw)
			}
			var m map[string]any
			json.Unmarshal(raw, &m)
			return resp.StatusCode, m
		}
		status, lock := call("POST", "/orders/ord_99182/lock", "usr_client_1", "", `{"ttlSeconds": 300}`)
		if status != 201 {
			t.Fatalf("lock: %d %v", status, lock)
		}
		token := lock["lockToken"].(string)
		for _, r := range []struct{ token, body string }{{"", ""}, {"", `{}`}, {"", `{"colour": "red"}`}, {token, `{"seatNumber": "1A"}`}, {"", `{"seatNumber": "1A", "lockToken": "` + token + `"}`}} {
			status, p := call("PATCH", "/orders/ord_99182", "usr_client_2", r.token, r.body)
			if status != 423 || p["lockedBy"] != "usr_client_1" || p["lockedUntil"] == nil {
				t.Errorf("usr_client_2 PATCH %s (token %v): %d %v", r.body, r.token != "", status, p)
			}
		}
		if status, _ := call("POST", "/orders/ord_99182/unlock", "usr_client_1", token, ""); status != 204 {
			t.Fatalf("unlock: %d", status)
		}
		status, p := call("PATCH", "/orders/ord_99182", "usr_client_2", "", `{"seatNumber": "1A"}`)
		if status != 423 || p["type"] != httplock.ProblemBase+"lock-required" {
			t.Errorf("a tokenless PATCH of a free order: %d %v", status, p)
		}
		req, _ := http.NewRequest("GET", base+"/orders/ord_99182", nil)
		_, raw := send(t, req)
		var o map[string]any
		json.Unmarshal(raw, &o)
		if o["seatNumber"] != "" || o["status"] != "PENDING" {
			t.Errorf("the order changed: %s", raw)
		}
	})
}

// readmeMetrics: after the seed's session and the read, and a second
// client's lock, GET /metrics prints the README's sample (its durations
// aside): the sample comes from this test, and cannot go stale.
func readmeMetrics(t *testing.T, base string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/orders/ord_99182/lock", nil)
	req.Header.Set("Authorization", "Bearer usr_client_2")
	if resp, body := send(t, req); resp.StatusCode != http.StatusCreated {
		t.Fatalf("a second client's lock: %d %s", resp.StatusCode, body)
	}
	req, _ = http.NewRequest("GET", base+"/metrics", nil)
	_, body := send(t, req)
	readme := string(mustRead(t, "../../README.md"))
	_, sample, ok := strings.Cut(readme, "serves them for Prometheus at `GET /metrics`")
	if !ok {
		t.Fatal("the README does not say where the metrics are served")
	}
	if _, sample, ok = strings.Cut(sample, "```\n"); !ok {
		t.Fatal("the README has no /metrics sample")
	}
	sample, _, _ = strings.Cut(sample, "```")
	got := map[string]bool{}
	for _, l := range strings.Split(string(body), "\n") {
		got[l] = true
	}
	for _, l := range strings.Split(strings.TrimSpace(sample), "\n") {
		if strings.Contains(l, "_sum{") {
			continue // a duration: this run's own
		}
		if !got[l] {
			t.Errorf("the README's /metrics sample line is not printed: %s", l)
		}
	}
	// The statement histogram's buckets fit lock statements (0.5 ms to
	// 5 s), not OpenTelemetry's defaults (0 to 10,000 s).
	var les []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "offlinelock_statement_duration_seconds_bucket{") && strings.Contains(l, `db_operation_name="INSERT"`) {
			_, le, _ := strings.Cut(l, `le="`)
			le, _, _ = strings.Cut(le, `"`)
			les = append(les, le)
		}
	}
	if want := "0.0005 0.001 0.0025 0.005 0.01 0.025 0.05 0.1 0.25 0.5 1 2.5 5 +Inf"; strings.Join(les, " ") != want {
		t.Errorf("the statement histogram's buckets: %v, want %s", les, want)
	}
	if t.Failed() {
		t.Logf("GET /metrics printed:\n%s", body)
	}
}
