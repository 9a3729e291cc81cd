package host

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/sdk/signer"
)

// identity is an agent provisioned with the operator's commands.
type identity struct {
	orgID, agentID, keyID string
	key                   ed25519.PrivateKey
	signer                *signer.Signer
}

// admin runs `svc admin ... --json` on the database of env and decodes its one JSON object.
func admin(t *testing.T, env map[string]string, args ...string) map[string]any {
	t.Helper()
	code, stdout, stderr := runMain(t, env, append([]string{"admin", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("svc admin %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	if strings.Count(stdout, "\n") != 1 {
		t.Fatalf("svc admin %s printed %q, not one line", strings.Join(args, " "), stdout)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("svc admin %s: %v: %q", strings.Join(args, " "), err, stdout)
	}
	return out
}

// provision registers an organisation, an agent and a key with the operator's commands.
func provision(t *testing.T, env map[string]string, handle string) identity {
	t.Helper()
	seed := sha256.Sum256([]byte("host test key " + handle))
	key := ed25519.NewKeyFromSeed(seed[:])
	org := admin(t, env, "org", "create", "--name", "Org of "+handle)["org_id"].(string)
	agent := admin(t, env, "agent", "create", "--org", org, "--handle", handle)["agent_id"].(string)
	keyID := admin(t, env, "key", "add", "--agent", agent, "--public-key", base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)))["key_id"].(string)
	return identity{orgID: org, agentID: agent, keyID: keyID, key: key, signer: signer.New(agent, keyID, key)}
}

// conformance signs and sends one conformance request; it returns the request (to replay it) too.
func conformance(t *testing.T, id identity, url, echo string) (*http.Request, response) {
	t.Helper()
	body := []byte(`{"echo":` + mustJSON(t, echo) + `}`)
	req, err := http.NewRequest(http.MethodPost, url+"/agent-api/v1/conformance", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "conformance-"+strings.ReplaceAll(echo, " ", "-"))
	if err := id.signer.Sign(req); err != nil {
		t.Fatal(err)
	}
	return req, send(t, req)
}

func send(t *testing.T, req *http.Request) response {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{res.StatusCode, res.Header, body}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The operator provisions an agent with svc admin; the agent's signed conformance request passes on
// both channels, and gates and frozen writes set with svc admin reach the running service.
func TestSignedAgentPlaneEndToEnd(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		cfg := testConfig(t, dialect)
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
		id := provision(t, env, "end-to-end")
		r := start(t, cfg, allModules(t))

		for _, l := range []string{ListenerAgentEdge, ListenerAgentPrivate} {
			_, res := conformance(t, id, "http://"+r.listeners.Addr(l), "hello from "+l)
			if res.status != 200 {
				t.Fatalf("%s: %d %s", l, res.status, res.body)
			}
			if err := schema.Published().Validate("conformance-response", res.body); err != nil {
				t.Fatalf("%s: response does not match its schema: %v", l, err)
			}
			var got map[string]string
			_ = json.Unmarshal(res.body, &got)
			if got["agent_id"] != id.agentID || got["key_id"] != id.keyID || got["org_id"] != id.orgID || got["handle"] != "end-to-end" || got["echo"] != "hello from "+l {
				t.Fatalf("%s: %v", l, got)
			}
		}
		// The agent plane is not served on the public listener, and the answer says so.
		_, res := conformance(t, id, "http://"+r.listeners.Addr(ListenerPublic), "public")
		checkProblem(t, res, 404, "agent_plane_elsewhere")

		if out := admin(t, env, "gate", "close", "edge"); out["gate"] != "closed" || out["channel"] != "edge" {
			t.Fatalf("gate close: %v", out)
		}
		_, res = conformance(t, id, "http://"+r.listeners.Addr(ListenerAgentEdge), "closed")
		checkProblem(t, res, 503, "channel_closed")
		if _, res := conformance(t, id, "http://"+r.listeners.Addr(ListenerAgentPrivate), "private"); res.status != 200 {
			t.Fatalf("private channel with the edge closed: %d %s", res.status, res.body)
		}
		admin(t, env, "gate", "open", "edge")
		if _, res := conformance(t, id, "http://"+r.listeners.Addr(ListenerAgentEdge), "reopened"); res.status != 200 {
			t.Fatalf("edge reopened: %d %s", res.status, res.body)
		}

		admin(t, env, "agent", "suspend", "--agent", id.agentID)
		_, res = conformance(t, id, "http://"+r.listeners.Addr(ListenerAgentEdge), "suspended")
		checkProblem(t, res, 403, "agent_suspended")
		admin(t, env, "agent", "resume", "--agent", id.agentID)
		admin(t, env, "key", "revoke", "--key", id.keyID)
		_, res = conformance(t, id, "http://"+r.listeners.Addr(ListenerAgentEdge), "revoked")
		checkProblem(t, res, 403, "key_revoked")
	})
}

