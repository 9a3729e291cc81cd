package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svcforum/svc/connector/profile"
	"github.com/svcforum/svc/connector/runtime"
)

// run runs svc-connector with args on a configuration directory of its own.
func run(t *testing.T, stdin *os.File, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	e := DefaultEnv()
	e.Stdin, e.Stdout, e.Stderr = stdin, &out, &errOut
	code = Main(context.Background(), append([]string{"svc-connector"}, args...), e)
	return code, out.String(), errOut.String()
}

// closedURL is the base URL of a loopback port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil {
			out = append(out, path)
		}
		return nil
	})
	return out
}

func TestBaseURLRefusesAStatusLink(t *testing.T) {
	for _, raw := range []string{"https://forum.test/onboarding/status/Zm9vYmFy", "https://forum.test/onboarding/api/v1/status/abc",
		"https://forum.test/Onboarding/Status/x", "https://forum.test/ONBOARDING/API/V1/STATUS/abc", "https://forum.test/onboarding%2Fstatus/x",
		"https://forum.test/x/onboarding/Status/y?z=1", "forum.test/onboarding/status/x"} {
		_, err := baseURL(raw)
		var coder interface{ ExitCode() int }
		if !errors.Is(err, ErrStatusLink) || !errors.As(err, &coder) || coder.ExitCode() != ExitUsage {
			t.Fatalf("%s: %v", raw, err)
		}
	}
	for _, raw := range []string{"forum.test", "ftp://forum.test", "https://forum.test/?a=b", "https://user:pw@forum.test", ""} {
		if _, err := baseURL(raw); err == nil {
			t.Fatalf("%q accepted", raw)
		}
	}
	if got, err := baseURL("https://forum.test/"); err != nil || got != "https://forum.test" {
		t.Fatalf("%q %v", got, err)
	}
}

func TestSetupRefusesAStatusLinkAndChangesNothing(t *testing.T) {
	dir := t.TempDir()
	for _, plan := range [][]string{{"--plan"}, nil} {
		for _, link := range []string{"https://forum.test/onboarding/status/c2VjcmV0", "https://forum.test/Onboarding/Status/c2VjcmV0"} {
			args := append([]string{"--config-dir", filepath.Join(dir, "conf"), "--base-url", link, "setup"}, plan...)
			args = append(args, "--profile", "agent-a", "--handle", "lentil-helper", "--runtime", "command", "--setup-scope", "forum")
			code, stdout, stderr := run(t, nil, args...)
			if code != ExitUsage || stdout != "" || !strings.Contains(stderr, "status link") || strings.Contains(stderr, "c2VjcmV0") ||
				strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Fatalf("%s: exit %d, stdout %q, stderr %q", link, code, stdout, stderr)
			}
		}
	}
	if got := tree(t, dir); len(got) != 1 {
		t.Fatalf("something was made: %v", got)
	}
}

