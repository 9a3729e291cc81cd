package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"

	"github.com/svcforum/svc/sdk"
)

// standIn is an agent runtime's executable for the tests (the real ones cannot be installed here). It
// finds its configuration only through the runtime's configuration-home variable, answers --version
// and the runtime's login status command (steered by standin-login in that home), and for anything
// else — a headless run — records its arguments, its environment and the registration file the driver
// wrote, then ends as standin-exit says (an exit code, or "sleep" to run until stopped).
const standIn = `#!/bin/sh
home="$__HOMEVAR__"
[ -n "$home" ] || { echo "no configuration home" >&2; exit 70; }
case "$1 $2" in
"--version "*) echo "__PROGRAM__ 1.2.3 (stand-in)"; exit 0 ;;
"auth status"|"login status")
	if [ "$(cat "$home/standin-login" 2>/dev/null)" = in ]; then echo '{"loggedIn": true, "authMethod": "claude.ai"}'; exit 0; fi
	echo '{"loggedIn": false, "authMethod": "none"}'; echo "Not logged in" >&2; exit 1 ;;
esac
printf '%s\n' "$@" > "$home/standin-argv"
env > "$home/standin-env"
cat "$home/__CONFIG__" > "$home/standin-config" || exit 71
what="$(cat "$home/standin-exit" 2>/dev/null || echo 0)"
if [ "$what" = sleep ]; then sleep 30; exit 0; fi
exit "$what"
`

// world is one driver's test: a stand-in on PATH, an empty HOME, and a profile.
type world struct {
	d    *agentCLI
	in   Instance
	home string
	bin  string
}

func newWorld(t *testing.T, drv Driver) *world {
	t.Helper()
	d := drv.(*agentCLI)
	root := t.TempDir()
	w := &world{d: d, home: filepath.Join(root, "home"), bin: filepath.Join(root, "bin")}
	for _, dir := range []string{w.home, w.bin} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Isolation: the owner's HOME and XDG directories are an empty directory; nothing may land there.
	t.Setenv("HOME", w.home)
	for _, k := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"} {
		t.Setenv(k, filepath.Join(w.home, ".xdg", strings.ToLower(k)))
	}
	t.Setenv(d.homeVar, filepath.Join(w.home, "owners-own-"+d.name)) // the owner's global setting: never used
	t.Setenv("OPENAI_API_KEY", "do-not-pass")
	t.Setenv("ANTHROPIC_API_KEY", "do-not-pass")
	script := strings.NewReplacer("__HOMEVAR__", d.homeVar, "__PROGRAM__", d.program, "__CONFIG__", d.configFile).Replace(standIn)
	if err := os.WriteFile(filepath.Join(w.bin, d.program), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", w.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	profileDir := filepath.Join(root, "profile")
	data := filepath.Join(profileDir, "runtime", d.name)
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := d.Configure(Settings{})
	if err != nil {
		t.Fatal(err)
	}
	w.in = Instance{Profile: profileDir, DataDir: data, LogDir: filepath.Join(profileDir, "logs"), BaseURL: "http://forum.test", Settings: s}
	return w
}

// nothingInHome fails when anything was written under the owner's (empty) HOME.
func (w *world) nothingInHome(t *testing.T) {
	t.Helper()
	_ = filepath.WalkDir(w.home, func(path string, e fs.DirEntry, err error) error {
		if err == nil && path != w.home {
			t.Errorf("written outside the profile: %s", path)
		}
		return nil
	})
}

