// Command svc-release cuts a signed release of svc-connector: it cross-builds ./cmd/svc-connector
// (CGO_ENABLED=0, -trimpath) for each platform with the release's version and release key built in, and
// writes the release directory: the binaries, install.sh, the signed checksum manifest and the release
// key (see package release for the format). `make release` runs it.
//
//	svc-release --generate-key FILE [--key-name NAME]
//	svc-release --out DIR --version VERSION --key FILE [--platforms linux/amd64,...] [--runtimes command,...] [--trust-key FILE]
//
// Run it in the connector module's directory (or give --module). VERSION is a semantic version such as
// v0.3.1 (connectors order releases by it). The manifest names the runtime drivers the connector ships
// (runtime.Builtin of github.com/svcforum/svc/connector/runtime, as built into this svc-release): all of
// them by default; --runtimes names a subset, and a name the connector has no driver for is refused.
// --trust-key builds another verifier key into the binaries than the signer's own, for a planned key
// rotation (modules/releases/README.md).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/svcforum/svc/connector/release"
	"github.com/svcforum/svc/connector/runtime"
)

// allPlatforms are the platforms a release is built for by default.
var allPlatforms = []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64", "windows/amd64", "windows/arm64"}

const connectorPkg = "github.com/svcforum/svc/connector"

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "svc-release: "+err.Error())
		os.Exit(1)
	}
}

