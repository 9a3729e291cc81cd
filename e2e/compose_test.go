package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/sdk/signer"
)

// composeTimeout bounds TestCompose; composeDownTimeout bounds taking the project down.
const (
	composeTimeout     = 4 * time.Minute
	composeDownTimeout = 2 * time.Minute
)

// composeProject is a docker-compose project of docker-compose.yml, run with the local images.
type composeProject struct {
	bin, file, labels, name string
	env                     []string
}

// runLabels writes an override of docker-compose.yml that labels the project's containers, network and
// volume with this run, so that `make sweep` can remove them should the test be killed before it takes
// them down, and returns its path.
func runLabels(t *testing.T) string {
	t.Helper()
	label := fmt.Sprintf("      %s: %q\n", dbtest.RunLabel, dbtest.RunID())
	override := "services:\n  postgres:\n    labels:\n" + label + "  svc:\n    labels:\n" + label +
		"networks:\n  default:\n    labels:\n" + label + "volumes:\n  pgdata:\n    labels:\n" + label
	path := filepath.Join(t.TempDir(), "labels.yml")
	if err := os.WriteFile(path, []byte(override), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// run runs docker-compose with args and returns its stdout; stderr is in the error.
func (p *composeProject) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, p.bin, append([]string{"--ansi", "never", "-f", p.file, "-f", p.labels, "-p", p.name}, args...)...)
	cmd.Env = p.env
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("docker-compose %s: %w\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// freePort returns a TCP port on this host that is free now. docker-compose.yml publishes fixed host
// ports (8080, 8081, 9090 by default), so two projects at once would collide unless each is given its
// own through SVC_PUBLIC_PORT, SVC_AGENT_PORT and SVC_ADMIN_PORT.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

// TestCompose: docker-compose.yml brought up with the local images under a project name of its own
// comes ready; an agent provisioned with `svc admin` in a one-off container of the project passes
// conformance with a request signed by the Go signer; the project is taken down with its volume.
func TestCompose(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), composeTimeout)
	t.Cleanup(cancel)
	// Down in every case, with its own deadline (the test's may be over), and the logs on failure.
	p := startComposeProject(t, ctx)

	started := time.Now()
	if _, err := p.run(ctx, "up", "-d"); err != nil {
		t.Fatalf("up: %v", err)
	}
	t.Logf("docker-compose up -d took %s", time.Since(started).Round(time.Millisecond))

	endpoint := func(port string) string {
		t.Helper()
		out, err := p.run(ctx, "port", "svc", port)
		if err != nil {
			t.Fatalf("port: %v", err)
		}
		addr := strings.TrimSpace(out)
		host, hport, err := net.SplitHostPort(addr)
		if err != nil || hport == "" || hport == "0" {
			t.Fatalf("docker-compose port svc %s: %q (%v)", port, addr, err)
		}
		if host == "0.0.0.0" || host == "::" || host == "" {
			host = "127.0.0.1"
		}
		return "http://" + net.JoinHostPort(host, hport)
	}
	public, edge := endpoint("8080"), endpoint("8081")

	took := poll(t, ctx, started, 2*time.Minute, 250*time.Millisecond, "/health/ready 200 on the compose project", func() (bool, string) {
		r, err := get(ctx, public+"/health/ready")
		if err != nil {
			return false, err.Error()
		}
		return r.Status == 200, fmt.Sprintf("%d %s", r.Status, r.Body)
	})
	t.Logf("/health/ready answered 200 %s after up", took.Round(time.Millisecond))

	// The container's own health check (svc health) reports it healthy.
	out, err := p.run(ctx, "ps", "-q", "svc")
	if err != nil || strings.TrimSpace(out) == "" {
		t.Fatalf("docker-compose ps -q svc: %q %v", out, err)
	}
	container := strings.TrimSpace(out)
	poll(t, ctx, time.Now(), time.Minute, 500*time.Millisecond, "the svc container's health check to pass", func() (bool, string) {
		info, err := docker(t).ContainerInspect(ctx, container, client.ContainerInspectOptions{})
		if err != nil {
			return false, err.Error()
		}
		if info.Container.State == nil || info.Container.State.Health == nil {
			return false, "no health check"
		}
		return info.Container.State.Health.Status == "healthy", string(info.Container.State.Health.Status)
	})
	// It carries this run's label, by which `make sweep` finds what a killed test left behind.
	info, err := docker(t).ContainerInspect(ctx, container, client.ContainerInspectOptions{})
	if err != nil || info.Container.Config == nil || info.Container.Config.Labels[dbtest.RunLabel] != dbtest.RunID() {
		t.Fatalf("the svc container's label %s: want %q (%v)", dbtest.RunLabel, dbtest.RunID(), err)
	}

	// The operator, in one-off containers of the project's svc service.
	adminRun := func(args ...string) map[string]any {
		t.Helper()
		out, err := p.run(ctx, append([]string{"run", "--rm", "-T", "--no-deps", "svc", "admin", "--json"}, args...)...)
		if err != nil {
			t.Fatalf("svc admin %s: %v", strings.Join(args, " "), err)
		}
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(out))
		if err := dec.Decode(&m); err != nil || dec.More() {
			t.Fatalf("svc admin %s: stdout is not one JSON object (%v): %q", strings.Join(args, " "), err, out)
		}
		return m
	}
	org, _ := adminRun("org", "create", "--name", "Compose Kitchen")["org_id"].(string)
	seed := sha256.Sum256([]byte("e2e key compose"))
	key := ed25519.NewKeyFromSeed(seed[:])
	agent, _ := adminRun("agent", "create", "--org", org, "--handle", "composer")["agent_id"].(string)
	keyID, _ := adminRun("key", "add", "--agent", agent, "--public-key", base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)))["key_id"].(string)
	if org == "" || agent == "" || keyID == "" {
		t.Fatalf("org %q, agent %q, key %q: an identifier is missing", org, agent, keyID)
	}
	id := agentIdentity{OrgID: org, AgentID: agent, KeyID: keyID, Handle: "composer", Signer: signer.New(agent, keyID, key)}

	conf := jsonBody(t, "conformance", signedSend(t, ctx, id, http.MethodPost, edge, "/conformance", "compose-conf-1", `{"echo":"compose"}`), 200)
	if conf["agent_id"] != agent || conf["key_id"] != keyID || conf["org_id"] != org || conf["echo"] != "compose" {
		t.Fatalf("conformance: %v", conf)
	}
}

