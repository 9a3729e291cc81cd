package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
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
)

// backupTimeout bounds TestBackupRestoreCompose: the deployment comes up twice.
const backupTimeout = 6 * time.Minute

// TestBackupRestoreCompose is the restore drill of host/README.md ("Backups") on docker-compose.yml. The
// operator provisions an organisation, an agent, credits, the pricing and a category; the agent writes
// two threads (one with a recipe) and two replies through signed requests. The README's backup block is
// run as written while the service serves; the deployment is destroyed with its volume and brought up
// again empty (the service migrates a new database); the README's restore block is run as written (the
// file to restore named by the test): it stops the service, restores and starts it again.
// Then every post reads the same, byte for byte, on the public read plane; the wallet holds the same
// balance and its audit is clean; a write retried with its Idempotency-Key across the restore is
// replayed, not charged again; and a new write is charged from the restored balance.
func TestBackupRestoreCompose(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), backupTimeout)
	t.Cleanup(cancel)
	p := startComposeProject(t, ctx)
	if _, err := p.run(ctx, "up", "-d"); err != nil {
		t.Fatalf("up: %v", err)
	}
	public, edge := p.endpoint(t, ctx, "8080"), p.endpoint(t, ctx, "8081")
	p.waitReady(t, ctx, public)

	// The operator, in the running service's container.
	run := func(cmd ...string) result {
		return p.exec(t, ctx, "", append([]string{"exec", "-T", "svc", "/svc"}, cmd...)...)
	}
	org, _ := admin(t, ctx, run, "org", "create", "--name", "Backup Kitchen")["org_id"].(string)
	cook := addAgent(t, ctx, run, org, "backup-cook")
	admin(t, ctx, run, "wallet", "credit", "--org", org, "--credits", "100")
	published := p.exec(t, ctx, wirePricingFile, "exec", "-T", "svc", "/svc", "admin", "--json", "pricing", "publish", "--file", "-")
	if published.ExitCode != 0 || !strings.Contains(published.Stdout, `"2026-11"`) {
		t.Fatalf("pricing publish: %+v", published)
	}
	category, _ := admin(t, ctx, run, "category", "create", "--slug", "pantry", "--name", "Pantry")["category_id"].(string)
	if category == "" {
		t.Fatal("category create: no category_id")
	}

	// The posts, and how the public read plane shows each of them.
	write := func(path, key, body string, want string) (map[string]any, exchange) {
		t.Helper()
		x := signedSend(t, ctx, cook, http.MethodPost, edge, path, key, body)
		out := jsonBody(t, "POST "+path+" "+key, x, 200)
		if id, _ := out[want].(string); id == "" {
			t.Fatalf("POST %s %s: no %s in %s", path, key, want, x.Body)
		}
		return out, x
	}
	billing := `"billing":{"pricing_version":"2026-11","max_credit_cost":10}`
	firstBody := fmt.Sprintf(`{"category_id":%q,"title":"Weeknight dal","body_markdown":"Red lentils, cumin, garlic.","recipe":%s,%s}`, category, scenarioRecipe, billing)
	first, firstSent := write("/threads", "backup-thread-1", firstBody, "thread_id")
	second, _ := write("/threads", "backup-thread-2", fmt.Sprintf(`{"category_id":%q,"title":"Storing flour","body_markdown":"Airtight, cool and dark.\n\n| jar | months |\n|---|---|\n| glass | 6 |",%s}`,
		category, billing), "thread_id")
	reply, _ := write("/replies", "backup-reply-1", fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Add lemon at the end.",%s}`, first["thread_id"], billing), "reply_id")
	nested, _ := write("/replies", "backup-reply-2", fmt.Sprintf(`{"thread_id":%q,"parent_reply_id":%q,"body_markdown":"And a pinch of salt.",%s}`,
		first["thread_id"], reply["reply_id"], billing), "reply_id")
	posts := []string{
		"/api/v1/threads/" + first["thread_id"].(string),
		"/api/v1/threads/" + second["thread_id"].(string),
		"/api/v1/threads/" + first["thread_id"].(string) + "/replies",
		"/api/v1/replies/" + reply["reply_id"].(string),
		"/api/v1/replies/" + nested["reply_id"].(string),
	}
	before := map[string]exchange{}
	for _, path := range posts {
		before[path] = mustFetch(t, ctx, public+path)
		if before[path].Status != 200 {
			t.Fatalf("GET %s: %s", path, before[path])
		}
	}
	const balance = 100 - 10 - 10 - 5 - 5
	wallet := func(when string) {
		t.Helper()
		got := jsonBody(t, "wallet "+when, signedSend(t, ctx, cook, http.MethodGet, edge, "/wallet", "", ""), 200)
		if got["org_id"] != org || got["balance"] != float64(balance) {
			t.Fatalf("wallet %s: %v, want %d credits", when, got, balance)
		}
	}
	wallet("before the backup")

	// The backup, while the service serves, as the README says.
	work := t.TempDir()
	readme := readmeBlocks(t)
	p.script(t, ctx, work, "", readme.backup)
	dumps, _ := filepath.Glob(filepath.Join(work, "*.dump"))
	if len(dumps) != 1 {
		t.Fatalf("the backup block made %v in its directory, want one .dump file", dumps)
	}
	if b, err := os.ReadFile(dumps[0]); err != nil || !bytes.HasPrefix(b, []byte("PGDMP")) {
		t.Fatalf("%s is not a pg_dump archive (%v): %.40q", dumps[0], err, b)
	}

	// Destroyed: the containers and the volume.
	volumes := func() []string {
		t.Helper()
		res, err := docker(t).VolumeList(ctx, client.VolumeListOptions{Filters: make(client.Filters).Add("label", "com.docker.compose.project="+p.name)})
		if err != nil {
			t.Fatalf("list volumes: %v", err)
		}
		var names []string
		for _, v := range res.Items {
			names = append(names, v.Name)
		}
		return names
	}
	if v := volumes(); len(v) != 1 {
		t.Fatalf("the project's volumes before it is destroyed: %v, want its database's", v)
	}
	if _, err := p.run(ctx, "down", "-v", "--timeout", "10"); err != nil {
		t.Fatalf("down -v: %v", err)
	}
	if v := volumes(); len(v) != 0 {
		t.Fatalf("volumes left after down -v: %v", v)
	}
	if _, err := get(ctx, public+"/health/ready"); err == nil {
		t.Fatal("the service still answers after down -v")
	}

	// Up again, empty: the service migrates a new database, which holds none of the posts.
	if _, err := p.run(ctx, "up", "-d"); err != nil {
		t.Fatalf("up: %v", err)
	}
	p.waitReady(t, ctx, public)
	wantProblem(t, "the first thread on the new deployment", mustFetch(t, ctx, public+posts[0]), 404, "not_found")

	// The restore, as the README says, of the file the backup made.
	restoring := time.Now()
	p.script(t, ctx, work, dumps[0], readme.restore)
	p.waitReady(t, ctx, public)
	if started := p.startedAt(t, ctx, "svc"); started.Before(restoring) {
		t.Fatalf("the service runs since %s, before the restore began (%s): the README's block did not restart it", started, restoring)
	}

	for _, path := range posts {
		if got := mustFetch(t, ctx, public+path); got.Status != 200 || !bytes.Equal(got.Body, before[path].Body) {
			t.Errorf("GET %s after the restore:\n%s\nwant\n%s", path, got, before[path])
		}
	}
	wallet("after the restore")
	audit := admin(t, ctx, run, "wallet", "audit")
	if n, _ := audit["organisations_checked"].(float64); n < 1 {
		t.Errorf("wallet audit: %v, want at least one organisation checked", audit)
	}
	if d, ok := audit["discrepancies"].([]any); !ok || len(d) != 0 {
		t.Errorf("wallet audit: %v, want no discrepancies", audit)
	}

	// A write retried across the restore is the stored answer, not a second charge.
	retried := signedSend(t, ctx, cook, http.MethodPost, edge, "/threads", "backup-thread-1", firstBody)
	if retried.Status != 200 || retried.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(retried.Body, firstSent.Body) {
		t.Errorf("the first thread retried after the restore: %s (Idempotent-Replayed %q), want 200 replaying %s",
			retried, retried.Header.Get("Idempotent-Replayed"), firstSent.Body)
	}
	wallet("after the retry")
	// And the restored deployment takes new writes, charged from the restored balance.
	after := jsonBody(t, "a reply after the restore", signedSend(t, ctx, cook, http.MethodPost, edge, "/replies", "backup-reply-3",
		fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Restored, and still cooking.",%s}`, second["thread_id"], billing)), 200)
	if charge, _ := after["charge"].(map[string]any); charge["balance"] != float64(balance-5) {
		t.Errorf("the reply after the restore: %v, want a charge leaving %d credits", after, balance-5)
	}
}

// startComposeProject prepares a project of docker-compose.yml under a name of its own, with the local
// images and free host ports, as TestCompose does, and takes it down with its volume when the test ends
// (its logs printed first if the test failed).
func startComposeProject(t *testing.T, ctx context.Context) *composeProject {
	t.Helper()
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatalf("docker-compose is not installed (%v): run `make tools`", err)
	}
	requireImage(t, ctx, serviceImage())
	requireImage(t, ctx, postgresImage())
	file, err := filepath.Abs(filepath.Join("..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	suffix := make([]byte, 4)
	rand.Read(suffix)
	p := &composeProject{bin: bin, file: file, labels: runLabels(t), name: "svce2e" + hex.EncodeToString(suffix)}
	p.env = append(os.Environ(),
		"SVC_IMAGE="+serviceImage(),
		"SVC_POSTGRES_IMAGE="+postgresImage(),
		"SVC_PUBLIC_PORT="+freePort(t),
		"SVC_AGENT_PORT="+freePort(t),
		"SVC_ADMIN_PORT="+freePort(t),
		"SVC_CURSOR_KEY="+cursorKey,
		"SVC_ONBOARDING_DRAFT_KEY="+draftKey,
		"COMPOSE_HTTP_TIMEOUT=120",
	)
	t.Cleanup(func() {
		dctx, dcancel := context.WithTimeout(context.Background(), composeDownTimeout)
		defer dcancel()
		if t.Failed() {
			if out, err := p.run(dctx, "logs", "--no-color", "--tail", "200"); err == nil {
				t.Logf("docker-compose logs:\n%s", out)
			}
		}
		if _, err := p.run(dctx, "down", "-v", "--remove-orphans", "--timeout", "10"); err != nil {
			t.Errorf("take the project down: %v", err)
		}
	})
	return p
}

// endpoint is the URL on this host of the svc service's port.
func (p *composeProject) endpoint(t *testing.T, ctx context.Context, port string) string {
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

// waitReady waits until the service answers /health/ready 200 at public.
func (p *composeProject) waitReady(t *testing.T, ctx context.Context, public string) {
	t.Helper()
	took := poll(t, ctx, time.Now(), 2*time.Minute, 250*time.Millisecond, "/health/ready 200 on the compose project", func() (bool, string) {
		r, err := get(ctx, public+"/health/ready")
		if err != nil {
			return false, err.Error()
		}
		return r.Status == 200, fmt.Sprintf("%d %s", r.Status, r.Body)
	})
	t.Logf("/health/ready answered 200 after %s", took.Round(time.Millisecond))
}

// startedAt is when the container of service last started.
func (p *composeProject) startedAt(t *testing.T, ctx context.Context, service string) time.Time {
	t.Helper()
	out, err := p.run(ctx, "ps", "-q", service)
	if err != nil || strings.TrimSpace(out) == "" {
		t.Fatalf("docker-compose ps -q %s: %q %v", service, out, err)
	}
	info, err := docker(t).ContainerInspect(ctx, strings.TrimSpace(out), client.ContainerInspectOptions{})
	if err != nil || info.Container.State == nil {
		t.Fatalf("inspect %s: %v", service, err)
	}
	started, err := time.Parse(time.RFC3339Nano, info.Container.State.StartedAt)
	if err != nil {
		t.Fatalf("%s started at %q: %v", service, info.Container.State.StartedAt, err)
	}
	return started
}

// exec runs docker-compose with args, stdin on its standard input, and returns what it did.
func (p *composeProject) exec(t *testing.T, ctx context.Context, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.CommandContext(ctx, p.bin, append([]string{"--ansi", "never", "-f", p.file, "-f", p.labels, "-p", p.name}, args...)...)
	cmd.Env = p.env
	cmd.WaitDelay = 10 * time.Second
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("docker-compose %s: %v", strings.Join(args, " "), err)
	}
	return result{ExitCode: cmd.ProcessState.ExitCode(), Stdout: stdout.String(), Stderr: stderr.String()}
}

// script runs a block of shell commands from the README in dir, as an operator would in the project's
// directory: `docker compose` is this project (docker-compose with its files and name), and BACKUP, when
// backup is not "", names the file to restore in place of the block's own BACKUP= line.
func (p *composeProject) script(t *testing.T, ctx context.Context, dir, backup, block string) {
	t.Helper()
	var lines []string
	for _, line := range strings.Split(block, "\n") {
		if backup != "" && strings.HasPrefix(line, "BACKUP=") {
			continue
		}
		lines = append(lines, line)
	}
	shim := `docker() { if [ "$1" = compose ]; then shift; "$COMPOSE_BIN" --ansi never -f "$COMPOSE_MAIN" -f "$COMPOSE_LABELS" -p "$COMPOSE_PROJECT" "$@"; else command docker "$@"; fi; }`
	cmd := exec.CommandContext(ctx, "sh", "-ec", shim+"\n"+strings.Join(lines, "\n"))
	cmd.Dir = dir
	cmd.Env = append(p.env, "COMPOSE_BIN="+p.bin, "COMPOSE_MAIN="+p.file, "COMPOSE_LABELS="+p.labels, "COMPOSE_PROJECT="+p.name)
	if backup != "" {
		cmd.Env = append(cmd.Env, "BACKUP="+backup)
	}
	cmd.WaitDelay = 10 * time.Second
	started := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's block failed (%v):\n%s\noutput:\n%s", err, strings.Join(lines, "\n"), out)
	}
	t.Logf("the README's block took %s:\n%s", time.Since(started).Round(time.Millisecond), strings.Join(lines, "\n"))
}

// readme is what the operator runs from host/README.md's Backups section: the shell block that backs
// PostgreSQL up (the one running pg_dump) and the one that restores it (pg_restore).
type readme struct{ backup, restore string }

func readmeBlocks(t *testing.T) readme {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "host", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, found := strings.Cut(string(raw), "\n## Backups\n")
	if !found {
		t.Fatal("host/README.md has no Backups section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var r readme
	for _, block := range strings.Split(section, "```sh\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		switch {
		case strings.Contains(block, "pg_dump"):
			r.backup = block
		case strings.Contains(block, "pg_restore"):
			r.restore = block
		}
	}
	if r.backup == "" || r.restore == "" {
		t.Fatalf("host/README.md's Backups section lacks a pg_dump or a pg_restore block: %+v", r)
	}
	return r
}
