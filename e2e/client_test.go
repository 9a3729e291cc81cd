package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/modules/postgres"
	"github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/sdk"
	"github.com/svcforum/svc/sdk/signer"
)

// agentPrefix is where the signed agent plane is mounted on an agent channel.
const agentPrefix = "/agent-api/v1"

// wirePricingFile is the pricing file of WIRE.md section 8.
const wirePricingFile = `{"pricing_version": "2026-11", "grace_period_days": 30, "per_attachment": 1,
 "prices": {"create_thread": 10, "create_reply": 5, "vote": 1, "clear_vote": 0, "tombstone": 1,
            "manage_thread_attachments": 2, "manage_reply_attachments": 2, "media_upload": 3}}`

// exchange is an HTTP response read whole, with its header.
type exchange struct {
	Status int
	Header http.Header
	Body   []byte
}

func (x exchange) String() string {
	return fmt.Sprintf("%d %s %s", x.Status, x.Header.Get("Content-Type"), x.Body)
}

// sendRequest sends req with the harness's HTTP client (its timeout, and req's context) and reads the
// whole answer; a transport error fails the test.
func sendRequest(t *testing.T, req *http.Request) exchange {
	t.Helper()
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read the body: %v", req.Method, req.URL, err)
	}
	return exchange{Status: res.StatusCode, Header: res.Header, Body: body}
}

// fetch sends an unsigned request of method to url with body (none when "").
func fetch(t *testing.T, ctx context.Context, method, url, body string) exchange {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return sendRequest(t, req)
}

// mustFetch GETs url, unsigned.
func mustFetch(t *testing.T, ctx context.Context, url string) exchange {
	t.Helper()
	return fetch(t, ctx, http.MethodGet, url, "")
}

// jsonBody checks x's status and decodes its JSON object.
func jsonBody(t *testing.T, what string, x exchange, status int) map[string]any {
	t.Helper()
	if x.Status != status {
		t.Fatalf("%s: %s, want %d", what, x, status)
	}
	var m map[string]any
	if err := json.Unmarshal(x.Body, &m); err != nil {
		t.Fatalf("%s: body is not a JSON object (%v): %s", what, err, x.Body)
	}
	return m
}

// isProblem reports whether x is an RFC 9457 problem with status and code.
func isProblem(x exchange, status int, code string) bool {
	if x.Status != status || !strings.HasPrefix(x.Header.Get("Content-Type"), "application/problem+json") {
		return false
	}
	var p struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
	}
	return json.Unmarshal(x.Body, &p) == nil && p.Status == status && p.Code == code
}

// wantProblem fails the test unless x is the problem status/code.
func wantProblem(t *testing.T, what string, x exchange, status int, code string) {
	t.Helper()
	if !isProblem(x, status, code) {
		t.Errorf("%s: %s, want a %d %s problem (application/problem+json)", what, x, status, code)
	}
}

// agentIdentity is an agent the operator registered, with its key and the project's signer.
type agentIdentity struct {
	OrgID, AgentID, KeyID, Handle string
	Key                           ed25519.PrivateKey
	Signer                        *signer.Signer
}

// addAgent registers an agent of org with a key derived from its handle, through `svc admin` run by run.
func addAgent(t *testing.T, ctx context.Context, run func(cmd ...string) result, org, handle string) agentIdentity {
	t.Helper()
	seed := sha256.Sum256([]byte("e2e key " + handle))
	key := ed25519.NewKeyFromSeed(seed[:])
	agent, _ := admin(t, ctx, run, "agent", "create", "--org", org, "--handle", handle)["agent_id"].(string)
	keyID, _ := admin(t, ctx, run, "key", "add", "--agent", agent, "--public-key", base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)))["key_id"].(string)
	if agent == "" || keyID == "" {
		t.Fatalf("agent %q with key %q: an identifier is missing", agent, keyID)
	}
	return agentIdentity{OrgID: org, AgentID: agent, KeyID: keyID, Handle: handle, Key: key, Signer: signer.New(agent, keyID, key)}
}

// sdkClient is a client of the Go SDK signing as id on replica s. The service names itself baseURL,
// which does not resolve here: the client's transport sends what is addressed there (the discovery
// document's locations, the public plane) to s's public port, and id's agent plane is s's agent edge.
// Each request is sent once: an answer the SDK would retry is a failure for the test to see.
func sdkClient(t *testing.T, ctx context.Context, s *service, id agentIdentity) *sdk.Client {
	t.Helper()
	named, _ := url.Parse(baseURL)
	public, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	edge := edgeOf(t, ctx, s)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Timeout: httpClient.Timeout, Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.URL.Host == named.Host {
			req = req.Clone(req.Context())
			req.URL.Scheme, req.URL.Host, req.Host = public.Scheme, public.Host, ""
		}
		return tr.RoundTrip(req)
	})}
	c, err := sdk.New(ctx, baseURL, &sdk.Identity{AgentID: id.AgentID, KeyID: id.KeyID, PrivateKey: id.Key, AgentAPI: edge + agentPrefix},
		sdk.WithHTTPClient(hc), sdk.WithRetryPolicy(sdk.RetryPolicy{Attempts: 1}))
	if err != nil {
		t.Fatalf("SDK client of %s on %s: %v", id.Handle, s.URL, err)
	}
	return c
}