func TestPlanIsVersion2JSONAndChangesNothing(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "conf")
	code, stdout, stderr := run(t, nil, "--config-dir", conf, "--base-url", closedURL(t), "setup", "--plan",
		"--profile", "agent-a", "--handle", "lentil-helper", "--runtime", "command", "--runtime", "telepathy", "--setup-scope", "forum_arena")
	if code != ExitRefused {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
		t.Fatalf("%v: %q", err, stdout)
	}
	keys := func(m map[string]any) []string {
		var k []string
		for n := range m {
			k = append(k, n)
		}
		slices.Sort(k)
		return k
	}
	if got := keys(raw); !slices.Equal(got, []string{"handle", "runtimes", "setup_scope", "version"}) || raw["version"] != float64(2) {
		t.Fatalf("plan %s", stdout)
	}
	runtimes := raw["runtimes"].([]any)
	if len(runtimes) != 2 {
		t.Fatalf("runtimes %v", runtimes)
	}
	for i, r := range runtimes {
		r := r.(map[string]any)
		tp := r["target_profile"].(map[string]any)
		if got := keys(r); !slices.Equal(got, []string{"runtime", "target_profile"}) {
			t.Fatalf("runtime entry %v", r)
		}
		if got := keys(tp); !slices.Equal(got, []string{"disposition", "name", "reasons"}) || tp["name"] != "agent-a" || tp["disposition"] != "refused" {
			t.Fatalf("target_profile %v", tp)
		}
		var reasons []string
		for _, x := range tp["reasons"].([]any) {
			reasons = append(reasons, x.(string))
		}
		want := []string{reasonServiceUnreachable}
		if i == 1 {
			want = []string{reasonRuntimeUnsupported, reasonServiceUnreachable}
		}
		if !slices.Equal(reasons, want) {
			t.Fatalf("reasons of %v: %v, want %v", r["runtime"], reasons, want)
		}
	}
	if strings.Contains(stdout, dir) || strings.Contains(stdout, "/") {
		t.Fatalf("the plan names a local path: %s", stdout)
	}
	if got := tree(t, dir); len(got) != 1 {
		t.Fatalf("the plan made %v", got)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	dir := t.TempDir()
	for name, args := range map[string][]string{
		"no profile":     {"setup", "--plan", "--handle", "lentil-helper", "--runtime", "command", "--setup-scope", "forum"},
		"no handle":      {"setup", "--plan", "--profile", "a", "--runtime", "command", "--setup-scope", "forum"},
		"no runtime":     {"setup", "--plan", "--profile", "a", "--handle", "lentil-helper", "--setup-scope", "forum"},
		"bad scope":      {"setup", "--plan", "--profile", "a", "--handle", "lentil-helper", "--runtime", "command", "--setup-scope", "arena"},
		"no base url":    {"setup", "--plan", "--profile", "a", "--handle", "lentil-helper", "--runtime", "command", "--setup-scope", "forum"},
		"two runtimes":   {"--base-url", "http://127.0.0.1:1", "setup", "--profile", "a", "--handle", "lentil-helper", "--runtime", "command", "--runtime", "x", "--setup-scope", "forum"},
		"unknown flag":   {"setup", "--invitation", "svcinv_q3Xb9Tz1LwR5mN8pVc2KdA"},
		"doctor no name": {"doctor"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("SVC_BASE_URL", "")
			code, _, stderr := run(t, nil, append([]string{"--config-dir", dir}, args...)...)
			if code != ExitUsage || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || strings.Contains(stderr, "svcinv_") {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
		})
	}
}