type options struct {
	out, version, keyFile, trustKeyFile, module, pkg, generate, keyName, goCmd string
	platforms, runtimes                                                        []string
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("svc-release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var platforms, runtimes string
	fs.StringVar(&o.out, "out", "", "the release directory to write (replaced as a whole)")
	fs.StringVar(&o.version, "version", "", "the release's version, e.g. v0.3.1")
	fs.StringVar(&o.keyFile, "key", "", "file holding the signer key (PRIVATE+KEY+...)")
	fs.StringVar(&o.trustKeyFile, "trust-key", "", "file holding the verifier key to build into the binaries (default: the signer's own)")
	fs.StringVar(&platforms, "platforms", strings.Join(allPlatforms, ","), "comma-separated GOOS/GOARCH pairs")
	fs.StringVar(&runtimes, "runtimes", strings.Join(runtime.Builtin().Names(), ","), "comma-separated runtime drivers the connector ships, named in the manifest (each must be one of runtime.Builtin)")
	fs.StringVar(&o.module, "module", ".", "the connector module's directory")
	fs.StringVar(&o.pkg, "package", "./cmd/svc-connector", "the connector's main package, relative to --module")
	fs.StringVar(&o.generate, "generate-key", "", "write a new signer key to FILE (0600, never overwritten), print its verifier key, and exit")
	fs.StringVar(&o.keyName, "key-name", "svc-connector-release", "the name of a key made with --generate-key")
	fs.StringVar(&o.goCmd, "go", "go", "the go command")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.generate != "" {
		return generate(o.generate, o.keyName, stdout)
	}
	o.platforms = splitList(platforms)
	o.runtimes = splitList(runtimes)
	if o.out == "" || o.version == "" || o.keyFile == "" {
		return errors.New("--out, --version and --key are required (or --generate-key FILE)")
	}
	if err := release.CheckVersion(o.version); err != nil {
		return fmt.Errorf("--version: %w", err)
	}
	if err := checkRuntimes(o.runtimes); err != nil {
		return err
	}
	for _, p := range o.platforms {
		if goos, arch, ok := strings.Cut(p, "/"); !ok || goos == "" || arch == "" || strings.Contains(arch, "/") {
			return fmt.Errorf("--platforms: %q is not GOOS/GOARCH", p)
		}
	}
	if len(o.platforms) == 0 {
		return errors.New("--platforms names no platform")
	}
	return cut(o, stdout)
}

// checkRuntimes refuses a runtime the connector has no driver for: the manifest names only drivers it
// ships.
func checkRuntimes(names []string) error {
	if len(names) == 0 {
		return fmt.Errorf("--runtimes names no runtime (the connector ships %s)", strings.Join(runtime.Builtin().Names(), ", "))
	}
	builtin := runtime.Builtin()
	for _, name := range names {
		if _, err := builtin.Lookup(name); err != nil {
			return fmt.Errorf("--runtimes: %w", err)
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// generate writes a new signer key to path, refusing to replace a file, and prints the verifier key.
func generate(path, name string, stdout io.Writer) error {
	skey, vkey, err := release.GenerateKey(name)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("--generate-key: %w", err)
	}
	if _, err := f.WriteString(skey + "\n"); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("--generate-key: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return fmt.Errorf("--generate-key: %w", err)
	}
	fmt.Fprintln(stdout, vkey)
	return nil
}

func readKey(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(raw)), nil
}

// cut builds and signs the release into a new directory beside o.out, then puts it in o.out's place.
func cut(o options, stdout io.Writer) error {
	skey, err := readKey(o.keyFile)
	if err != nil {
		return fmt.Errorf("--key: %w", err)
	}
	vkey, err := release.VerifierKey(skey)
	if err != nil {
		return fmt.Errorf("--key %s: %w", o.keyFile, err)
	}
	trusted := vkey
	if o.trustKeyFile != "" {
		if trusted, err = readKey(o.trustKeyFile); err != nil {
			return fmt.Errorf("--trust-key: %w", err)
		}
		if err := release.CheckVerifierKey(trusted); err != nil {
			return fmt.Errorf("--trust-key %s: %w", o.trustKeyFile, err)
		}
	}
	// Check the version and runtimes before minutes of building.
	if _, err := release.Sign(release.Manifest{Version: o.version, Runtimes: o.runtimes, Files: map[string]string{"x": strings.Repeat("0", 64)}}, skey); err != nil {
		return err
	}

	out, err := filepath.Abs(o.out)
	if err != nil {
		return err
	}
	if err := checkReplaceable(out); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	stage, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".new-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	if err := os.Chmod(stage, 0o755); err != nil {
		return err
	}

	files := map[string]string{}
	ldflags := fmt.Sprintf("-s -w -X %s.Version=%s -X %s.ReleaseKey=%s", connectorPkg, o.version, connectorPkg, trusted)
	for _, p := range o.platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		name := release.BinaryName(goos, goarch)
		dest := filepath.Join(stage, name)
		cmd := exec.Command(o.goCmd, "build", "-trimpath", "-ldflags", ldflags, "-o", dest, o.pkg)
		cmd.Dir = o.module
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
		var errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &errOut, &errOut
		fmt.Fprintf(stdout, "building %s\n", name)
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s (%s in %s): %v\n%s", p, o.pkg, o.module, err, strings.TrimSpace(errOut.String()))
		}
	}
	if err := os.WriteFile(filepath.Join(stage, release.InstallerName), release.InstallScript, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(stage)
	if err != nil {
		return err
	}
	for _, e := range entries {
		sum, err := release.FileSHA256(filepath.Join(stage, e.Name()))
		if err != nil {
			return err
		}
		files[e.Name()] = sum
	}
	m := release.Manifest{Version: o.version, Runtimes: o.runtimes, Files: files}
	signed, err := release.Sign(m, skey)
	if err != nil {
		return err
	}
	// What install.sh and the connector will check, checked here first.
	if _, err := release.Verify(signed, vkey); err != nil {
		return fmt.Errorf("the new manifest does not verify: %w", err)
	}
	if err := os.WriteFile(filepath.Join(stage, release.ManifestName), signed, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(stage, release.KeyName), []byte(vkey+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.Rename(stage, out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "release %s in %s, signed by %s\n", o.version, out, vkey)
	if trusted != vkey {
		fmt.Fprintf(stdout, "its binaries trust %s\n", trusted)
	}
	return nil
}

// checkReplaceable refuses an output directory that holds anything but a release's files, so that a
// mistyped --out never deletes something else.
func checkReplaceable(out string) error {
	entries, err := os.ReadDir(out)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	for _, e := range entries {
		n := e.Name()
		if e.Type().IsRegular() && (n == release.ManifestName || n == release.KeyName || n == release.InstallerName || strings.HasPrefix(n, "svc-connector_")) {
			continue
		}
		return fmt.Errorf("--out %s holds %s, which is not a release's file: give an empty or new directory", out, n)
	}
	return nil
}