func (w *world) steer(t *testing.T, file, what string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(w.in.DataDir, file), []byte(what), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (w *world) read(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.in.DataDir, file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var svcServer = MCPServer{Command: "/opt/svc/bin/svc-connector", Args: []string{"mcp", "--profile", "agent-a", "--base-url", "http://forum.test"}}

func allRuntimes() []Driver { return []Driver{ClaudeCode(), Codex(), Gemini(), Goose()} }

// parsed reads the registration file with the runtime format's parser, independently of the driver:
// the svc entry's command and arguments, and the whole document.
func parsed(t *testing.T, d *agentCLI, path string) (string, []string, map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{}
	var entry map[string]any
	switch d.name {
	case "claude-code", "gemini":
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		entry, _ = doc["mcpServers"].(map[string]any)[MCPServerName].(map[string]any)
		if d.name == "claude-code" && entry["type"] != "stdio" {
			t.Fatalf("claude-code: type %v", entry["type"])
		}
		if d.name == "gemini" && entry["trust"] != true {
			t.Fatalf("gemini: trust %v", entry["trust"])
		}
	case "codex":
		if err := toml.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		entry, _ = doc["mcp_servers"].(map[string]any)[MCPServerName].(map[string]any)
		entry["cmd"] = entry["command"]
	case "goose":
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		entry, _ = doc["extensions"].(map[string]any)[MCPServerName].(map[string]any)
		if entry["type"] != "stdio" || entry["enabled"] != true || entry["name"] != MCPServerName || entry["timeout"] == nil {
			t.Fatalf("goose: extension %v", entry)
		}
	}
	if entry == nil {
		t.Fatalf("%s: no svc entry in %s", d.name, raw)
	}
	cmd, _ := entry["command"].(string)
	if d.name == "goose" || d.name == "codex" {
		cmd, _ = entry["cmd"].(string)
	}
	var args []string
	for _, a := range entry["args"].([]any) {
		args = append(args, a.(string))
	}
	return cmd, args, doc
}

func TestRegistrationIsTheRuntimesDocumentedFormat(t *testing.T) {
	for _, drv := range allRuntimes() {
		t.Run(drv.Name(), func(t *testing.T) {
			w := newWorld(t, drv)
			if _, err := w.d.Registration(w.in); !errors.Is(err, ErrNotRegistered) {
				t.Fatalf("before: %v", err)
			}
			if err := w.d.Register(context.Background(), w.in, svcServer); err != nil {
				t.Fatal(err)
			}
			path := w.d.RegistrationFile(w.in)
			if !strings.HasPrefix(path, w.in.DataDir+string(filepath.Separator)) {
				t.Fatalf("registration outside the runtime's home: %s", path)
			}
			cmd, args, _ := parsed(t, w.d, path)
			if cmd != svcServer.Command || !slices.Equal(args, svcServer.Args) {
				t.Fatalf("registered %q %q", cmd, args)
			}
			got, err := w.d.Registration(w.in)
			if err != nil || !got.Equal(svcServer) {
				t.Fatalf("read back %+v %v", got, err)
			}
			for p := path; p != w.in.DataDir; p = filepath.Dir(p) {
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				if want := map[bool]os.FileMode{true: 0o700, false: 0o600}[fi.IsDir()]; fi.Mode().Perm() != want {
					t.Errorf("%s has mode %04o, want %04o", p, fi.Mode().Perm(), want)
				}
			}
			w.nothingInHome(t)
		})
	}
}

// adopted is a configuration the runtime wrote before setup adopted the profile: its own settings, a
// server of the owner's, and an older svc entry.
var adopted = map[string]string{
	"claude-code": `{"mcpServers": {"notes": {"type": "stdio", "command": "/usr/bin/notes", "args": []}, "svc": {"type": "stdio", "command": "/old/svc-connector", "args": ["mcp"]}}, "theme": "dark"}`,
	"gemini":      `{"security": {"auth": {"selectedType": "oauth-personal"}}, "mcpServers": {"notes": {"command": "/usr/bin/notes"}, "svc": {"command": "/old/svc-connector", "args": ["mcp"]}}, "ui": {"theme": "GitHub"}}`,
	"codex":       "model = \"gpt-5\"\n\n[mcp_servers.notes]\ncommand = \"/usr/bin/notes\"\n\n[mcp_servers.svc]\ncommand = \"/old/svc-connector\"\nargs = [\"mcp\"]\n",
	"goose":       "GOOSE_PROVIDER: anthropic\nGOOSE_MODEL: claude-sonnet-4\nextensions:\n  developer:\n    enabled: true\n    type: builtin\n    name: developer\n  svc:\n    enabled: false\n    type: stdio\n    cmd: /old/svc-connector\n    args: [mcp]\n",
}

func TestRegistrationOnAdoptReplacesOnlyTheSvcEntry(t *testing.T) {
	for _, drv := range allRuntimes() {
		t.Run(drv.Name(), func(t *testing.T) {
			w := newWorld(t, drv)
			path := w.d.RegistrationFile(w.in)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(adopted[w.d.name]), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := w.d.Register(context.Background(), w.in, svcServer); err != nil {
				t.Fatal(err)
			}
			cmd, args, doc := parsed(t, w.d, path)
			if cmd != svcServer.Command || !slices.Equal(args, svcServer.Args) {
				t.Fatalf("registered %q %q", cmd, args)
			}
			var kept bool
			switch w.d.name {
			case "claude-code":
				kept = doc["theme"] == "dark" && doc["mcpServers"].(map[string]any)["notes"] != nil
			case "gemini":
				kept = doc["ui"] != nil && doc["security"] != nil && doc["mcpServers"].(map[string]any)["notes"] != nil
			case "codex":
				kept = doc["model"] == "gpt-5" && doc["mcp_servers"].(map[string]any)["notes"] != nil
			case "goose":
				kept = doc["GOOSE_MODEL"] == "claude-sonnet-4" && doc["extensions"].(map[string]any)["developer"] != nil
			}
			if !kept {
				t.Fatalf("the runtime's other settings were not kept: %v", doc)
			}
			if got, err := w.d.Registration(w.in); err != nil || !got.Equal(svcServer) {
				t.Fatalf("read back %+v %v", got, err)
			}
		})
	}
}

func TestARegistrationThatDoesNotParseOrIsALinkIsRefused(t *testing.T) {
	for _, drv := range allRuntimes() {
		t.Run(drv.Name(), func(t *testing.T) {
			w := newWorld(t, drv)
			path := w.d.RegistrationFile(w.in)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte("{[: not a configuration"), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := w.d.Registration(w.in); err == nil || errors.Is(err, ErrNotRegistered) {
				t.Fatalf("garbage: %v", err)
			}
			if err := w.d.Register(context.Background(), w.in, svcServer); err == nil {
				t.Fatal("registered over a file that does not parse")
			}
			outside := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.WriteFile(outside, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, path); err != nil {
				t.Fatal(err)
			}
			if err := w.d.Register(context.Background(), w.in, svcServer); err == nil {
				t.Fatal("registered through a symbolic link")
			}
			if b, _ := os.ReadFile(outside); len(b) != 0 {
				t.Fatal("wrote through a symbolic link")
			}
		})
	}
}

// logIn does what the runtime's official login step leaves behind, for the stand-in: its status
// command says logged in, or (gemini, goose, whose driver reads a setting) the setting is written by
// the runtime's format.
func (w *world) logIn(t *testing.T) {
	t.Helper()
	switch w.d.name {
	case "claude-code", "codex":
		w.steer(t, "standin-login", "in")
	case "gemini":
		path := filepath.Join(w.in.DataDir, ".gemini", "settings.json")
		doc := map[string]any{}
		if raw, err := os.ReadFile(path); err == nil {
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
		}
		doc["security"] = map[string]any{"auth": map[string]any{"selectedType": "oauth-personal"}}
		raw, _ := json.Marshal(doc)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
	case "goose":
		path := filepath.Join(w.in.DataDir, "config", "config.yaml")
		doc := map[string]any{}
		if raw, err := os.ReadFile(path); err == nil {
			if err := yaml.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
		}
		doc["GOOSE_PROVIDER"] = "anthropic"
		raw, _ := yaml.Marshal(doc)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoginPausesUntilTheRuntimesOwnLoginAndResumes(t *testing.T) {
	for _, drv := range allRuntimes() {
		t.Run(drv.Name(), func(t *testing.T) {
			w := newWorld(t, drv)
			ctx := context.Background()
			if err := w.d.Check(ctx, w.in); err != nil {
				t.Fatal(err)
			}
			if err := w.d.Register(ctx, w.in, svcServer); err != nil {
				t.Fatal(err)
			}
			if err := w.d.Login(ctx, w.in); !errors.Is(err, ErrLoginRequired) {
				t.Fatalf("fresh profile: %v", err)
			}
			step := w.d.LoginStep(w.in)
			if !strings.HasPrefix(step, w.d.homeVar+"="+w.in.DataDir+" ") || !strings.Contains(step, w.d.program) {
				t.Fatalf("login step %q", step)
			}
			w.logIn(t)
			if err := w.d.Login(ctx, w.in); err != nil {
				t.Fatalf("after the login step: %v", err)
			}
			// The runtime's login left the registration as it was.
			if got, err := w.d.Registration(w.in); err != nil || !got.Equal(svcServer) {
				t.Fatalf("registration after login: %+v %v", got, err)
			}
			w.nothingInHome(t)
		})
	}
}

func TestTheProviderSourceIsTheRuntimesExecutableWithItsVersion(t *testing.T) {
	for _, drv := range allRuntimes() {
		t.Run(drv.Name(), func(t *testing.T) {
			w := newWorld(t, drv)
			if w.in.Settings.Command != filepath.Join(w.bin, w.d.program) {
				t.Fatalf("configured %q", w.in.Settings.Command)
			}
			src, err := w.d.Source(context.Background(), w.in)
			if err != nil || src.Path != w.in.Settings.Command || len(src.SHA256) != 64 || src.Version != w.d.program+" 1.2.3 (stand-in)" {
				t.Fatalf("source %+v %v", src, err)
			}
			if _, err := w.d.Configure(Settings{LoginStep: "paste your key here"}); err == nil {
				t.Fatal("a login step of the owner's for a runtime with its own")
			}
			if err := os.Chmod(w.in.Settings.Command, 0o777); err != nil {
				t.Fatal(err)
			}
			if _, err := w.d.Source(context.Background(), w.in); err == nil {
				t.Fatal("a world-writable executable is a source")
			}
			t.Setenv("PATH", t.TempDir())
			if _, err := w.d.Configure(Settings{}); err == nil || !strings.Contains(err.Error(), "--command") {
				t.Fatalf("not installed: %v", err)
			}
			w.nothingInHome(t)
		})
	}
}

// headlessArgs are the arguments each runtime's headless run is documented to take, the prompt last.
func headlessArgs(w *world, prompt string) []string {
	switch w.d.name {
	case "claude-code":
		return []string{"--strict-mcp-config", "--mcp-config", filepath.Join(w.in.DataDir, "mcp.json"), "--tools", "", "--allowedTools", "mcp__svc", "--print", prompt}
	case "codex":
		return []string{"exec", "--skip-git-repo-check", prompt}
	case "gemini":
		return []string{"--prompt", prompt, "--allowed-mcp-server-names", "svc"}
	default:
		return []string{"run", "--no-session", "--text", prompt}
	}
}

func TestArenaRunIsHeadlessWithOnlyTheSeatsIdentifiers(t *testing.T) {
	for _, drv := range allRuntimes() {
		t.Run(drv.Name(), func(t *testing.T) {
			w := newWorld(t, drv)
			ctx := context.Background()
			if got := w.d.Run(ctx, w.in, seat, 10*time.Second, func() { t.Error("ran without the svc MCP server registered") }); got != (Result{sdk.StartIntentFailed, sdk.StopRuntimeUnavailable}) {
				t.Fatalf("unregistered: %+v", got)
			}
			if err := w.d.Register(ctx, w.in, svcServer); err != nil {
				t.Fatal(err)
			}
			s := seat
			s.Seat = "--help" // a seat like a flag stays inside the prompt
			ran := false
			if got := w.d.Run(ctx, w.in, s, 10*time.Second, func() { ran = true }); got != (Result{sdk.StartIntentStopped, sdk.StopCompleted}) || !ran {
				t.Fatalf("run: %+v (running: %v)", got, ran)
			}
			argv := strings.Split(strings.TrimSuffix(w.read(t, "standin-argv"), "\n"), "\n")
			prompt := seatPrompt(s)
			if !slices.Equal(argv, headlessArgs(w, prompt)) {
				t.Fatalf("arguments %q", argv)
			}
			if slices.Contains(argv, "--help") || !strings.Contains(prompt, "Seat: --help.") || !strings.Contains(prompt, s.IntentID) || !strings.Contains(prompt, s.MatchID) {
				t.Fatalf("prompt %q", prompt)
			}
			// The prompt is the fixed template: nothing else can reach it.
			if strings.NewReplacer(s.IntentID, "", s.MatchID, "", s.Seat, "").Replace(prompt) != strings.NewReplacer(seat.IntentID, "", seat.MatchID, "", seat.Seat, "").Replace(seatPrompt(seat)) {
				t.Fatal("the prompt is not the fixed template")
			}
			env := strings.Split(w.read(t, "standin-env"), "\n")
			for _, want := range []string{w.d.homeVar + "=" + w.in.DataDir, "SVC_ARENA_SEAT=--help", "SVC_ARENA_INTENT_ID=" + s.IntentID, "HOME=" + w.home} {
				if !slices.Contains(env, want) {
					t.Fatalf("environment lacks %s", want)
				}
			}
			for _, kv := range env {
				if strings.HasSuffix(kv, "=do-not-pass") {
					t.Fatalf("the runtime inherited %s", kv)
				}
			}
			if w.d.name == "goose" && !slices.Contains(env, "GOOSE_DISABLE_KEYRING=1") {
				t.Fatal("goose runs with the system keyring")
			}
			// What the runtime read through its configuration home is the registration the driver wrote.
			if cfg := w.read(t, "standin-config"); !strings.Contains(cfg, svcServer.Command) {
				t.Fatalf("the runtime read %q", cfg)
			}

			for what, want := range map[string]Result{
				"1": {sdk.StartIntentFailed, sdk.StopCrashed},
				"3": {sdk.StartIntentFailed, sdk.StopCrashed}, // only the command contract's 3 means a login
			} {
				w.steer(t, "standin-exit", what)
				if got := w.d.Run(ctx, w.in, seat, 10*time.Second, func() {}); got != want {
					t.Fatalf("exit %s: %+v", what, got)
				}
			}
			w.steer(t, "standin-exit", "sleep")
			if got := w.d.Run(ctx, w.in, seat, 300*time.Millisecond, func() {}); got != (Result{sdk.StartIntentFailed, sdk.StopTimedOut}) {
				t.Fatalf("past its time: %+v", got)
			}
			cctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(300*time.Millisecond, cancel)
			if got := w.d.Run(cctx, w.in, seat, time.Minute, func() {}); got != (Result{sdk.StartIntentStopped, sdk.StopCancelledByOwner}) {
				t.Fatalf("stopped by the owner: %+v", got)
			}
			bad := seat
			bad.Seat = "north; rm -rf ~"
			if got := w.d.Run(ctx, w.in, bad, time.Minute, func() { t.Error("a malformed seat ran") }); got.State != sdk.StartIntentFailed {
				t.Fatalf("a malformed seat: %+v", got)
			}
			if _, err := os.Stat(filepath.Join(w.in.LogDir, "arena-"+seat.IntentID+".log")); err != nil {
				t.Fatalf("no log of the seat: %v", err)
			}
			w.nothingInHome(t)
		})
	}
}

// The line the owner types to start each runtime on a profile names its configuration home there and
// whatever loads the svc MCP server, quoted for a shell.
func TestStartLines(t *testing.T) {
	in := Instance{Profile: "/p/it's", DataDir: "/p/it's/runtime/X"}
	for name, want := range map[string]string{
		"claude-code": `CLAUDE_CONFIG_DIR='/p/it'\''s/runtime/X' claude --mcp-config '/p/it'\''s/runtime/X/mcp.json'`,
		"codex":       `CODEX_HOME='/p/it'\''s/runtime/X' codex`,
		"gemini":      `GEMINI_CLI_HOME='/p/it'\''s/runtime/X' gemini`,
		"goose":       `GOOSE_PATH_ROOT='/p/it'\''s/runtime/X' GOOSE_DISABLE_KEYRING=1 goose session`,
	} {
		d, err := Builtin().Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.(Registrar).StartLine(in); got != want {
			t.Errorf("%s: start line\n%s\nwant\n%s", name, got, want)
		}
	}
}

// --media-dir is an agent runtime's, kept as an absolute directory; the command runtime refuses it.
func TestMediaDirSetting(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	got, err := Codex().Configure(Settings{Command: exe, MediaDir: dir})
	if err != nil || got.MediaDir != dir {
		t.Fatalf("a directory: %+v %v", got, err)
	}
	if _, err := Codex().Configure(Settings{Command: exe, MediaDir: filepath.Join(dir, "absent")}); err == nil {
		t.Fatal("a media directory that does not exist is accepted")
	}
	if _, err := Codex().Configure(Settings{Command: exe, MediaDir: exe}); err == nil {
		t.Fatal("a file as the media directory is accepted")
	}
	if _, err := (Command{}).Configure(Settings{Command: exe, MediaDir: dir}); err == nil {
		t.Fatal("the command runtime accepts --media-dir")
	}
}

// An agent runtime is not pointed at the profile's directory (where the key is): it signs through the
// registered MCP server, which takes its profile by name.
func TestAgentRuntimeEnvironmentNamesNoProfileDir(t *testing.T) {
	in := Instance{Profile: "/p/agent", DataDir: "/p/agent/runtime/codex", BaseURL: "https://forum.example"}
	for _, name := range []string{"claude-code", "codex", "gemini", "goose"} {
		d, _ := Builtin().Lookup(name)
		env := d.(Registrar).Environ(in)
		for _, kv := range env {
			if strings.HasPrefix(kv, "SVC_PROFILE_DIR=") {
				t.Errorf("%s runs with %s", name, kv)
			}
		}
		if !slices.Contains(env, "SVC_BASE_URL=https://forum.example") {
			t.Errorf("%s: the environment lost its fixed variables: %v", name, env)
		}
	}
}
