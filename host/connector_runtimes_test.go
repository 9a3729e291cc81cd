package host

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// codexStandIn is Codex CLI for this test (the real one cannot be installed here): it finds its state
// only through CODEX_HOME, answers --version and `codex login status` (exit 0 logged in, 1 "Not logged
// in", as Codex documents), and its `codex login` (the official login step) logs in, in that home.
const codexStandIn = `#!/bin/sh
home="$CODEX_HOME"
[ -n "$home" ] || { echo "no CODEX_HOME" >&2; exit 70; }
case "$1 $2" in
"--version "*) echo "codex-cli 0.0.0-stand-in"; exit 0 ;;
"login status") if [ -f "$home/stand-in-login" ]; then echo "Logged in using ChatGPT"; exit 0; fi; echo "Not logged in"; exit 1 ;;
"login "*) : > "$home/stand-in-login"; exit 0 ;;
esac
exit 64
`

// An agent runtime's driver (codex) end to end with the released connector: setup registers the svc
// MCP server in the runtime's configuration inside the profile, pauses for the runtime's own login
// with the step that points the runtime at the profile, resumes once the owner ran that step, and
// writes nothing outside the profile.
func TestConnectorSetsUpACodexRuntime(t *testing.T) {
	b := buildConnector(t)
	s := startConnectorService(t, b.releaseDir)
	home := t.TempDir()
	// The profiles are not in the default configuration directory: the registration names them.
	c := connectorCLI{bin: b.connector, home: home, conf: filepath.Join(t.TempDir(), "svc-profiles"), base: s.base}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "codex"), []byte(codexStandIn), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	c.plan(t, "codex-a", "conn-codex", "forum", map[string][]string{
		"codex":  {"create", "profile_absent"},
		"gemini": {"create", "profile_absent"},
	}, "codex", "gemini")

	invitation := s.invitation(t, "conn-codex", "forum")
	media := t.TempDir() // the one directory the agent may upload images from
	term := c.onTerminal(t, "setup", "--profile", "codex-a", "--handle", "conn-codex", "--runtime", "codex", "--setup-scope", "forum", "--media-dir", media)
	term.waitFor(t, "(typing is not shown): ")
	term.typeLine(t, invitation)
	code, shown := term.end(t)
	dir := filepath.Join(c.conf, "profiles", "codex-a")
	data := filepath.Join(dir, "runtime", "codex")
	step := "CODEX_HOME=" + data + " codex login"
	if code != 3 || !strings.Contains(shown, "Paused") || !strings.Contains(shown, step) {
		t.Fatalf("setup with the login missing: exit %d\n%s", code, shown)
	}

	// The registration: Codex's config.toml in CODEX_HOME, [mcp_servers.svc], this connector's command
	// line for this profile, and nothing secret.
	raw, err := os.ReadFile(filepath.Join(data, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `toml:"command"`
			Args    []string `toml:"args"`
		} `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("config.toml: %v\n%s", err, raw)
	}
	svc := cfg.MCPServers["svc"]
	if svc.Command != b.connector || !slices.Equal(svc.Args, []string{"mcp", "--profile", "codex-a", "--config-dir", c.conf, "--base-url", s.base, "--media-dir", media}) {
		t.Fatalf("registered %q %q", svc.Command, svc.Args)
	}
	if bytes.Contains(raw, []byte(invitation)) || bytes.Contains(raw, []byte("PRIVATE")) {
		t.Fatalf("config.toml holds a secret:\n%s", raw)
	}
	if fi, err := os.Stat(filepath.Join(data, "config.toml")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config.toml: %v %v", fi, err)
	}

	// The owner runs the step as shown; the same setup resumes, without an invitation.
	login := exec.Command("/bin/sh", "-c", step)
	login.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	if out, err := login.CombinedOutput(); err != nil {
		t.Fatalf("the login step: %v %s", err, out)
	}
	done := c.must(t, 0, "setup", "--profile", "codex-a", "--handle", "conn-codex", "--runtime", "codex", "--setup-scope", "forum")
	if done["state"] != "complete" || done["runtime"] != "codex" {
		t.Fatalf("the resumed setup: %v", done)
	}

	// doctor reads the registration back (present, parsed, this connector for this profile) and makes
	// a signed conformance call through it, as the runtime would start it; it says no daily budget is
	// set until the owner sets one.
	verdict := c.must(t, 0, "doctor", "--profile", "codex-a")
	if reg := checkOf(t, verdict, "mcp_registration"); reg["ok"] != true || !strings.Contains(fmt.Sprint(reg["reason"]), "registers this connector") {
		t.Fatalf("doctor's mcp_registration: %v", reg)
	}
	if b := checkOf(t, verdict, "budget"); b["ok"] != true || !strings.Contains(fmt.Sprint(b["reason"]), "no daily budget is set") {
		t.Fatalf("doctor's budget before one is set: %v", b)
	}
	c.must(t, 0, "budget", "--profile", "codex-a", "--per-write", "10", "--per-day", "50")
	if b := checkOf(t, c.must(t, 0, "doctor", "--profile", "codex-a"), "budget"); !strings.Contains(fmt.Sprint(b["reason"]), "up to 10 credits, and all writes at most 50 credits in any 24 hours") {
		t.Fatalf("doctor's budget after one is set: %v", b)
	}

	// Nothing was written outside the profile: the owner's HOME is as empty as it was.
	_ = filepath.WalkDir(home, func(path string, _ fs.DirEntry, err error) error {
		if err == nil && path != home {
			t.Errorf("written outside the profile: %s", path)
		}
		return nil
	})
}
