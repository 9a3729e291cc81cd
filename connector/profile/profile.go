// Package profile keeps svc-connector's local profiles: one directory per profile under the connector's
// configuration directory, holding one agent identity (identity.json and key.pem, the files the SDK's
// LoadIdentity reads), the setup checkpoint, the owner's settings, the runner's heartbeat, and the
// runtime-owned data under runtime/<runtime>/.
//
// Inspecting a profile (Inspect) reads and never writes: no directory, file or lock is created, so the
// connector's plan can run before the owner agrees to any local change.
package profile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// The files of a profile directory.
const (
	IdentityFile     = "identity.json"  // the redeemed identity (sdk.WriteIdentity), 0600
	KeyFile          = "key.pem"        // the agent's Ed25519 private key, PKCS#8 PEM, 0600
	CheckpointFile   = "setup.json"     // the setup checkpoint, 0600
	ConfigFile       = "connector.json" // the owner's settings: runtime, setup scope, arena, 0600
	HeartbeatFile    = "runner.json"    // the arena runner's heartbeat, 0600
	LockFile         = "lock"           // locked (flock, LockFileEx) by a running setup or runner, 0600
	SettingsLockFile = "settings.lock"  // locked for a moment by each change of connector.json, 0600
	MCPStateFile     = "mcp-state.json" // svc-connector mcp's spending and idempotency window, 0600
	RuntimeDir       = "runtime"        // runtime-owned data, runtime/<runtime>/, 0700
	LogDir           = "logs"           // the runtime's output of each arena start and mcp.log, 0700
)

// nameRule is a profile name: it is one path segment, chosen by the owner.
var nameRule = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// ErrInvalidName is a profile name that is not 1..64 of A-Z a-z 0-9 _ - starting with a letter or digit.
var ErrInvalidName = errors.New("a profile name is 1 to 64 of A-Z a-z 0-9 _ -, starting with a letter or digit")

// ValidName reports whether name can name a profile.
func ValidName(name string) bool { return nameRule.MatchString(name) }

// Store is the connector's configuration directory: profiles live in its profiles/ folder.
type Store struct {
	Root string
}

// DefaultRoot is the connector's configuration directory: $SVC_CONNECTOR_HOME when set, else
// svc-connector under the user's configuration directory (os.UserConfigDir).
func DefaultRoot() (string, error) {
	if d := os.Getenv("SVC_CONNECTOR_HOME"); d != "" {
		return d, nil
	}
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the configuration directory: %w", err)
	}
	return filepath.Join(base, "svc-connector"), nil
}

// Dir is the directory of the profile name (which must be valid).
func (s Store) Dir(name string) (string, error) {
	if !ValidName(name) {
		return "", ErrInvalidName
	}
	return filepath.Join(s.Root, "profiles", name), nil
}

// Profile is one profile directory.
type Profile struct {
	Name string
	Dir  string
}

// Open names an existing or future profile; it touches nothing on disk.
func (s Store) Open(name string) (*Profile, error) {
	dir, err := s.Dir(name)
	if err != nil {
		return nil, err
	}
	return &Profile{Name: name, Dir: dir}, nil
}

// Path is a file of the profile.
func (p *Profile) Path(file string) string { return filepath.Join(p.Dir, file) }

// RuntimeData is the runtime-owned data directory of rt in the profile.
func (p *Profile) RuntimeData(rt string) string { return filepath.Join(p.Dir, RuntimeDir, rt) }

// Exists reports whether the profile directory exists.
func (p *Profile) Exists() bool {
	_, err := os.Lstat(p.Dir)
	return err == nil
}

// Make creates the profile directory (0700) and its parents (0700), and runtime/<rt>/ in it: fresh
// runtime data when the profile is new, and the existing data untouched when it is adopted.
func (p *Profile) Make(rt string) error {
	for _, d := range []string{filepath.Dir(filepath.Dir(p.Dir)), filepath.Dir(p.Dir), p.Dir, filepath.Join(p.Dir, RuntimeDir), p.RuntimeData(rt)} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			if errors.Is(err, os.ErrNotExist) {
				if err := os.MkdirAll(d, 0o700); err != nil {
					return fmt.Errorf("make %s: %w", d, err)
				}
				continue
			}
			return fmt.Errorf("make %s: %w", d, err)
		}
	}
	return nil
}