// A request replayed on another replica on the same PostgreSQL database is refused: the nonce memory
// is the database's.
func TestReplayOnAnotherReplicaIsRefused(t *testing.T) {
	cfg := testConfig(t, "postgres")
	env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
	id := provision(t, env, "replayer")
	one := start(t, cfg, allModules(t))
	two := start(t, cfg, allModules(t))

	req, res := conformance(t, id, "http://"+one.listeners.Addr(ListenerAgentEdge), "once")
	if res.status != 200 {
		t.Fatalf("first: %d %s", res.status, res.body)
	}
	replay, err := http.NewRequest(req.Method, "http://"+two.listeners.Addr(ListenerAgentEdge)+req.URL.RequestURI(), bytes.NewReader([]byte(`{"echo":"once"}`)))
	if err != nil {
		t.Fatal(err)
	}
	replay.Header = req.Header.Clone()
	checkProblem(t, send(t, replay), 409, "nonce_replayed")
}

// The operator's commands refuse bad input with one line and a non-zero exit, and print JSON.
func TestIdentityCommands(t *testing.T) {
	env := sqliteEnv(t)
	org := admin(t, env, "org", "create", "--name", "Acme")["org_id"].(string)
	env["SVC_AGENT_EDGE_URL"] = "https://agents.example.test/"
	env["SVC_AGENT_PRIVATE_ADDR"] = "127.0.0.1:0"
	env["SVC_AGENT_PRIVATE_URL"] = "http://10.0.0.5:8082"
	created := admin(t, env, "agent", "create", "--org", org, "--handle", "acme-bot")
	agent := created["agent_id"].(string)
	// The agent plane's address is not published: the operator hands it to the agent with its identity.
	if api, _ := created["agent_api"].(map[string]any); len(api) != 2 || api["edge"] != "https://agents.example.test/agent-api/v1" || api["private"] != "http://10.0.0.5:8082/agent-api/v1" {
		t.Fatalf("agent create: agent_api %v", created["agent_api"])
	}
	// With no URL set, each channel's address follows its listener: the base URL's scheme and host, the
	// listener's port; the listener's host when it is not every interface.
	moved := sqliteEnv(t)
	moved["SVC_DATABASE_URL"] = env["SVC_DATABASE_URL"]
	moved["SVC_AGENT_EDGE_ADDR"] = ":9181"
	moved["SVC_AGENT_PRIVATE_ADDR"] = "10.0.0.5:9182"
	// runMain's variables outlive its call within a test: the URLs set above are emptied (unset).
	moved["SVC_AGENT_EDGE_URL"], moved["SVC_AGENT_PRIVATE_URL"] = "", ""
	created = admin(t, moved, "agent", "create", "--org", org, "--handle", "acme-moved")
	if api, _ := created["agent_api"].(map[string]any); len(api) != 2 || api["edge"] != "http://localhost:9181/agent-api/v1" || api["private"] != "http://10.0.0.5:9182/agent-api/v1" {
		t.Fatalf("agent create with the listeners moved: agent_api %v", created["agent_api"])
	}

	seed := sha256.Sum256([]byte("identity commands"))
	private := ed25519.NewKeyFromSeed(seed[:])
	cases := map[string]struct {
		args []string
		want string
	}{
		"private key":    {[]string{"key", "add", "--agent", agent, "--public-key", base64.StdEncoding.EncodeToString(private)}, "private_key_refused"},
		"small order":    {[]string{"key", "add", "--agent", agent, "--public-key", base64.StdEncoding.EncodeToString(append([]byte{1}, make([]byte, 31)...))}, "public_key_rejected"},
		"short key":      {[]string{"key", "add", "--agent", agent, "--public-key", base64.StdEncoding.EncodeToString(make([]byte, 31))}, "public_key_rejected"},
		"unknown agent":  {[]string{"key", "add", "--agent", "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5b", "--public-key", base64.StdEncoding.EncodeToString(private.Public().(ed25519.PublicKey))}, "not_found"},
		"taken handle":   {[]string{"agent", "create", "--org", org, "--handle", "acme-bot"}, "conflict"},
		"bad handle":     {[]string{"agent", "create", "--org", org, "--handle", "Acme Bot"}, "validation_failed"},
		"unknown org":    {[]string{"agent", "create", "--org", "nope", "--handle", "other-bot"}, "not_found"},
		"unknown gate":   {[]string{"gate", "close", "lobby"}, "validation_failed"},
		"two scopes":     {[]string{"writes", "freeze", "--org", org, "--agent", agent}, "not both"},
		"missing handle": {[]string{"agent", "create", "--org", org}, "handle"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, env, append([]string{"admin", "--json"}, c.args...)...)
			if code == 0 || stdout != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q (want one line with %q)", code, stdout, stderr, c.want)
			}
			if strings.Contains(stderr, base64.StdEncoding.EncodeToString(private)) {
				t.Fatal("the private key is echoed")
			}
		})
	}

	if out := admin(t, env, "writes", "freeze", "--org", org); out["scope"] != "org" || out["org_id"] != org || out["frozen"] != true {
		t.Fatalf("freeze: %v", out)
	}
	if out := admin(t, env, "writes", "unfreeze"); out["scope"] != "all" || out["frozen"] != false {
		t.Fatalf("unfreeze: %v", out)
	}
	// A switch command returns once the change is in force on every replica, and says from when.
	if out := admin(t, env, "writes", "pause"); out["writes_paused"] != true || out["in_force_at"] == nil {
		t.Fatalf("pause: %v", out)
	}
}

