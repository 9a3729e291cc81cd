package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/moby/moby/api/types/container"
	mobynet "github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"
)

// connectorTimeout bounds the connector scenario: two builds, five containers, and the owner's steps.
const connectorTimeout = 8 * time.Minute

// TestScenarioConnectorSetup is issue 16's "Done when" on the built image beside PostgreSQL, an S3
// server and a real SMTP server: the service publishes a signed svc-connector release; an owner with an
// approved application installs the connector with the published install script (which verifies the
// release), plans, sets up typing the invitation once into the protected prompt of a real terminal, and
// doctor says ready; the agent program built on the SDK posts, uploads an image, votes and catches up;
// an LLM agent's runtime posts through the connector's MCP server (agentInRuntime); for forum_arena
// the runner claims the start intent the operator's match made and reports its status.
//
// The connector and the agent program run on this host, as on an owner's machine, against the service's
// published ports: the service's base URL and agent edge URL are those ports on 127.0.0.1.
func TestScenarioConnectorSetup(t *testing.T) {
	t.Parallel()
	ctx := beginWithin(t, connectorTimeout)
	work := t.TempDir()

	// The project's release tool makes a signed release for this platform, as `make release` does.
	releaseKey := filepath.Join(work, "release.key")
	release := filepath.Join(work, "release")
	goTool(t, ctx, "../connector", "run", "./cmd/svc-release", "--generate-key", releaseKey)
	goTool(t, ctx, "../connector", "run", "./cmd/svc-release", "--out", release, "--version", "v0.0.1-e2e",
		"--key", releaseKey, "--platforms", runtime.GOOS+"/"+runtime.GOARCH)
	verifier := strings.TrimSpace(readFile(t, filepath.Join(release, "release-key")))
	agentProgram := filepath.Join(work, "forum-agent")
	goTool(t, ctx, "../sdk", "build", "-o", agentProgram, "./examples/forum-agent")

	nw := newNetwork(t, ctx)
	startPostgres(t, ctx, nw)
	s3 := startS3(t, nw.Name)
	ms := startMail(t, nw.Name)
	publicHost, edgeHost := freePort(t), freePort(t)
	base := "http://127.0.0.1:" + publicHost
	env := map[string]string{"SVC_DATABASE_URL": databaseURL, "SVC_BASE_URL": base,
		"SVC_AGENT_EDGE_URL":      "http://127.0.0.1:" + edgeHost,
		"SVC_ONBOARDING_SMTP_URL": "smtp://" + ms.NetworkSMTPEndpoint + "?tls=none", "SVC_ONBOARDING_MAIL_FROM": "svc@example.test",
		"SVC_MEDIA_STORAGE": "s3", "SVC_MEDIA_S3_ENDPOINT": s3.NetworkEndpoint, "SVC_MEDIA_S3_BUCKET": s3.Bucket,
		"SVC_MEDIA_S3_ACCESS_KEY": s3.AccessKey, "SVC_MEDIA_S3_SECRET_KEY": s3.SecretKey, "SVC_MEDIA_S3_INSECURE": "true",
		"SVC_ARENA_GRANT_KEY": grantKey, "SVC_JOBS_POLL_INTERVAL": "200ms",
		"SVC_RELEASES_DIR": "/var/lib/svc/releases"}
	run := func(cmd ...string) result { return runOnce(t, ctx, nw, env, cmd...) }
	if res := run("migrate"); res.ExitCode != 0 {
		t.Fatalf("migrate: exit %d: %s", res.ExitCode, res.Stderr)
	}
	publishPricing(t, ctx, nw, env, wirePricingFile)
	admin(t, ctx, run, "category", "create", "--slug", "dal", "--name", "Dal")
	startPublished(t, ctx, nw, env, release, publicHost, edgeHost)

	// The owner applies, confirms the address from the mail, and the operator approves.
	const handle, email = "e2e-lentil", "owner@example.test"
	jsonBody(t, "apply", fetch(t, ctx, http.MethodPost, base+"/onboarding/api/v1/applications",
		`{"handle":"`+handle+`","organisation_name":"E2E Lentils","email":"`+email+`","setup_scope":"forum_arena","intended_use":"Answer questions about dal."}`),
		http.StatusCreated)
	link := confirmPath.FindString(ms.awaitMessages(t, ctx, 1)[0].Text)
	jar, _ := cookiejar.New(nil)
	person := &http.Client{Jar: jar}
	page := browse(t, ctx, person, http.MethodGet, base+link, "", base)
	browse(t, ctx, person, http.MethodPost, base+link, url.Values{"csrf_token": {formToken(t, page)}}.Encode(), base)
	pending := admin(t, ctx, run, "application", "list", "--status", "pending")["applications"].([]any)
	appID := pending[0].(map[string]any)["application_id"].(string)
	admin(t, ctx, run, "application", "approve", "--application", appID, "--actor", "e2e-ops")
	inv := invitation.FindString(ms.awaitMessages(t, ctx, 2)[1].Text)
	if inv == "" {
		t.Fatal("no invitation in the mail")
	}

	// The owner installs the connector with the published script, pinned to the announced key.
	bin := filepath.Join(work, "bin")
	install := exec.CommandContext(ctx, "sh", "-c", `curl -fsSL "$1/releases/svc-connector/install.sh" | sh -s -- --base-url "$1" --release-key "$2"`,
		"install", base, verifier)
	install.Env = append(os.Environ(), "SVC_CONNECTOR_BIN_DIR="+bin)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	home := filepath.Join(work, "connector-home")
	connector := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "svc-connector"), args...)
		cmd.Env = append(os.Environ(), "SVC_BASE_URL="+base, "SVC_CONNECTOR_HOME="+home)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal: nothing can be asked
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := cmd.ProcessState.ExitCode()
		if err != nil && code < 0 {
			t.Fatalf("svc-connector %s: %v", strings.Join(args, " "), err)
		}
		t.Logf("svc-connector %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
		return out.String(), code
	}

	// The plan is read-only: version 2, the target to be created, nothing on disk.
	setupFlags := []string{"--profile", "lentil", "--handle", handle, "--runtime", "command", "--setup-scope", "forum_arena"}
	out, code := connector(append([]string{"setup", "--plan"}, setupFlags...)...)
	var plan struct {
		Version    int    `json:"version"`
		Handle     string `json:"handle"`
		SetupScope string `json:"setup_scope"`
		Runtimes   []struct {
			Runtime       string `json:"runtime"`
			TargetProfile struct {
				Name        string   `json:"name"`
				Disposition string   `json:"disposition"`
				Reasons     []string `json:"reasons"`
			} `json:"target_profile"`
		} `json:"runtimes"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil || code != 0 {
		t.Fatalf("plan: exit %d, %v: %s", code, err, out)
	}
	if plan.Version != 2 || plan.Handle != handle || plan.SetupScope != "forum_arena" || len(plan.Runtimes) != 1 ||
		plan.Runtimes[0].Runtime != "command" || plan.Runtimes[0].TargetProfile.Name != "lentil" || plan.Runtimes[0].TargetProfile.Disposition != "create" {
		t.Fatalf("plan: %s", out)
	}
	if strings.Contains(out, work) || strings.Contains(out, inv) {
		t.Fatalf("the plan names a local path or the invitation: %s", out)
	}
	if _, err := os.Stat(filepath.Join(home, "profiles", "lentil")); !os.IsNotExist(err) {
		t.Fatalf("the plan made the profile: %v", err)
	}

	// Setup in a real terminal: the invitation is typed once and never echoed.
	connectorEnv := []string{"SVC_BASE_URL=" + base, "SVC_CONNECTOR_HOME=" + home}
	typed, code := inTerminal(t, ctx, filepath.Join(bin, "svc-connector"), connectorEnv,
		append(append([]string{"setup"}, setupFlags...), "--command", agentProgram, "--login-step", "forum-agent needs no login"), "invitation", inv+"\r")
	if code != 0 || strings.Contains(typed, inv) {
		t.Fatalf("setup: exit %d; the terminal shows:\n%s", code, typed)
	}
	profileDir := filepath.Join(home, "profiles", "lentil")
	var identity struct {
		AgentID string `json:"agent_id"`
		OrgID   string `json:"org_id"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(profileDir, "identity.json"))), &identity); err != nil || identity.AgentID == "" {
		t.Fatalf("identity.json after setup: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(profileDir, "key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key.pem: %v %v", fi, err)
	}
	admin(t, ctx, run, "wallet", "credit", "--org", identity.OrgID, "--credits", "100")

	// Forum checks pass; a forum_arena profile is not ready before the owner enables the arena and
	// its runner polls.
	if out, _ := connector("doctor", "--profile", "lentil"); !failingOnly(out, "arena_enabled", "arena_runner") {
		t.Fatalf("doctor before the arena is enabled: %s", out)
	}

	// The agent program built on the SDK posts, uploads an image, votes and catches up.
	demo := exec.CommandContext(ctx, agentProgram, "--profile", profileDir, "demo", "--category", "dal")
	demoOut, err := demo.CombinedOutput()
	if err != nil {
		t.Fatalf("forum-agent demo: %v\n%s", err, demoOut)
	}
	for _, step := range []string{"thread", "upload", "attach", "reply", "vote", "catch-up"} {
		if !strings.Contains(string(demoOut), `"step":"`+step+`"`) {
			t.Errorf("the demo did not report %s:\n%s", step, demoOut)
		}
	}

	// An LLM agent's runtime drives the same profile through `svc-connector mcp`.
	agentInRuntime(t, ctx, filepath.Join(bin, "svc-connector"), append(os.Environ(), connectorEnv...), profileDir, "lentil", base)

	// forum_arena: preflight, enable with the owner's confirmation, and the runner claims its intent.
	if out, code := connector("arena", "preflight", "--profile", "lentil"); code != 0 {
		t.Fatalf("arena preflight: exit %d: %s", code, out)
	}
	// The owner confirms on the terminal: no terminal, or an answer that is not yes, enables nothing.
	if out, code := connector("arena", "enable", "--profile", "lentil"); code != 2 {
		t.Fatalf("arena enable without a terminal: exit %d: %s", code, out)
	}
	enable := []string{"arena", "enable", "--profile", "lentil"}
	if shown, code := inTerminal(t, ctx, filepath.Join(bin, "svc-connector"), connectorEnv, enable, "[y/N]", "n\r"); code != 4 {
		t.Fatalf("arena enable answered n: exit %d:\n%s", code, shown)
	}
	if shown, code := inTerminal(t, ctx, filepath.Join(bin, "svc-connector"), connectorEnv, enable, "[y/N]", "y\r"); code != 0 ||
		!strings.Contains(shown, agentProgram) || !strings.Contains(shown, `"arena_enabled": true`) {
		t.Fatalf("arena enable answered y: exit %d:\n%s", code, shown)
	}
	match := admin(t, ctx, run, "arena", "match", "create", "--seat", "north="+identity.AgentID)
	matchID, _ := match["match_id"].(string)
	runner := exec.CommandContext(ctx, filepath.Join(bin, "svc-connector"), "arena", "run", "--profile", "lentil")
	runner.Env = append(os.Environ(), "SVC_BASE_URL="+base, "SVC_CONNECTOR_HOME="+home)
	var runnerOut bytes.Buffer
	runner.Stdout, runner.Stderr = &runnerOut, &runnerOut
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = runner.Process.Kill()
			_ = runner.Wait()
		}
	}()
	poll(t, ctx, time.Now(), time.Minute, 500*time.Millisecond, "the runner runs the seat", func() (bool, string) {
		shown := fmt.Sprint(admin(t, ctx, run, "arena", "match", "show", "--match", matchID))
		return strings.Contains(shown, "stopped") && strings.Contains(shown, "completed"), shown
	})
	for _, cmd := range []string{"doctor", "status"} {
		if out, code := connector(cmd, "--profile", "lentil"); code != 0 || !verdictReady(out) {
			t.Fatalf("%s while the runner polls: exit %d: %s", cmd, code, out)
		}
	}
	// The owner stops the runner; a runner that does not poll is not readiness.
	if err := runner.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = runner.Wait()
	stopped = true
	if err != nil {
		t.Fatalf("the runner on SIGINT: %v\n%s", err, runnerOut.String())
	}
	if out, code := connector("status", "--profile", "lentil"); code == 0 || verdictReady(out) {
		t.Fatalf("status with the runner stopped: exit %d: %s", code, out)
	}
}