// edgeOf is the URL of s's agent edge on this host.
func edgeOf(t *testing.T, ctx context.Context, s *service) string {
	t.Helper()
	edge, err := s.PortEndpoint(ctx, agentEdgePort, "http")
	if err != nil {
		t.Fatalf("e2e: agent edge of the service: %v", err)
	}
	return edge
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// signedRequest builds a request of id to base+agentPrefix+path, signed with the project's signer. A
// POST carries body as JSON and idemKey as its Idempotency-Key; a GET carries neither.
func signedRequest(t *testing.T, ctx context.Context, id agentIdentity, method, base, path, idemKey, body string) *http.Request {
	t.Helper()
	var r io.Reader
	if method != http.MethodGet {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+agentPrefix+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", idemKey)
	}
	if err := id.Signer.Sign(req); err != nil {
		t.Fatalf("sign %s %s: %v", method, path, err)
	}
	return req
}

// signedSend signs and sends a request of id (see signedRequest).
func signedSend(t *testing.T, ctx context.Context, id agentIdentity, method, base, path, idemKey, body string) exchange {
	t.Helper()
	return sendRequest(t, signedRequest(t, ctx, id, method, base, path, idemKey, body))
}

// replayTo returns the exact bytes of a request sent earlier with body (request line, headers, Host
// and body), addressed to another listener at base.
func replayTo(t *testing.T, ctx context.Context, sent *http.Request, body, base string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, sent.Method, base+sent.URL.RequestURI(), bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = sent.Header.Clone()
	req.Host = sent.URL.Host
	return req
}

// runOnceWith is runOnce with more customizers of the one-off container, such as files copied into it
// before it starts (the image has no shell to write them).
func runOnceWith(t *testing.T, ctx context.Context, nw *testcontainers.DockerNetwork, env map[string]string, more []testcontainers.ContainerCustomizer, cmd ...string) result {
	t.Helper()
	image := serviceImage()
	requireImage(t, ctx, image)
	opts := append([]testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(tclog.TestLogger(t)),
		testcontainers.WithLabels(dbtest.Labels()),
		network.WithNetwork(nil, nw),
		testcontainers.WithEnv(env),
		testcontainers.WithCmd(cmd...),
		testcontainers.WithWaitStrategy(wait.ForExit().WithExitTimeout(time.Minute)),
	}, more...)
	c, err := testcontainers.Run(ctx, image, opts...)
	cleanup(t, c)
	if err != nil {
		t.Fatalf("e2e: run %s %s: %v", image, strings.Join(cmd, " "), err)
	}
	state, err := c.State(ctx)
	if err != nil {
		t.Fatalf("e2e: state of %s %s: %v", image, strings.Join(cmd, " "), err)
	}
	if state.Running {
		t.Fatalf("e2e: %s %s still runs after its exit was awaited", image, strings.Join(cmd, " "))
	}
	stdout, stderr := streams(t, ctx, c.GetContainerID())
	return result{ExitCode: state.ExitCode, Stdout: stdout, Stderr: stderr}
}

// publishPricing publishes a pricing file with `svc admin pricing publish` in a one-off container, the
// file copied into it, and returns the version it reports.
func publishPricing(t *testing.T, ctx context.Context, nw *testcontainers.DockerNetwork, env map[string]string, content string) string {
	t.Helper()
	const path = "/tmp/pricing.json"
	file := testcontainers.WithFiles(testcontainers.ContainerFile{Reader: strings.NewReader(content), ContainerFilePath: path, FileMode: 0o644})
	run := func(cmd ...string) result {
		return runOnceWith(t, ctx, nw, env, []testcontainers.ContainerCustomizer{file}, cmd...)
	}
	out := admin(t, ctx, run, "pricing", "publish", "--file", path)
	version, _ := out["pricing_version"].(string)
	if version == "" || len(out) != 1 {
		t.Fatalf("pricing publish: %v", out)
	}
	return version
}

// createDatabase creates another database in the PostgreSQL container of startPostgres and returns its
// URL from the service's container.
func createDatabase(t *testing.T, ctx context.Context, pg *postgres.PostgresContainer, name string) string {
	t.Helper()
	code, out, err := pg.Exec(ctx, []string{"psql", "-v", "ON_ERROR_STOP=1", "--no-psqlrc",
		"-d", "postgres://svc:svc@127.0.0.1:5432/svc?sslmode=disable", "-c", "CREATE DATABASE " + name}, tcexec.Multiplexed())
	if err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	if code != 0 {
		b, _ := io.ReadAll(out)
		t.Fatalf("create database %s: psql exit %d: %s", name, code, b)
	}
	return "postgres://svc:svc@" + dbAlias + ":5432/" + name + "?sslmode=disable"
}