// A client in another language, written from SKILL.md alone (POSIX sh, openssl and curl), gets 200
// from conformance.
func TestClientFromSkillGetsConformance(t *testing.T) {
	for _, tool := range []string{"sh", "openssl", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed by this test (make test installs it): %v", tool, err)
		}
	}
	cfg := testConfig(t, "sqlite")
	env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
	seed := sha256.Sum256([]byte("sh client"))
	key := ed25519.NewKeyFromSeed(seed[:])
	org := admin(t, env, "org", "create", "--name", "Shell")["org_id"].(string)
	agent := admin(t, env, "agent", "create", "--org", org, "--handle", "shell-client")["agent_id"].(string)
	keyID := admin(t, env, "key", "add", "--agent", agent, "--public-key", base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)))["key_id"].(string)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pemFile := filepath.Join(t.TempDir(), "agent.pem")
	if err := os.WriteFile(pemFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	r := start(t, cfg, allModules(t))

	out, err := exec.Command("sh", "testdata/sigv1-client.sh", "http://"+r.listeners.Addr(ListenerAgentEdge), agent, keyID, pemFile, "from sh").CombinedOutput()
	if err != nil {
		t.Fatalf("client: %v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || lines[1] != "200" {
		t.Fatalf("client got %q", out)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil || got["agent_id"] != agent || got["echo"] != "from sh" {
		t.Fatalf("response %q: %v", lines[0], err)
	}
}