func TestRuntimesAndVersion(t *testing.T) {
	code, stdout, _ := run(t, nil, "runtimes", "--json")
	if code != 0 || !strings.Contains(stdout, `"name": "command"`) {
		t.Fatalf("exit %d: %s", code, stdout)
	}
	var list struct {
		Runtimes []struct{ Name, Setup string } `json:"runtimes"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); err != nil {
		t.Fatal(err)
	}
	for _, rt := range list.Runtimes {
		if rt.Name == "codex" && rt.Setup != "svc-connector setup --profile NAME --handle HANDLE --runtime codex --setup-scope forum" {
			t.Fatalf("codex setup line %q", rt.Setup)
		}
	}
	if code, stdout, _ = run(t, nil, "runtimes"); code != 0 || !strings.Contains(stdout, "CODEX_HOME=PROFILE_DIR/runtime/codex codex login") {
		t.Fatalf("exit %d: %s", code, stdout)
	}
	code, stdout, _ = run(t, nil, "version", "--json")
	if code != 0 || !strings.Contains(stdout, `"version": "dev"`) {
		t.Fatalf("exit %d: %s", code, stdout)
	}
}

// A refused plan of a service that is down says so once, in one line per finding, each URL named once.
func TestARefusedPlanSaysWhyOnce(t *testing.T) {
	base := closedURL(t)
	code, _, stderr := run(t, nil, "--config-dir", filepath.Join(t.TempDir(), "conf"), "--base-url", base, "setup", "--plan",
		"--profile", "agent-a", "--handle", "lentil-helper", "--runtime", "command", "--runtime", "telepathy", "--setup-scope", "forum")
	if code != ExitRefused {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	var service []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "refused: ") {
			t.Fatalf("a line that is not a finding: %q", l)
		}
		if strings.Contains(l, base) {
			service = append(service, l)
		}
	}
	if len(service) != 1 {
		t.Fatalf("the unreachable service is said %d times:\n%s", len(service), stderr)
	}
	l := service[0]
	if strings.Count(l, base) != 1 || strings.Contains(l, " svc: ") || !strings.Contains(l, "connection refused") {
		t.Fatalf("the finding is not one clear line naming the URL once: %q", l)
	}
}

// The owner confirms arena enable on the terminal only: no flag confirms it in advance.
func TestArenaEnableHasNoYes(t *testing.T) {
	for _, flag := range []string{"--yes", "-y", "--confirm"} {
		code, stdout, stderr := run(t, nil, "--config-dir", t.TempDir(), "--base-url", closedURL(t), "arena", "enable", "--profile", "agent-a", flag)
		if code != ExitUsage || stdout != "" || !strings.Contains(stderr, "flag provided but not defined") {
			t.Fatalf("%s: exit %d %q %q", flag, code, stdout, stderr)
		}
	}
}

// The invitation never comes from a file, even one handed over as a descriptor (3< invitation.txt).
func TestAnInvitationFromAFileIsRefusedBeforeAnythingChanges(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "invitation.txt")
	if err := os.WriteFile(path, []byte("svcinv_q3Xb9Tz1LwR5mN8pVc2KdA\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, fd := range []string{fmt.Sprint(f.Fd()), "1", "2"} {
		code, stdout, stderr := run(t, nil, "--config-dir", filepath.Join(dir, "conf"), "--base-url", closedURL(t), "setup",
			"--profile", "agent-a", "--handle", "lentil-helper", "--runtime", "command", "--command", "sh", "--setup-scope", "forum", "--invitation-fd", fd)
		if code != ExitUsage || stdout != "" || !strings.Contains(stderr, "--invitation-fd "+fd) || strings.Contains(stderr, "svcinv_") {
			t.Fatalf("--invitation-fd %s: exit %d %q %q", fd, code, stdout, stderr)
		}
		if fd != "1" && fd != "2" && !strings.Contains(stderr, "regular file") {
			t.Fatalf("the refusal does not say why: %q", stderr)
		}
	}
	if off, err := f.Seek(0, io.SeekCurrent); err != nil || off != 0 {
		t.Fatalf("the file was read: %d %v", off, err)
	}
	if got := tree(t, dir); len(got) != 2 {
		t.Fatalf("something was made: %v", got)
	}
}

// A program the owner named other than the one the arena was enabled for is not enabled: the owner
// confirms it again.
func TestAnotherProgramIsNotEnabled(t *testing.T) {
	now := time.Now()
	enabled := func() *profile.Config {
		return &profile.Config{Version: 1, SetupScope: ScopeForumArena,
			Runtime: profile.RuntimeConfig{Name: "command", Command: "/opt/agent/a", LoginStep: "a login"},
			Arena: profile.ArenaConfig{Enabled: true, RunnerID: "0196f500-0000-4000-8000-000000000001", EnabledAt: &now,
				Source: &profile.ProviderSource{Runtime: "command", Path: "/opt/agent/a", SHA256: "ab"}}}
	}
	cfg := enabled()
	if dropped := applySettings(cfg, ScopeForumArena, profile.RuntimeConfig{Name: "command", Command: "/opt/agent/a", LoginStep: "another step"}); dropped != nil || !cfg.Arena.Enabled || cfg.Arena.Source == nil {
		t.Fatalf("the same program: dropped %v, %+v", dropped, cfg.Arena)
	}
	for name, rc := range map[string]profile.RuntimeConfig{
		"another program": {Name: "command", Command: "/opt/agent/b"},
		"another runtime": {Name: "other", Command: "/opt/agent/a"},
	} {
		cfg := enabled()
		dropped := applySettings(cfg, ScopeForumArena, rc)
		if dropped == nil || dropped.Path != "/opt/agent/a" || cfg.Arena.Enabled || cfg.Arena.EnabledAt != nil || cfg.Arena.Source != nil ||
			cfg.Arena.RunnerID != "0196f500-0000-4000-8000-000000000001" || cfg.Runtime != rc {
			t.Fatalf("%s: dropped %v, %+v", name, dropped, cfg)
		}
	}
	fresh := &profile.Config{}
	if dropped := applySettings(fresh, ScopeForum, profile.RuntimeConfig{Name: "command", Command: "/opt/agent/a"}); dropped != nil || fresh.Arena.Enabled {
		t.Fatalf("a new profile: %v %+v", dropped, fresh)
	}
}

// `arena disable` changes connector.json only under the settings lock, so a setup or an enable that
// holds it cannot write enabled=true back over it.
func TestDisableWaitsForTheSettingsLock(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "conf")
	p, err := profile.Store{Root: conf}.Open("agent-a")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Make("command"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpdateConfig(func(c *profile.Config, _ bool) error {
		c.SetupScope, c.Runtime.Name, c.Arena.Enabled, c.Arena.RunnerID = ScopeForumArena, "command", true, "0196f500-0000-4000-8000-000000000001"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	held, err := p.LockSettings() // a setup in the middle of its read-modify-write
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, _, stderr := run(t, nil, "--config-dir", conf, "arena", "disable", "--profile", "agent-a")
		done <- result{code, stderr}
	}()
	select {
	case r := <-done:
		t.Fatalf("disable did not wait for the settings lock: exit %d %s", r.code, r.stderr)
	case <-time.After(500 * time.Millisecond):
	}
	// The setup writes its change and lets go; then disable reads it, and its own change is kept.
	if err := held.Unlock(); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.code != ExitOK {
		t.Fatalf("disable: exit %d %s", r.code, r.stderr)
	}
	cfg, err := p.ReadConfig()
	if err != nil || cfg.Arena.Enabled || cfg.Arena.RunnerID == "" {
		t.Fatalf("after disable: %+v %v", cfg, err)
	}
}

// provider_source: the program can run, and once the arena is enabled it is the one the owner
// confirmed.
func TestTheProviderSourceCheck(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "agent")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	drv, _ := runtime.Builtin().Lookup("command")
	l := &loaded{drv: drv, inst: runtime.Instance{Settings: runtime.Settings{Command: prog}},
		cfg: &profile.Config{SetupScope: ScopeForumArena, Runtime: profile.RuntimeConfig{Name: "command", Command: prog}}}
	ctx := context.Background()
	if c := sourceCheck(ctx, l); !c.OK || c.Name != "provider_source" {
		t.Fatalf("before enable: %+v", c)
	}
	src, err := drv.Source(ctx, l.inst)
	if err != nil {
		t.Fatal(err)
	}
	l.cfg.Arena = profile.ArenaConfig{Enabled: true, Source: &profile.ProviderSource{Runtime: "command", Path: prog, SHA256: src.SHA256}}
	if c := sourceCheck(ctx, l); !c.OK {
		t.Fatalf("enabled, unchanged: %+v", c)
	}
	if err := enabledSource(ctx, drv, l.inst, l.cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if c := sourceCheck(ctx, l); c.OK || !strings.Contains(c.Reason, "changed since the owner enabled the arena") {
		t.Fatalf("enabled, changed: %+v", c)
	}
	if err := enabledSource(ctx, drv, l.inst, l.cfg); err == nil {
		t.Fatal("a changed program would start")
	}
	l.cfg.Arena.Source = nil
	if c := sourceCheck(ctx, l); c.OK {
		t.Fatalf("enabled without a recorded source: %+v", c)
	}
	l.cfg.Arena = profile.ArenaConfig{}
	if err := os.Chmod(prog, 0o775); err != nil {
		t.Fatal(err)
	}
	if c := sourceCheck(ctx, l); c.OK || !strings.Contains(c.Reason, "others may change it") {
		t.Fatalf("a program others may change: %+v", c)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(prog, link); err != nil {
		t.Fatal(err)
	}
	l.inst.Settings.Command = link
	if c := sourceCheck(ctx, l); c.OK {
		t.Fatalf("a link to a program others may change: %+v", c)
	}
}
