package host

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts/cursor"
)

// buildDir is the repository's build scripts, beside this module.
const buildDir = "../build"

// debianMirror runs build/postgres/mirror.sh's debian_mirror for bookworm over the APT configuration
// files given (path under etc -> content), with env added to the environment.
func debianMirror(t *testing.T, files map[string]string, env ...string) (mirror, errText string, ok bool) {
	t.Helper()
	etc := t.TempDir()
	for name, content := range files {
		p := filepath.Join(etc, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script, err := filepath.Abs(filepath.Join(buildDir, "postgres", "mirror.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", `set -euo pipefail; source "$1"; debian_mirror bookworm "$2"`, "test", script, etc)
	cmd.Env = append(withoutVar(os.Environ(), "SVC_DEBIAN_MIRROR="), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatal(err)
	}
	return strings.TrimSpace(stdout.String()), stderr.String(), err == nil
}

// withoutVar drops the variables starting with prefix from env.
func withoutVar(env []string, prefix string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, prefix) {
			out = append(out, kv)
		}
	}
	return out
}

// The PostgreSQL image is bootstrapped from the machine's own Debian mirror, read from its APT sources
// in APT's order (sources.list, then sources.list.d's *.list and *.sources by name, other files
// ignored), in either style: the source of bookworm itself for binary packages, enabled, over a
// transport debootstrap has. With none configured the build stops and says where it looked; it never
// falls back to a mirror of its own.
func TestPostgresImageUsesTheMachinesMirror(t *testing.T) {
	const (
		debianSources = `Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://mirror.example.test/debian/
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example.test/debian-security
Suites: bookworm-security
Components: main
`
		nodesource = "Types: deb\nURIs: https://deb.nodesource.example.test/node_20.x\nSuites: nodistro\nComponents: main\n"
	)
	for name, tc := range map[string]struct {
		files map[string]string
		want  string
	}{
		"deb822": {map[string]string{"sources.list.d/debian.sources": debianSources}, "http://mirror.example.test/debian"},
		"one-line": {map[string]string{"sources.list": `# deb http://commented.example.test/debian bookworm main
deb-src http://source.example.test/debian bookworm main
deb http://security.example.test/debian-security bookworm-security main
deb [ arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg ] https://one.example.test/debian bookworm main contrib
`}, "https://one.example.test/debian"},
		"sources.list first": {map[string]string{
			"sources.list":                  "deb http://first.example.test/debian bookworm main\n",
			"sources.list.d/debian.sources": debianSources,
		}, "http://first.example.test/debian"},
		"the directory by name, only *.list and *.sources": {map[string]string{
			"sources.list.d/a-nodesource.sources":      nodesource,
			"sources.list.d/b-off.sources":             "Types: deb\nURIs: http://off.example.test/debian\nSuites: bookworm\nEnabled: no\n",
			"sources.list.d/c-cdrom.list":              "deb cdrom:[Debian 12]/ bookworm main\ndeb mirror+file:/etc/apt/mirrors.txt bookworm main\n",
			"sources.list.d/d-debian.list.disabled":    "deb http://disabled.example.test/debian bookworm main\n",
			"sources.list.d/e-local.sources":           "types: deb deb-src\nuris: mirror+http://list.example.test\n file:///srv/debian/\nsuites: bookworm\n",
			"sources.list.d/f-debian.sources":          debianSources,
			"sources.list.d/00-google-cloud-sdk.list":  "deb https://packages.example.test/apt cloud-sdk-bookworm main\n",
			"sources.list.d/d-debian.list.dpkg-backup": "deb http://backup.example.test/debian bookworm main\n",
		}, "file:///srv/debian"},
	} {
		t.Run(name, func(t *testing.T) {
			got, stderr, ok := debianMirror(t, tc.files)
			if !ok || got != tc.want {
				t.Fatalf("mirror %q (ok %v, %s), want %q", got, ok, stderr, tc.want)
			}
		})
	}

	for name, files := range map[string]map[string]string{
		"nothing configured": nil,
		"no bookworm":        {"sources.list.d/nodesource.sources": nodesource, "sources.list": "deb http://trixie.example.test/debian trixie main\n"},
		"disabled only":      {"sources.list.d/debian.list.disabled-by-farm": "deb http://disabled.example.test/debian bookworm main\n"},
	} {
		t.Run(name, func(t *testing.T) {
			got, stderr, ok := debianMirror(t, files)
			if ok || got != "" || !strings.Contains(stderr, "no package source for Debian bookworm") || !strings.Contains(stderr, "SVC_DEBIAN_MIRROR") {
				t.Fatalf("mirror %q (ok %v), stderr %q: want a failure that says why", got, ok, stderr)
			}
		})
	}

	if got, _, ok := debianMirror(t, nil, "SVC_DEBIAN_MIRROR=http://chosen.example.test/debian/"); !ok || got != "http://chosen.example.test/debian" {
		t.Fatalf("SVC_DEBIAN_MIRROR: %q (ok %v)", got, ok)
	}
}

// No build script names a package archive of its own: packages come from the machine's configured
// sources (APT's, the Go module proxy of `go env`).
func TestBuildScriptsNameNoPackageMirror(t *testing.T) {
	archive := regexp.MustCompile(`(?i)[a-z0-9.-]*(debian\.org|ubuntu\.com|debian\.net|alpinelinux\.org|proxy\.golang\.org)`)
	var scripts []string
	err := filepath.WalkDir(buildDir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".sh") || d.Name() == "Dockerfile") {
			scripts = append(scripts, path)
		}
		return nil
	})
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no build scripts under %s (%v)", buildDir, err)
	}
	for _, path := range scripts {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := archive.FindString(line); m != "" {
				t.Errorf("%s:%d names the package archive %s", path, i+1, m)
			}
		}
	}
}

// make compose-env writes the file docker compose reads, 0600, from .env.example with a fresh key in
// each secret (base64 of 32 bytes, a cursor key svc accepts), and never overwrites one.
func TestComposeEnvWritesFreshKeysOnce(t *testing.T) {
	file := filepath.Join(t.TempDir(), ".env")
	run := func() (string, error) {
		cmd := exec.Command("make", "-s", "-C", "..", "compose-env", "COMPOSE_ENV="+file)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(); err != nil {
		t.Fatalf("make compose-env: %v\n%s", err, out)
	}
	info, err := os.Stat(file)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the .env written: %v, %v", info, err)
	}
	first, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, line := range strings.Split(string(first), "\n") {
		if name, value, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(name, "#") {
			keys[name] = value
		}
	}
	for _, name := range []string{"SVC_CURSOR_KEY", "SVC_ONBOARDING_DRAFT_KEY", "SVC_ARENA_GRANT_KEY"} {
		if _, err := cursor.ParseKeys(keys[name]); err != nil {
			t.Errorf("%s=%q: %v", name, keys[name], err)
		}
	}
	if keys["SVC_CURSOR_KEY"] == keys["SVC_ONBOARDING_DRAFT_KEY"] {
		t.Error("two secrets share a key")
	}
	if out, err := run(); err == nil || !strings.Contains(out, "not overwriting") {
		t.Fatalf("make compose-env over an existing .env: %v\n%s", err, out)
	}
	if again, _ := os.ReadFile(file); !bytes.Equal(again, first) {
		t.Fatal("make compose-env changed an existing .env")
	}
}