// failingOnly reports whether out is a verdict, not ready, whose failing checks are exactly names.
func failingOnly(out string, names ...string) bool {
	var v struct {
		Ready  bool `json:"ready"`
		Checks []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"checks"`
	}
	if json.Unmarshal([]byte(out), &v) != nil || v.Ready {
		return false
	}
	var failing []string
	for _, c := range v.Checks {
		if !c.OK {
			failing = append(failing, c.Name)
		}
	}
	return slices.Equal(failing, names)
}

// verdictReady reports whether out is a doctor or status verdict that says ready.
func verdictReady(out string) bool {
	var v struct {
		Ready bool `json:"ready"`
	}
	return json.Unmarshal([]byte(out), &v) == nil && v.Ready
}

// grantKey is the arena's grant key of the connector scenario (SVC_ARENA_GRANT_KEY): 32 bytes, base64.
const grantKey = "ZTJlIGFyZW5hIGdyYW50IGtleSBvZiAzMiBieXRlcyE="

// startPublished runs the service with the release directory copied in and its public and agent edge
// listeners published on fixed host ports, so that the URLs it hands out reach it from this host.
func startPublished(t *testing.T, ctx context.Context, nw *testcontainers.DockerNetwork, env map[string]string, release, publicHost, edgeHost string) *service {
	t.Helper()
	entries, err := os.ReadDir(release)
	if err != nil {
		t.Fatal(err)
	}
	var files []testcontainers.ContainerFile
	for _, e := range entries {
		files = append(files, testcontainers.ContainerFile{HostFilePath: filepath.Join(release, e.Name()),
			ContainerFilePath: "/var/lib/svc/releases/" + e.Name(), FileMode: 0o644})
	}
	env["SVC_CURSOR_KEY"], env["SVC_ONBOARDING_DRAFT_KEY"] = cursorKey, draftKey
	loopback := netip.MustParseAddr("127.0.0.1")
	c := runServer(t, ctx, "service", serviceImage(),
		network.WithNetwork([]string{"svc"}, nw),
		testcontainers.WithEnv(env),
		testcontainers.WithFiles(files...),
		testcontainers.WithExposedPorts(publicPort, agentEdgePort),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = mobynet.PortMap{
				mobynet.MustParsePort(publicPort):    {{HostIP: loopback, HostPort: publicHost}},
				mobynet.MustParsePort(agentEdgePort): {{HostIP: loopback, HostPort: edgeHost}},
			}
		}),
		readyOn("/health/ready", publicPort))
	return &service{DockerContainer: c, URL: "http://127.0.0.1:" + publicHost}
}

// goTool runs the go command in dir (a module of this repository, outside the workspace).
func goTool(t *testing.T, ctx context.Context, dir string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// inTerminal runs the connector on a pseudo-terminal (its controlling terminal, stdin, stdout and
// stderr), waits until the terminal shows prompt (case-insensitive), types typed as it is (a line ends
// with "\r", as Enter sends it), and returns everything the terminal showed and the exit code.
func inTerminal(t *testing.T, ctx context.Context, bin string, env, args []string, prompt, typed string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatalf("start svc-connector %s on a terminal: %v", strings.Join(args, " "), err)
	}
	defer tty.Close()
	var mu sync.Mutex
	var shown bytes.Buffer
	done := make(chan struct{})
	prompted := make(chan struct{}, 1)
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			mu.Lock()
			shown.Write(buf[:n])
			seen := strings.Contains(strings.ToLower(shown.String()), strings.ToLower(prompt))
			mu.Unlock()
			if seen {
				select {
				case prompted <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	text := func() string { mu.Lock(); defer mu.Unlock(); return shown.String() }
	select {
	case <-prompted:
	case <-done:
		t.Fatalf("svc-connector %s ended without asking %q:\n%s", strings.Join(args, " "), prompt, text())
	case <-ctx.Done():
		t.Fatalf("svc-connector %s never asked %q:\n%s", strings.Join(args, " "), prompt, text())
	}
	if _, err := io.WriteString(tty, typed); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	<-done
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("svc-connector %s: %v\n%s", strings.Join(args, " "), err, text())
	}
	return text(), cmd.ProcessState.ExitCode()
}
