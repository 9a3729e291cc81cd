//go:build linux

package host

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/svcforum/svc/modules/arena"
	"github.com/svcforum/svc/testkit/mailsink"
)

// svc-connector, the owner's local setup tool (connector/README.md), against the assembled service on
// SQLite with real ports: the connector is the binary of a release cut and signed by svc-release (the
// release directory the service publishes), the runtime is the SDK's example agent program, and every
// run is a subprocess. The invitation is typed into the connector's prompt through a pseudo-terminal.
// An interrupted redemption is a real one: a proxy in front of the public listener kills the connector
// once the service has answered its redemption, before the answer reaches it.

// connectorBuild is the signed release and the example agent program, built once.
type connectorBuild struct {
	releaseDir string // manifest, release-key, install.sh, svc-connector_<os>_<arch>
	connector  string // the release's binary for this platform
	agent      string // the SDK's example agent program
}

// goTool runs the go command in dir with the workspace off (each module builds alone).
func goTool(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(goCommand(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
}

// goCommand is the go command on PATH.
func goCommand(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command: %v", err)
	}
	return path
}

func buildConnector(t *testing.T) connectorBuild {
	t.Helper()
	dir := t.TempDir()
	connectorModule, err := filepath.Abs(filepath.Join("..", "connector"))
	if err != nil {
		t.Fatal(err)
	}
	goTool(t, connectorModule, "build", "-o", filepath.Join(dir, "svc-release"), "./cmd/svc-release")
	release := func(args ...string) {
		cmd := exec.Command(filepath.Join(dir, "svc-release"), args...)
		cmd.Dir = connectorModule
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("svc-release %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	release("--generate-key", filepath.Join(dir, "release.key"))
	b := connectorBuild{releaseDir: filepath.Join(dir, "release")}
	release("--out", b.releaseDir, "--version", "v0.0.0-hosttest", "--key", filepath.Join(dir, "release.key"),
		"--platforms", goruntime.GOOS+"/"+goruntime.GOARCH, "--go", goCommand(t))
	b.connector = filepath.Join(b.releaseDir, "svc-connector_"+goruntime.GOOS+"_"+goruntime.GOARCH)
	b.agent = filepath.Join(dir, "forum-agent")
	goTool(t, filepath.Join("..", "sdk"), "build", "-o", b.agent, "./examples/forum-agent")
	return b
}

// redemptionTap sees every redemption that passes the proxy: what was sent, what was answered, and it
// can kill the connector once the service answered, before the answer is relayed.
type redemptionTap struct {
	mu    sync.Mutex
	sent  []map[string]string // idempotency_key, public_key
	got   []map[string]string // status, agent_id
	onEnd func()              // armed: called once after the service answered
}

func (r *redemptionTap) arm(kill func()) { r.mu.Lock(); r.onEnd = kill; r.mu.Unlock() }

func isRedemption(req *http.Request) bool {
	return req.Method == http.MethodPost && req.URL.Path == "/onboarding/api/v1/redemptions"
}

// connectorService is the assembled service behind a proxy whose address is the base URL.
type connectorService struct {
	cfg  Config
	env  map[string]string // the operator's command line
	sink *mailsink.Sink
	run  running
	base string // the proxy: http://127.0.0.1:port
	tap  *redemptionTap
}

// freeAddr is a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// starterCredits is the connector service's welcome grant.
const starterCredits = 100

func startConnectorService(t *testing.T, releaseDir string) *connectorService {
	t.Helper()
	grantKey, _, err := arena.NewGrantKey()
	if err != nil {
		t.Fatal(err)
	}
	proxyLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &connectorService{sink: mailsink.Start(t), base: "http://" + proxyLn.Addr().String(), tap: &redemptionTap{}}
	s.cfg = testConfig(t, "sqlite")
	s.cfg.BaseURL = s.base
	edge := freeAddr(t)
	s.cfg.AgentEdgeAddr, s.cfg.AgentEdgeURL = edge, "http://"+edge
	s.cfg.Jobs.PollInterval = 50 * time.Millisecond
	// As make run: the pricing and the categories seeded at start-up, and a welcome grant.
	s.cfg.Seed = true
	s.cfg.Settings = settings{testSettings(), map[string]any{
		"onboarding-starter-credits": starterCredits,
		"onboarding-smtp-url":        s.sink.URL(),
		"releases-dir":               releaseDir,
		"arena-grant-key":            grantKey,
		"arena-poll-after":           time.Second,
	}}
	s.env = map[string]string{
		"SVC_DATABASE_URL":        s.cfg.DatabaseURL,
		"SVC_BASE_URL":            s.base,
		"SVC_ONBOARDING_SMTP_URL": s.sink.URL(),
		"SVC_RELEASES_DIR":        releaseDir,
		"SVC_ARENA_GRANT_KEY":     grantKey,
	}
	s.run = start(t, s.cfg, allModules(t))
	public, err := url.Parse("http://" + s.run.listeners.Addr(ListenerPublic))
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(public)
	proxy.ModifyResponse = func(res *http.Response) error {
		if !isRedemption(res.Request) {
			return nil
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return err
		}
		res.Body = io.NopCloser(bytes.NewReader(body))
		var answer struct {
			AgentID string `json:"agent_id"`
		}
		_ = json.Unmarshal(body, &answer)
		s.tap.mu.Lock()
		defer s.tap.mu.Unlock()
		s.tap.got = append(s.tap.got, map[string]string{"status": fmt.Sprint(res.StatusCode), "agent_id": answer.AgentID})
		if end := s.tap.onEnd; end != nil {
			s.tap.onEnd = nil
			end()
			return errors.New("the connector was stopped before the answer reached it")
		}
		return nil
	}
	proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if isRedemption(req) {
			body, err := io.ReadAll(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			var sent struct {
				PublicKey string `json:"public_key"`
			}
			_ = json.Unmarshal(body, &sent)
			s.tap.mu.Lock()
			s.tap.sent = append(s.tap.sent, map[string]string{"idempotency_key": req.Header.Get("Idempotency-Key"), "public_key": sent.PublicKey})
			s.tap.mu.Unlock()
		}
		proxy.ServeHTTP(w, req)
	})}
	go func() { _ = srv.Serve(proxyLn) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

var confirmPath = regexp.MustCompile(`/onboarding/confirm/[A-Za-z0-9_-]{43}`)

// invitation applies for handle through the onboarding API, confirms the address with the mailed link
// as a person's browser does, has the operator approve, and returns the mailed invitation.
func (s *connectorService) invitation(t *testing.T, handle, scope string) string {
	t.Helper()
	return mustFind(t, invitationInMail, s.invitationMailFrom(t, s.env, handle, scope))
}

// invitationMailFrom is invitation with the operator's approval run on the command line env, and
// returns the text of the invitation's mail.
func (s *connectorService) invitationMailFrom(t *testing.T, env map[string]string, handle, scope string) string {
	t.Helper()
	email := handle + "@example.org"
	body := fmt.Sprintf(`{"handle":%q,"organisation_name":"Lentil Lab","email":%q,"setup_scope":%q,"intended_use":"Answer questions about dal."}`, handle, email, scope)
	req, err := http.NewRequest(http.MethodPost, s.base+"/onboarding/api/v1/applications", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	created := decodeBody(t, send(t, req), http.StatusCreated, "application-created")

	link := s.base + confirmPath.FindString(s.sink.Wait(t, email, "Confirm your address", time.Minute).Text)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar}
	page := fetch(t, browser, http.MethodGet, link, map[string]string{"Accept": "text/html"})
	token := csrfField.FindSubmatch(page.body)
	if page.status != http.StatusOK || token == nil {
		t.Fatalf("the confirmation page %s: %d %.300s", link, page.status, page.body)
	}
	form := url.Values{"csrf_token": {html.UnescapeString(string(token[1]))}}
	post, err := http.NewRequest(http.MethodPost, link, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	post.Header.Set("Origin", s.base)
	res, err := browser.Do(post)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("confirming the address: %d", res.StatusCode)
	}
	return s.approvedMail(t, env, created["application_id"].(string), email)
}

// approvedMail has the operator approve the application on the command line env and returns the text
// of the invitation's mail to email.
func (s *connectorService) approvedMail(t *testing.T, env map[string]string, applicationID, email string) string {
	t.Helper()
	admin(t, env, "application", "approve", "--application", applicationID)
	return s.sink.Wait(t, email, "invitation", time.Minute).Text
}

// mailLine is the first line of an invitation's mail text that starts with prefix, trimmed.
func mailLine(t *testing.T, text, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("the mail has no line starting %q:\n%s", prefix, text)
	return ""
}

// mailSetup is an owner's fresh machine on which an invitation's mail was followed.
type mailSetup struct {
	install, setup string                         // the mail's install and setup lines
	profileDir     string                         // the profile setup made
	sh             func(command string) *exec.Cmd // a shell on that machine, the connector on its PATH
}

// runInvitationMail runs the commands of an invitation's mail (text) for handle as written, on a fresh
// machine (its own home): the install line installs the connector from the service, the plan plans
// a new profile, and setup, with the stand-in runtime chosen as the mail says, is typed the invitation
// on a terminal. It checks the install line pins the release key, the plan and setup succeed, and
// doctor is ready after them.
func runInvitationMail(t *testing.T, b connectorBuild, text, handle string) mailSetup {
	t.Helper()
	invitation := mustFind(t, invitationInMail, text)
	m := mailSetup{install: mailLine(t, text, "curl -fsSL "), setup: mailLine(t, text, "svc-connector setup --base-url ")}
	plan := mailLine(t, text, "svc-connector setup --plan ")
	if !strings.Contains(m.install, "--release-key "+strings.TrimSpace(string(mustRead(t, filepath.Join(b.releaseDir, "release-key"))))) {
		t.Fatalf("the install line does not pin the release key: %s", m.install)
	}
	// A fresh machine: its own home, the connector installed by the mail's line, on PATH.
	home := t.TempDir()
	bin := filepath.Join(home, ".local", "bin")
	owner := connectorCLI{bin: "/bin/sh", home: home, conf: filepath.Join(home, ".config", "svc-connector")}
	m.profileDir = filepath.Join(owner.conf, "profiles", handle)
	m.sh = func(command string) *exec.Cmd {
		cmd := owner.command("-c", command)
		cmd.Env = []string{"HOME=" + home, "PATH=" + bin + ":" + os.Getenv("PATH"), "SVC_CONNECTOR_HOME=" + owner.conf}
		return cmd
	}
	if out, err := m.sh(m.install).CombinedOutput(); err != nil {
		t.Fatalf("the mail's install line: %v\n%s", err, out)
	}
	program := newAgentProgram(t, b.agent, home)
	program.logIn(t)
	// The owner chooses the runtime as the mail says: svc-connector runtimes, then --runtime NAME.
	runtimes := m.sh("svc-connector runtimes")
	if out, err := runtimes.Output(); err != nil || !strings.Contains(string(out), "command") {
		t.Fatalf("svc-connector runtimes: %v\n%s", err, out)
	}
	chosen := " --runtime command --command " + program.path + " --login-step 'agent-program login'"
	out, err := m.sh(plan + chosen).Output()
	var p struct {
		Runtimes []struct {
			TargetProfile struct {
				Name, Disposition string
			} `json:"target_profile"`
		} `json:"runtimes"`
	}
	if err != nil || json.Unmarshal(out, &p) != nil || len(p.Runtimes) != 1 || p.Runtimes[0].TargetProfile.Name != handle ||
		p.Runtimes[0].TargetProfile.Disposition != "create" {
		t.Fatalf("the mail's plan: %v\n%s", err, out)
	}
	term := &terminalRun{cmd: m.sh("exec " + m.setup + chosen), done: make(chan struct{})}
	term.start(t)
	term.waitFor(t, "(typing is not shown): ")
	term.typeLine(t, invitation)
	if code, shown := term.end(t); code != 0 || strings.Contains(shown, invitation) {
		t.Fatalf("the mail's setup: exit %d\n%s", code, shown)
	}
	// The agent's first signed request: doctor's round trip, signed with the key setup made.
	out, err = m.sh("svc-connector doctor --profile " + handle).Output()
	var v map[string]any
	if err != nil || json.Unmarshal(out, &v) != nil || v["ready"] != true || checkOf(t, v, "conformance")["ok"] != true {
		t.Fatalf("doctor after the mail's setup: %v\n%s", err, out)
	}
	return m
}

// connectorCLI runs the connector as the owner does, on its own home and configuration directory.
type connectorCLI struct {
	bin, home, conf, base string
}

// command is the connector in a session of its own: without a controlling terminal (whatever the
// test's own is), unless onTerminal gives it one.
func (c connectorCLI) command(args ...string) *exec.Cmd {
	cmd := exec.Command(c.bin, args...)
	cmd.Env = []string{"HOME=" + c.home, "PATH=" + os.Getenv("PATH"), "SVC_CONNECTOR_HOME=" + c.conf, "SVC_BASE_URL=" + c.base}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

// run runs the connector with stdin from /dev/null (no terminal).
func (c connectorCLI) run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := c.command(args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("svc-connector %s: %v", strings.Join(args, " "), err)
	}
	return code, out.String(), errOut.String()
}

// must runs the connector, wants exit code want, and decodes its JSON.
func (c connectorCLI) must(t *testing.T, want int, args ...string) map[string]any {
	t.Helper()
	code, stdout, stderr := c.run(t, args...)
	if code != want {
		t.Fatalf("svc-connector %s: exit %d, want %d\nstdout %s\nstderr %s", strings.Join(args, " "), code, want, stdout, stderr)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("svc-connector %s printed %q: %v", strings.Join(args, " "), stdout, err)
	}
	return out
}

// terminalRun is the connector running on a terminal of its own.
type terminalRun struct {
	cmd    *exec.Cmd
	master *os.File
	mu     sync.Mutex
	out    bytes.Buffer
	done   chan struct{}
}

// onTerminal starts the connector with a pseudo-terminal as its controlling terminal, stdin, stdout
// and stderr, as a person's shell runs it.
func (c connectorCLI) onTerminal(t *testing.T, args ...string) *terminalRun {
	t.Helper()
	r := &terminalRun{cmd: c.command(args...), done: make(chan struct{})}
	r.start(t)
	return r
}

// start starts r's command on a terminal of its own.
func (r *terminalRun) start(t *testing.T) {
	t.Helper()
	master, err := pty.Start(r.cmd) // a new session whose controlling terminal is the pty
	if err != nil {
		t.Fatal(err)
	}
	r.master = master
	go func() {
		defer close(r.done)
		buf := make([]byte, 1024)
		for {
			n, err := master.Read(buf)
			r.mu.Lock()
			r.out.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		master.Close()
	})
}

func (r *terminalRun) shown() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// waitFor waits until the terminal shows text.
func (r *terminalRun) waitFor(t *testing.T, text string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(r.shown(), text) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q; it shows %q", text, r.shown())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// typeLine types a line as a person does, ending it with Enter.
func (r *terminalRun) typeLine(t *testing.T, line string) {
	t.Helper()
	if _, err := r.master.Write([]byte(line + "\r")); err != nil {
		t.Fatal(err)
	}
}

// typeRaw types text as it is (such as Ctrl-D, "\x04": the end of input).
func (r *terminalRun) typeRaw(t *testing.T, text string) {
	t.Helper()
	if _, err := r.master.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
}

// answer runs the connector on a terminal of its own, waits for its question ("[y/N] "), types typed
// as it is, and returns the exit code and what the terminal showed.
func (c connectorCLI) answer(t *testing.T, typed string, args ...string) (int, string) {
	t.Helper()
	term := c.onTerminal(t, args...)
	term.waitFor(t, "[y/N] ")
	term.typeRaw(t, typed)
	return term.end(t)
}

// refusedSetup runs setup (not the plan) on a profile it must refuse: exit 4, with reason in its
// message, and the profile exactly as it was.
func (c connectorCLI) refusedSetup(t *testing.T, profile, reason string, args ...string) {
	t.Helper()
	dir := filepath.Join(c.conf, "profiles", profile)
	before := snapshotDir(t, dir)
	code, stdout, stderr := c.run(t, append([]string{"setup", "--profile", profile}, args...)...)
	if code != 4 || stdout != "" || !strings.Contains(stderr, reason) || !strings.Contains(stderr, "nothing was changed") {
		t.Fatalf("setup of %s (%s): exit %d\nstdout %s\nstderr %s", profile, reason, code, stdout, stderr)
	}
	if after := snapshotDir(t, dir); !slices.Equal(before, after) {
		t.Fatalf("a refused setup (%s) changed the profile:\nbefore %q\nafter  %q", reason, before, after)
	}
}

// sha256File is the lowercase hex SHA-256 of the file at path.
func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// end waits for the connector to exit and returns its exit code (-1 when killed) and what it showed.
func (r *terminalRun) end(t *testing.T) (int, string) {
	t.Helper()
	err := r.cmd.Wait()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return r.cmd.ProcessState.ExitCode(), r.shown()
}

// snapshotDir lists every path under root with its mode, size and modification time ("" entries
// when root does not exist).
func snapshotDir(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %s %d %s", path, fi.Mode(), fi.Size(), fi.ModTime().Format(time.RFC3339Nano)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// plan runs setup --plan and checks the output is exactly the version-2 plan of one runtime per
// entry of want (runtime -> disposition and reasons), and that it changed nothing on disk.
func (c connectorCLI) plan(t *testing.T, profile, handle, scope string, want map[string][]string, runtimes ...string) {
	t.Helper()
	before := snapshotDir(t, c.conf)
	args := []string{"setup", "--plan", "--profile", profile, "--handle", handle, "--setup-scope", scope}
	for _, rt := range runtimes {
		args = append(args, "--runtime", rt)
	}
	code, stdout, stderr := c.run(t, args...)
	if after := snapshotDir(t, c.conf); !slices.Equal(before, after) {
		t.Fatalf("the plan changed the disk:\nbefore %q\nafter  %q", before, after)
	}
	var got any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("plan: %v: %q (stderr %s)", err, stdout, stderr)
	}
	var entries []any
	refused := false
	for _, rt := range runtimes {
		reasons := []any{}
		for _, r := range want[rt][1:] {
			reasons = append(reasons, r)
		}
		entries = append(entries, map[string]any{"runtime": rt, "target_profile": map[string]any{
			"name": profile, "disposition": want[rt][0], "reasons": reasons}})
		refused = refused || want[rt][0] == "refused"
	}
	expected := map[string]any{"version": float64(2), "handle": handle, "setup_scope": scope, "runtimes": entries}
	if !reflect.DeepEqual(got, expected) {
		t.Fatalf("plan\n got  %s\n want %s\nstderr %s", stdout, mustJSON(t, expected), stderr)
	}
	if wantCode := map[bool]int{false: 0, true: 4}[refused]; code != wantCode {
		t.Fatalf("plan: exit %d, want %d: %s", code, wantCode, stderr)
	}
	for _, secret := range []string{c.conf, c.home, "svcinv_", "PRIVATE"} {
		if strings.Contains(stdout, secret) {
			t.Fatalf("the plan holds %q: %s", secret, stdout)
		}
	}
}

// agentProgram is an owner's agent program for the command runtime: the SDK's example agent behind a
// subscription login of its own, as a real runtime has. Its documentation says: log in with
// `agent-program login`; `agent-program login-status` exits 3 until then, and otherwise is the example's
// own check (the profile's identity and a signed conformance request). For the test, its arena seat
// runs until stopped while $HOME/.config/agent-program/slow exists.
type agentProgram struct {
	path, home string
}

const agentProgramScript = `#!/bin/sh
state="$HOME/.config/agent-program/logged-in"
case "$1" in
login) mkdir -p "$(dirname "$state")" && touch "$state"; exit 0 ;;
logout) rm -f "$state"; exit 0 ;;
arena) [ -f "$HOME/.config/agent-program/slow" ] && { sleep 60; exit 0; } ;;
login-status) [ -f "$state" ] || { echo "agent-program: not logged in: run agent-program login" >&2; exit 3; } ;;
esac
exec %q "$@"
`

func newAgentProgram(t *testing.T, forumAgent, home string) agentProgram {
	t.Helper()
	dir := filepath.Join(home, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a := agentProgram{path: filepath.Join(dir, "agent-program"), home: home}
	if err := os.WriteFile(a.path, []byte(fmt.Sprintf(agentProgramScript, forumAgent)), 0o755); err != nil {
		t.Fatal(err)
	}
	return a
}

// loginStep is the program's official login step, as its documentation gives it.
func (a agentProgram) loginStep() string { return "agent-program login" }

// logIn and logOut are the owner using the program's own login.
func (a agentProgram) logIn(t *testing.T)  { a.do(t, "login") }
func (a agentProgram) logOut(t *testing.T) { a.do(t, "logout") }

func (a agentProgram) do(t *testing.T, what string) {
	t.Helper()
	cmd := exec.Command(a.path, what)
	cmd.Env = []string{"HOME=" + a.home, "PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("agent-program %s: %v %s", what, err, out)
	}
}

func readJSONFile(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// checkOf is the named check of a verdict.
func checkOf(t *testing.T, verdict map[string]any, name string) map[string]any {
	t.Helper()
	for _, c := range verdict["checks"].([]any) {
		if c := c.(map[string]any); c["name"] == name {
			return c
		}
	}
	t.Fatalf("the verdict has no check %q: %v", name, verdict)
	return nil
}

func TestConnectorSetsUpChecksAndRunsTheArena(t *testing.T) {
	b := buildConnector(t)
	s := startConnectorService(t, b.releaseDir)
	home := t.TempDir()
	c := connectorCLI{bin: b.connector, home: home, conf: filepath.Join(home, ".config", "svc-connector"), base: s.base}
	profiles := filepath.Join(c.conf, "profiles")
	agent := newAgentProgram(t, b.agent, home)

	// The plan, before anything exists: create; an unknown runtime refused.
	c.plan(t, "forum-a", "conn-forum", "forum", map[string][]string{
		"command":   {"create", "profile_absent"},
		"telepathy": {"refused", "runtime_unsupported"},
	}, "command", "telepathy")
	// A secret status link is never the base URL.
	if code, stdout, stderr := c.run(t, "--base-url", s.base+"/onboarding/status/c2VjcmV0LWxpbms", "setup", "--plan",
		"--profile", "forum-a", "--handle", "conn-forum", "--runtime", "command", "--setup-scope", "forum"); code != 2 || stdout != "" || !strings.Contains(stderr, "status link") {
		t.Fatalf("a status link as base URL: exit %d %q %q", code, stdout, stderr)
	}
	// The invitation is never read from a stdin that is not a terminal; nothing is made before that.
	if code, _, stderr := c.run(t, "setup", "--profile", "forum-a", "--handle", "conn-forum", "--runtime", "command",
		"--command", agent.path, "--setup-scope", "forum"); code != 2 || !strings.Contains(stderr, "--invitation-fd") {
		t.Fatalf("setup without a terminal: exit %d %q", code, stderr)
	}
	if _, err := os.Stat(c.conf); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused setup made %s: %v", c.conf, err)
	}

	var forumAgent string
	t.Run("forum: the invitation typed once into the prompt; a missing login pauses and resumes the same profile", func(t *testing.T) {
		invitation := s.invitation(t, "conn-forum", "forum")
		agent.logOut(t)
		term := c.onTerminal(t, "setup", "--profile", "forum-a", "--handle", "conn-forum", "--runtime", "command",
			"--command", agent.path, "--login-step", agent.loginStep(), "--setup-scope", "forum")
		term.waitFor(t, "(typing is not shown): ")
		term.typeLine(t, invitation)
		code, shown := term.end(t)
		if code != 3 || !strings.Contains(shown, agent.loginStep()) || !strings.Contains(shown, "Paused") {
			t.Fatalf("setup with the login missing: exit %d\n%s", code, shown)
		}
		if strings.Contains(shown, invitation) || strings.Contains(shown, invitation[7:]) {
			t.Fatalf("the terminal showed the invitation:\n%s", shown)
		}
		dir := filepath.Join(profiles, "forum-a")
		if cp := readJSONFile(t, filepath.Join(dir, "setup.json")); cp["state"] != "redeemed" {
			t.Fatalf("checkpoint %v", cp)
		}
		for _, f := range []string{"key.pem", "identity.json", "setup.json", "connector.json"} {
			if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("%s: %v %v", f, fi, err)
			}
		}
		for _, f := range []string{"setup.json", "connector.json", "identity.json"} {
			if raw, _ := os.ReadFile(filepath.Join(dir, f)); bytes.Contains(raw, []byte(invitation)) || bytes.Contains(raw, []byte("PRIVATE")) {
				t.Fatalf("%s holds a secret: %s", f, raw)
			}
		}
		forumAgent = readJSONFile(t, filepath.Join(dir, "identity.json"))["agent_id"].(string)

		// Registered is not ready.
		v := c.must(t, 4, "doctor", "--profile", "forum-a")
		if v["ready"] != false || checkOf(t, v, "runtime_login")["ok"] != false || checkOf(t, v, "conformance")["ok"] != true {
			t.Fatalf("doctor while the login is missing: %v", v)
		}
		c.plan(t, "forum-a", "conn-forum", "forum", map[string][]string{"command": {"resume", "checkpoint_redeemed"}}, "command")

		// The owner logs in with the runtime's own step; the same setup resumes, without an invitation.
		agent.logIn(t)
		done := c.must(t, 0, "setup", "--profile", "forum-a", "--handle", "conn-forum", "--runtime", "command", "--setup-scope", "forum")
		if done["state"] != "complete" || done["agent_id"] != forumAgent {
			t.Fatalf("the resumed setup: %v", done)
		}
		v = c.must(t, 0, "doctor", "--profile", "forum-a")
		if v["ready"] != true || len(v["checks"].([]any)) != 8 {
			t.Fatalf("doctor: %v", v)
		}
		// The welcome grant covers writes; a wallet that cannot pay for a reply is not ready for
		// writing, and doctor and status say so plainly.
		if got := checkOf(t, v, "wallet"); got["ok"] != true || !strings.HasPrefix(got["reason"].(string), fmt.Sprintf("the wallet holds %d credits; a reply costs 5", starterCredits)) {
			t.Fatalf("the wallet check after the welcome grant: %v", got)
		}
		org := readJSONFile(t, filepath.Join(dir, "identity.json"))["org_id"].(string)
		admin(t, s.env, "wallet", "debit", "--org", org, "--credits", fmt.Sprint(starterCredits), "--reason", "host test: empty the wallet")
		broke := "not ready for writing: the wallet holds 0 credits, a reply costs 5; only the operator credits it: tell your owner"
		for _, cmd := range []string{"doctor", "status"} {
			if v := c.must(t, 4, cmd, "--profile", "forum-a"); v["ready"] != false || checkOf(t, v, "wallet")["reason"] != broke ||
				checkOf(t, v, "write_admission")["ok"] != true {
				t.Fatalf("%s with an empty wallet: %v", cmd, v)
			}
		}
		admin(t, s.env, "wallet", "credit", "--org", org, "--credits", "5", "--reason", "host test: one reply")
		st := c.must(t, 0, "status", "--profile", "forum-a")
		if st["agent_id"] != forumAgent || st["setup_state"] != "complete" || st["ready"] != true || st["arena"] != nil {
			t.Fatalf("status: %v", st)
		}
		// A lost login is not ready again.
		agent.logOut(t)
		if v := c.must(t, 4, "doctor", "--profile", "forum-a"); checkOf(t, v, "runtime_login")["ok"] != false {
			t.Fatalf("doctor after logging out: %v", v)
		}
		agent.logIn(t)
		c.must(t, 0, "status", "--profile", "forum-a")
		// Nor is a profile whose files others may read.
		if err := os.Chmod(filepath.Join(dir, "identity.json"), 0o644); err != nil {
			t.Fatal(err)
		}
		if v := c.must(t, 4, "doctor", "--profile", "forum-a"); !strings.HasPrefix(checkOf(t, v, "profile")["reason"].(string), "unsafe_permissions") {
			t.Fatalf("doctor with identity.json readable by others: %v", v)
		}
		c.plan(t, "forum-a", "conn-forum", "forum", map[string][]string{"command": {"refused", "unsafe_permissions"}}, "command")
		forumSetup := []string{"--handle", "conn-forum", "--runtime", "command", "--command", agent.path, "--setup-scope", "forum"}
		c.refusedSetup(t, "forum-a", "unsafe_permissions", forumSetup...)
		if err := os.Chmod(filepath.Join(dir, "identity.json"), 0o600); err != nil {
			t.Fatal(err)
		}
		// Setup itself, not only its plan, refuses a profile of another identity, or one that a running
		// connector holds, and changes nothing in it.
		c.refusedSetup(t, "forum-a", "identity_conflict", "--handle", "conn-other", "--runtime", "command", "--command", agent.path, "--setup-scope", "forum")
		held, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		c.refusedSetup(t, "forum-a", "profile_active", forumSetup...)
		held.Close() // lets go of the lock

		// The same identity again is adopted; another handle is refused.
		c.plan(t, "forum-a", "conn-forum", "forum", map[string][]string{"command": {"adopt", "same_identity"}}, "command")
		c.plan(t, "forum-a", "conn-other", "forum", map[string][]string{"command": {"refused", "identity_conflict"}}, "command")
		// The forum scope changed nothing of the arena.
		if cfg := readJSONFile(t, filepath.Join(dir, "connector.json")); cfg["arena"].(map[string]any)["enabled"] != false {
			t.Fatalf("settings %v", cfg)
		}
	})

	var arenaAgent string
	t.Run("forum_arena: adopt a prepared profile; an interrupted redemption resumes with the same key", func(t *testing.T) {
		dir := filepath.Join(profiles, "arena-a")
		if err := os.MkdirAll(filepath.Join(dir, "runtime", "command"), 0o700); err != nil {
			t.Fatal(err)
		}
		notes := filepath.Join(dir, "runtime", "command", "notes.txt")
		if err := os.WriteFile(notes, []byte("the runtime's own data"), 0o600); err != nil {
			t.Fatal(err)
		}
		c.plan(t, "arena-a", "conn-arena", "forum_arena", map[string][]string{"command": {"adopt", "profile_unbound"}}, "command")

		invitation := s.invitation(t, "conn-arena", "forum_arena")
		// The SDK's example program itself: its login check is the profile's identity.
		term := c.onTerminal(t, "setup", "--profile", "arena-a", "--handle", "conn-arena", "--runtime", "command",
			"--command", b.agent, "--setup-scope", "forum_arena")
		s.tap.arm(func() { _ = term.cmd.Process.Kill() })
		term.waitFor(t, "(typing is not shown): ")
		term.typeLine(t, invitation)
		if code, shown := term.end(t); code != -1 {
			t.Fatalf("the connector was not interrupted: exit %d\n%s", code, shown)
		}
		cp := readJSONFile(t, filepath.Join(dir, "setup.json"))
		if cp["state"] != "redemption_sent" {
			t.Fatalf("checkpoint after the interruption: %v", cp)
		}
		if _, err := os.Stat(filepath.Join(dir, "identity.json")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("identity.json after the lost answer: %v", err)
		}
		key, err := os.ReadFile(filepath.Join(dir, "key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		c.plan(t, "arena-a", "conn-arena", "forum_arena", map[string][]string{"command": {"resume", "checkpoint_redemption_sent"}}, "command")

		// Setup again asks for the invitation again and sends the same redemption.
		term = c.onTerminal(t, "setup", "--profile", "arena-a", "--handle", "conn-arena", "--runtime", "command", "--setup-scope", "forum_arena")
		term.waitFor(t, "(typing is not shown): ")
		term.typeLine(t, invitation)
		if code, shown := term.end(t); code != 0 || !strings.Contains(shown, `"state": "complete"`) || strings.Contains(shown, invitation) {
			t.Fatalf("the resumed setup: exit %d\n%s", code, shown)
		}
		s.tap.mu.Lock()
		sent, got := slices.Clone(s.tap.sent), slices.Clone(s.tap.got)
		s.tap.mu.Unlock()
		if len(sent) != 3 || len(got) != 3 { // conn-forum's, then conn-arena's twice
			t.Fatalf("redemptions sent %v, answered %v", sent, got)
		}
		first, again := sent[1], sent[2]
		if first["idempotency_key"] != again["idempotency_key"] || first["idempotency_key"] != cp["idempotency_key"] ||
			first["public_key"] != again["public_key"] || first["public_key"] != cp["public_key"] {
			t.Fatalf("the resumed redemption is not the same: %v then %v (checkpoint %v)", first, again, cp)
		}
		if got[1]["status"] != "201" || got[2]["status"] != "201" || got[1]["agent_id"] == "" || got[1]["agent_id"] != got[2]["agent_id"] {
			t.Fatalf("the answers: %v", got)
		}
		arenaAgent = got[1]["agent_id"]
		if id := readJSONFile(t, filepath.Join(dir, "identity.json")); id["agent_id"] != arenaAgent || id["handle"] != "conn-arena" {
			t.Fatalf("identity %v, want agent %s", id, arenaAgent)
		}
		if again, err := os.ReadFile(filepath.Join(dir, "key.pem")); err != nil || !bytes.Equal(again, key) {
			t.Fatalf("the key changed: %v", err)
		}
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		slices.Sort(names)
		if want := []string{"connector.json", "identity.json", "key.pem", "lock", "logs", "runtime", "settings.lock", "setup.json"}; !slices.Equal(names, want) {
			t.Fatalf("the profile holds %v, want %v (one key, nothing else)", names, want)
		}
		if b, err := os.ReadFile(notes); err != nil || string(b) != "the runtime's own data" {
			t.Fatalf("adopt lost the runtime's data: %q %v", b, err)
		}
	})

	t.Run("forum_arena: preflight, enable after confirmation, a runner that claims and reports", func(t *testing.T) {
		if arenaAgent == "" {
			t.Skip("the arena profile was not set up")
		}
		dir := filepath.Join(profiles, "arena-a")
		v := c.must(t, 0, "arena", "preflight", "--profile", "arena-a")
		if v["ready"] != true {
			t.Fatalf("preflight: %v", v)
		}
		// Set up, but the arena is not enabled: not ready.
		if st := c.must(t, 4, "status", "--profile", "arena-a"); checkOf(t, st, "arena_enabled")["ok"] != false {
			t.Fatalf("status before enable: %v", st)
		}
		if src := checkOf(t, v, "provider_source"); src["ok"] != true || !strings.Contains(src["reason"].(string), sha256File(t, b.agent)) {
			t.Fatalf("preflight's provider_source: %v", src)
		}
		// Enabling takes the owner's own confirmation, typed on the controlling terminal: never a flag,
		// never stdin. Without a terminal, no, or the end of input, it is not enabled.
		if code, _, stderr := c.run(t, "arena", "enable", "--profile", "arena-a"); code != 2 || !strings.Contains(stderr, "controlling terminal") {
			t.Fatalf("enable without a terminal: exit %d %q", code, stderr)
		}
		if code, _, stderr := c.run(t, "arena", "enable", "--profile", "arena-a", "--yes"); code != 2 {
			t.Fatalf("enable --yes: exit %d %q", code, stderr)
		}
		piped := c.command("arena", "enable", "--profile", "arena-a")
		piped.Stdin = strings.NewReader("y\n")
		if out, err := piped.CombinedOutput(); piped.ProcessState.ExitCode() != 2 {
			t.Fatalf("enable with y on stdin: %v %s", err, out)
		}
		for typed, what := range map[string]string{"n\r": "no", "\x04": "the end of input", "\r": "an empty line"} {
			if code, shown := c.answer(t, typed, "arena", "enable", "--profile", "arena-a"); code != 4 || !strings.Contains(shown, b.agent) {
				t.Fatalf("enable answered %s: exit %d\n%s", what, code, shown)
			}
		}
		if cfg := readJSONFile(t, filepath.Join(dir, "connector.json")); cfg["arena"].(map[string]any)["enabled"] != false {
			t.Fatalf("settings after the owner did not confirm: %v", cfg)
		}
		if code, shown := c.answer(t, "y\r", "arena", "enable", "--profile", "arena-a"); code != 0 || !strings.Contains(shown, `"arena_enabled": true`) {
			t.Fatalf("enable answered y: exit %d\n%s", code, shown)
		}
		arenaCfg := readJSONFile(t, filepath.Join(dir, "connector.json"))["arena"].(map[string]any)
		runnerID, _ := arenaCfg["runner_id"].(string)
		source, _ := arenaCfg["provider_source"].(map[string]any)
		if arenaCfg["enabled"] != true || len(runnerID) != 36 || source["path"] != b.agent || source["sha256"] != sha256File(t, b.agent) || source["runtime"] != "command" {
			t.Fatalf("settings after enable: %v", arenaCfg)
		}
		// Enabled is not ready: no runner polls yet.
		st := c.must(t, 4, "status", "--profile", "arena-a")
		if a := st["arena"].(map[string]any); a["enabled"] != true || a["runner_polling"] != false || checkOf(t, st, "arena_runner")["ok"] != false {
			t.Fatalf("status after enable: %v", st)
		}

		// The operator opens a match with the agent's seat; the runner claims its intent, runs the
		// agent program for it and reports how it ended.
		match := admin(t, s.env, "arena", "match", "create", "--seat", "north="+arenaAgent)
		matchID := match["match_id"].(string)
		code, stdout, stderr := c.run(t, "arena", "run", "--profile", "arena-a", "--once")
		if code != 0 {
			t.Fatalf("arena run --once: exit %d\n%s\n%s", code, stdout, stderr)
		}
		shown := admin(t, s.env, "arena", "match", "show", "--match", matchID)
		intent := shown["intents"].([]any)[0].(map[string]any)
		if intent["runner_id"] != runnerID || intent["state"] != "stopped" || intent["reason_code"] != "completed" {
			t.Fatalf("the intent after the runner: %v\n%s", intent, stderr)
		}
		if st := c.must(t, 4, "status", "--profile", "arena-a"); st["arena"].(map[string]any)["runner_polling"] != false {
			t.Fatalf("status after a runner that exited: %v", st)
		}

		// A runner that keeps polling: status is ready, and the profile is active.
		runner := c.command("arena", "run", "--profile", "arena-a")
		var runnerOut bytes.Buffer
		runner.Stdout, runner.Stderr = &runnerOut, &runnerOut
		if err := runner.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = runner.Process.Kill() })
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, stdout, _ := c.run(t, "status", "--profile", "arena-a")
			if code == 0 {
				var st map[string]any
				if err := json.Unmarshal([]byte(stdout), &st); err != nil || st["arena"].(map[string]any)["runner_polling"] != true {
					t.Fatalf("status: %v %s", err, stdout)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the runner never polled: %s\n%s", stdout, runnerOut.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
		c.plan(t, "arena-a", "conn-arena", "forum_arena", map[string][]string{"command": {"refused", "profile_active"}}, "command")
		// The intent of another match, opened while it runs, is claimed and run too (a new match: the
		// example program asks a new ticket with a new session key, refused while the first one lives).
		other := admin(t, s.env, "arena", "match", "create", "--seat", "south="+arenaAgent)["match_id"].(string)
		deadline = time.Now().Add(30 * time.Second)
		for {
			it := admin(t, s.env, "arena", "match", "show", "--match", other)["intents"].([]any)[0].(map[string]any)
			if it["state"] == "stopped" && it["reason_code"] == "completed" && it["runner_id"] == runnerID {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the second intent: %v\n%s", it, runnerOut.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
		// SIGTERM stops the runner cleanly; then it no longer polls.
		if err := runner.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := runner.Wait(); err != nil {
			t.Fatalf("the runner on SIGTERM: %v\n%s", err, runnerOut.String())
		}
		if st := c.must(t, 4, "status", "--profile", "arena-a"); st["arena"].(map[string]any)["runner_polling"] != false {
			t.Fatalf("status after the runner stopped: %v", st)
		}
		if hb := readJSONFile(t, filepath.Join(dir, "runner.json")); hb["runner_id"] != runnerID {
			t.Fatalf("heartbeat %v", hb)
		}

		// Setup again with the same program keeps the owner's decision.
		if done := c.must(t, 0, "setup", "--profile", "arena-a", "--handle", "conn-arena", "--runtime", "command",
			"--setup-scope", "forum_arena"); done["arena_enabled"] != true {
			t.Fatalf("setup again with the same program: %v", done)
		}
		// The owner switches the profile to another agent program: the same identity is adopted, nothing
		// is redeemed (no terminal needed), and the arena is no longer enabled: the owner's confirmation
		// named the program, so the new one is confirmed again. The runner id stays.
		c.plan(t, "arena-a", "conn-arena", "forum_arena", map[string][]string{"command": {"adopt", "same_identity"}}, "command")
		agent.logIn(t)
		code, stdout, stderr = c.run(t, "setup", "--profile", "arena-a", "--handle", "conn-arena", "--runtime", "command",
			"--command", agent.path, "--setup-scope", "forum_arena")
		var done map[string]any
		if err := json.Unmarshal([]byte(stdout), &done); err != nil || code != 0 || done["agent_id"] != arenaAgent || done["state"] != "complete" ||
			done["arena_enabled"] != false || !strings.Contains(stderr, "no longer enabled") || !strings.Contains(stderr, agent.path) {
			t.Fatalf("setup with another program: exit %d\n%s\n%s", code, stdout, stderr)
		}
		if cfg := readJSONFile(t, filepath.Join(dir, "connector.json")); cfg["arena"].(map[string]any)["enabled"] != false ||
			cfg["arena"].(map[string]any)["runner_id"] != runnerID || cfg["arena"].(map[string]any)["provider_source"] != nil {
			t.Fatalf("settings after setup with another program: %v", cfg)
		}
		if code, _, stderr := c.run(t, "arena", "run", "--profile", "arena-a", "--once"); code != 4 || !strings.Contains(stderr, "not enabled") {
			t.Fatalf("arena run before the new program is confirmed: exit %d %s", code, stderr)
		}
		if code, shown := c.answer(t, "y\r", "arena", "enable", "--profile", "arena-a"); code != 0 || !strings.Contains(shown, agent.path) {
			t.Fatalf("enable the new program: exit %d\n%s", code, shown)
		}
		if src := readJSONFile(t, filepath.Join(dir, "connector.json"))["arena"].(map[string]any)["provider_source"].(map[string]any); src["path"] != agent.path ||
			src["sha256"] != sha256File(t, agent.path) {
			t.Fatalf("the provider source of the new program: %v", src)
		}
		// Stopped by its owner while its runtime runs: the runtime is stopped and the intent reported
		// stopped, cancelled_by_owner.
		if err := os.WriteFile(filepath.Join(home, ".config", "agent-program", "slow"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		slow := admin(t, s.env, "arena", "match", "create", "--seat", "east="+arenaAgent)["match_id"].(string)
		runner = c.command("arena", "run", "--profile", "arena-a")
		runnerOut.Reset()
		runner.Stdout, runner.Stderr = &runnerOut, &runnerOut
		if err := runner.Start(); err != nil {
			t.Fatal(err)
		}
		deadline = time.Now().Add(30 * time.Second)
		for admin(t, s.env, "arena", "match", "show", "--match", slow)["intents"].([]any)[0].(map[string]any)["state"] != "running" {
			if time.Now().After(deadline) {
				t.Fatalf("the slow intent never ran:\n%s", runnerOut.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err := runner.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := runner.Wait(); err != nil {
			t.Fatalf("the runner on SIGTERM: %v\n%s", err, runnerOut.String())
		}
		if it := admin(t, s.env, "arena", "match", "show", "--match", slow)["intents"].([]any)[0].(map[string]any); it["state"] != "stopped" || it["reason_code"] != "cancelled_by_owner" {
			t.Fatalf("the intent stopped by the owner: %v\n%s", it, runnerOut.String())
		}

		// The program changes after the owner enabled it: the provider source is no longer the one
		// confirmed; doctor says so and the runner starts nothing with it.
		script, err := os.ReadFile(agent.path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(agent.path, append(script, []byte("# changed after the owner enabled it\n")...), 0o755); err != nil {
			t.Fatal(err)
		}
		if v := c.must(t, 4, "doctor", "--profile", "arena-a"); checkOf(t, v, "provider_source")["ok"] != false ||
			!strings.Contains(checkOf(t, v, "provider_source")["reason"].(string), "changed since the owner enabled the arena") {
			t.Fatalf("doctor with a changed program: %v", v)
		}
		if v := c.must(t, 4, "arena", "preflight", "--profile", "arena-a"); checkOf(t, v, "provider_source")["ok"] != false {
			t.Fatalf("preflight with a changed program: %v", v)
		}
		changed := admin(t, s.env, "arena", "match", "create", "--seat", "west="+arenaAgent)["match_id"].(string)
		if code, _, stderr := c.run(t, "arena", "run", "--profile", "arena-a", "--once"); code != 4 || !strings.Contains(stderr, "changed since the owner enabled the arena") {
			t.Fatalf("arena run with a changed program: exit %d %s", code, stderr)
		}
		if it := admin(t, s.env, "arena", "match", "show", "--match", changed)["intents"].([]any)[0].(map[string]any); it["state"] != "open" {
			t.Fatalf("the intent of a changed program: %v", it)
		}
		// The owner disables the arena, and confirms the changed program anew.
		if got := c.must(t, 0, "arena", "disable", "--profile", "arena-a"); got["arena_enabled"] != false {
			t.Fatalf("disable: %v", got)
		}
		c.must(t, 0, "arena", "preflight", "--profile", "arena-a")
		if code, shown := c.answer(t, "y\r", "arena", "enable", "--profile", "arena-a"); code != 0 || !strings.Contains(shown, sha256File(t, agent.path)) {
			t.Fatalf("enable the changed program: exit %d\n%s", code, shown)
		}
		if v := c.must(t, 4, "doctor", "--profile", "arena-a"); checkOf(t, v, "provider_source")["ok"] != true {
			t.Fatalf("doctor after the owner confirmed the changed program: %v", v)
		}
	})

	t.Run("the invitation handed over on a named descriptor, without a terminal", func(t *testing.T) {
		invitation := s.invitation(t, "conn-fd", "forum")
		// Never from a file, even one handed over as a descriptor (3< invitation.txt).
		path := filepath.Join(t.TempDir(), "invitation.txt")
		if err := os.WriteFile(path, []byte(invitation+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		file, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		fromFile := c.command("setup", "--profile", "fd-a", "--handle", "conn-fd", "--runtime", "command", "--command", b.agent,
			"--setup-scope", "forum", "--invitation-fd", "3")
		fromFile.ExtraFiles = []*os.File{file}
		refused, _ := fromFile.CombinedOutput()
		file.Close()
		if code := fromFile.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(refused), "regular file") || strings.Contains(string(refused), invitation) {
			t.Fatalf("setup --invitation-fd 3 from a file: exit %d\n%s", code, refused)
		}
		if _, err := os.Stat(filepath.Join(profiles, "fd-a")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a refused setup made the profile: %v", err)
		}
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(w, invitation)
		w.Close()
		cmd := c.command("setup", "--profile", "fd-a", "--handle", "conn-fd", "--runtime", "command", "--command", b.agent,
			"--setup-scope", "forum", "--invitation-fd", "3")
		cmd.ExtraFiles = []*os.File{r} // descriptor 3
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil || !strings.Contains(out.String(), `"state": "complete"`) {
			t.Fatalf("setup --invitation-fd 3: %v\n%s\n%s", err, out.String(), errOut.String())
		}
		r.Close()
		if strings.Contains(out.String()+errOut.String(), invitation) {
			t.Fatal("setup printed the invitation")
		}
		c.must(t, 0, "doctor", "--profile", "fd-a")
	})

	t.Run("the connector is the signed release the service publishes", func(t *testing.T) {
		v := c.must(t, 0, "version", "--json")
		if v["version"] != "v0.0.0-hosttest" || v["release_key"] == "" {
			t.Fatalf("version %v", v)
		}
		if got := c.must(t, 0, "self-update", "--check"); got["published"] != "v0.0.0-hosttest" || got["update_available"] != false {
			t.Fatalf("self-update --check: %v", got)
		}
		if got := c.must(t, 0, "self-update"); got["updated"] != false {
			t.Fatalf("self-update: %v", got)
		}
	})

	t.Run("the invitation's mail: its commands, run as written, install, plan and set up the agent", func(t *testing.T) {
		// The operator approves from a shell without the server's base URL (svc admin's default is
		// http://localhost:8080): the mail is worded by the server, so it names the server.
		shell := maps.Clone(s.env)
		delete(shell, "SVC_BASE_URL")
		text := s.invitationMailFrom(t, shell, "conn-mail", "forum")
		if strings.Contains(text, "localhost:8080") {
			t.Fatalf("the mail names the operator's shell's base URL:\n%s", text)
		}
		invitation := mustFind(t, invitationInMail, text)
		m := runInvitationMail(t, b, text, "conn-mail")
		// The mail's link is the page with the same steps, and without the invitation.
		const pageLine = "anyone. The same steps are on "
		page := fetch(t, http.DefaultClient, http.MethodGet, mailLine(t, text, pageLine)[len(pageLine):], map[string]string{"Accept": "text/html"})
		body := html.UnescapeString(string(page.body))
		if page.status != http.StatusOK || !strings.Contains(body, m.install) || !strings.Contains(body, m.setup) || strings.Contains(body, invitation) {
			t.Fatalf("the setup page: %d\n%s", page.status, body)
		}
	})
}

// mustRead is the file at path.
func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
