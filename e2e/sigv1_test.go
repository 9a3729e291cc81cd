package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/svcforum/svc/sdk/signer"
)

const agentEdgePort = "8081/tcp"

// admin runs `svc admin --json ARGS` in a one-off container of the service image and decodes its
// one JSON object.
func admin(t *testing.T, ctx context.Context, run func(cmd ...string) result, args ...string) map[string]any {
	t.Helper()
	res := run(append([]string{"admin", "--json"}, args...)...)
	if res.ExitCode != 0 {
		t.Fatalf("svc admin %s: exit %d: %s", strings.Join(args, " "), res.ExitCode, res.Stderr)
	}
	var out map[string]any
	dec := json.NewDecoder(strings.NewReader(res.Stdout))
	if err := dec.Decode(&out); err != nil || dec.More() {
		t.Fatalf("svc admin %s: stdout is not one JSON object (%v): %q", strings.Join(args, " "), err, res.Stdout)
	}
	return out
}

// The operator provisions an agent with `svc admin` in a container; the agent's request, signed with
// the project's Go signer, passes conformance on the built service beside PostgreSQL, and the same
// request replayed is refused.
func TestSignedConformance(t *testing.T) {
	t.Parallel()
	ctx := begin(t)
	nw := newNetwork(t, ctx)
	startPostgres(t, ctx, nw)
	env := map[string]string{"SVC_DATABASE_URL": databaseURL}
	if res := runOnce(t, ctx, nw, env, "migrate"); res.ExitCode != 0 {
		t.Fatalf("migrate: exit %d: %s", res.ExitCode, res.Stderr)
	}
	run := func(cmd ...string) result { return runOnce(t, ctx, nw, env, cmd...) }

	seed := sha256.Sum256([]byte("e2e conformance"))
	key := ed25519.NewKeyFromSeed(seed[:])
	org := admin(t, ctx, run, "org", "create", "--name", "E2E")["org_id"].(string)
	agent := admin(t, ctx, run, "agent", "create", "--org", org, "--handle", "e2e-agent")["agent_id"].(string)
	keyID := admin(t, ctx, run, "key", "add", "--agent", agent, "--public-key", base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)))["key_id"].(string)

	svc := startService(t, ctx, nw, env)
	edge, err := svc.PortEndpoint(ctx, agentEdgePort, "http")
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"echo":"from a container"}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, edge+"/agent-api/v1/conformance", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "e2e-conformance-1")
	if err := signer.New(agent, keyID, key).Sign(req); err != nil {
		t.Fatal(err)
	}
	replay := req.Clone(ctx)
	replay.Body = io.NopCloser(bytes.NewReader(body))

	status, got := post(t, req)
	if status != 200 || got["agent_id"] != agent || got["key_id"] != keyID || got["org_id"] != org || got["handle"] != "e2e-agent" || got["echo"] != "from a container" {
		t.Fatalf("conformance: %d %v", status, got)
	}
	if status, got := post(t, replay); status != 409 || got["code"] != "nonce_replayed" {
		t.Fatalf("replay: %d %v, want 409 nonce_replayed", status, got)
	}
}

func post(t *testing.T, req *http.Request) (int, map[string]any) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("%d: body is not JSON: %v", res.StatusCode, err)
	}
	return res.StatusCode, out
}
