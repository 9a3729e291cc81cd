package profile

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Config is the owner's settings of a profile (connector.json): which runtime runs the agent, with
// which settings, the setup scope, and whether the arena runner may take start intents. Nothing in it
// ever comes from the service, a post or a poll.
type Config struct {
	Version    int           `json:"version"`
	SetupScope string        `json:"setup_scope"`
	Runtime    RuntimeConfig `json:"runtime"`
	Arena      ArenaConfig   `json:"arena"`
	// Budget is the owner's spending limits for svc-connector mcp (svc-connector budget); nil until
	// the owner sets one.
	Budget *BudgetConfig `json:"budget,omitempty"`
}

// BudgetConfig is the owner's budget for the writes an agent makes through svc-connector mcp: the most
// one write may cost, and the most all writes may cost in any 24 hours. Nil means the default: the
// current price of the dearest operation per write, and no daily limit.
type BudgetConfig struct {
	PerWrite *int64 `json:"per_write,omitempty"`
	PerDay   *int64 `json:"per_day,omitempty"`
}

// RuntimeConfig names the runtime driver and the owner's settings for it.
type RuntimeConfig struct {
	Name string `json:"name"`
	// Command is the command driver's program (an absolute path), named by the owner at setup.
	Command string `json:"command,omitempty"`
	// LoginStep is the runtime's official login step, copied by the owner from its documentation; it
	// is shown when the login is missing.
	LoginStep string `json:"login_step,omitempty"`
	// MediaDir is the directory the registered svc MCP server may upload images from (setup
	// --media-dir); "" for none.
	MediaDir string `json:"media_dir,omitempty"`
}

// ArenaConfig is the owner's arena decision. Enabled is not readiness: status checks that the runner
// actually polls.
type ArenaConfig struct {
	Enabled   bool       `json:"enabled"`
	RunnerID  string     `json:"runner_id,omitempty"` // picked once, kept: every poll, claim and status carries it
	EnabledAt *time.Time `json:"enabled_at,omitempty"`
	// Source is the provider source the owner confirmed at `arena enable`, recorded after the
	// confirmation; the runner starts nothing else. Set while Enabled, nil otherwise.
	Source *ProviderSource `json:"provider_source,omitempty"`
}

// ProviderSource is what a runtime runs for the agent, fingerprinted: for the command runtime, the
// owner's program (its absolute path and the SHA-256 of its contents).
type ProviderSource struct {
	Runtime string `json:"runtime"`
	Path    string `json:"path"`
	SHA256  string `json:"sha256"`
	// Version is what the runtime's executable reported (`--version`) when the owner confirmed it;
	// shown, not compared: the SHA-256 is what must not change.
	Version string `json:"version,omitempty"`
}

// ErrNoConfig is a profile without connector.json.
var ErrNoConfig = errors.New("the profile has no settings (connector.json): run svc-connector setup")

// ReadConfig reads the profile's settings; ErrNoConfig without any.
func (p *Profile) ReadConfig() (*Config, error) {
	var c Config
	if err := readJSON(p.Path(ConfigFile), &c); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, ErrNoConfig
		}
		return nil, fmt.Errorf("read the profile's settings: %w", err)
	}
	if c.Version != 1 {
		return nil, fmt.Errorf("read the profile's settings: %s is not settings this connector wrote", ConfigFile)
	}
	return &c, nil
}

// UpdateConfig changes the profile's settings: under the settings lock (LockSettings) it reads
// connector.json, calls change with it (found false and a fresh Config when there is none yet), and
// writes it back (0600, atomically) unless change fails. Every writer of connector.json goes through
// it, so that no change is lost to another one made at the same time (an `arena disable` while a
// setup runs).
func (p *Profile) UpdateConfig(change func(c *Config, found bool) error) (*Config, error) {
	l, err := p.LockSettings()
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	c, err := p.ReadConfig()
	found := err == nil
	if errors.Is(err, ErrNoConfig) {
		c, err = &Config{}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := change(c, found); err != nil {
		return nil, err
	}
	c.Version = 1
	if err := writeJSON(p.Path(ConfigFile), c); err != nil {
		return nil, err
	}
	return c, nil
}