// Compose itself requires no secret: config and down work in a shell that has none of svc's keys and no
// .env (an empty --env-file stands in for the checkout's, should there be one). Compose interpolates the
// whole file for every command, so exec and logs do too. svc refuses to start without the keys
// (host's TestBadConfigurationStopsWithOneLine).
func TestComposeNeedsNoSecretsToConfigureOrTakeDown(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatalf("docker-compose is not installed (%v): run `make tools`", err)
	}
	file, err := filepath.Abs(filepath.Join("..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty.env")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SVC_CURSOR_KEY=") && !strings.HasPrefix(kv, "SVC_ONBOARDING_DRAFT_KEY=") && !strings.HasPrefix(kv, "SVC_ARENA_GRANT_KEY=") {
			env = append(env, kv)
		}
	}
	suffix := make([]byte, 4)
	rand.Read(suffix)
	p := &composeProject{bin: bin, file: file, labels: runLabels(t), name: "svce2enokeys" + hex.EncodeToString(suffix), env: env}
	ctx, cancel := context.WithTimeout(t.Context(), composeDownTimeout)
	t.Cleanup(cancel)
	out, err := p.run(ctx, "--env-file", empty, "config")
	if err != nil {
		t.Fatalf("config without the keys: %v", err)
	}
	// The official PostgreSQL image is the default; the keys are passed on empty, for svc to refuse.
	if !strings.Contains(out, "image: postgres:15") && os.Getenv("SVC_POSTGRES_IMAGE") == "" {
		t.Errorf("config: the PostgreSQL image is not postgres:15 by default:\n%s", out)
	}
	if _, err := p.run(ctx, "--env-file", empty, "down", "-v", "--remove-orphans"); err != nil {
		t.Fatalf("down without the keys: %v", err)
	}
}
