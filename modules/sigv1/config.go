package sigv1

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
)

// Config is the module's settings (flags "sigv1-*", environment SVC_SIGV1_*).
type Config struct {
	// Per agent, authenticated requests per RateWindow (every signed route but the Uncounted ones).
	AttemptsPerWindow int
	// Per agent, writes per RateWindow.
	WritesPerWindow int
	// Per client address, requests that fail authentication (400 or 401) per RateWindow.
	FailedAuthPerWindow int
	// RateWindow is the length of the fixed windows the limits count in.
	RateWindow time.Duration
	// IdempotencyLease is how long a running write holds its Idempotency-Key before a retry may take it
	// over (the claim of a crashed process is freed after it).
	IdempotencyLease time.Duration
	// PruneInterval is how often expired nonces, stored responses and rate windows are deleted.
	PruneInterval time.Duration
}

// DefaultConfig is the configuration with every default applied.
func DefaultConfig() Config {
	return Config{
		AttemptsPerWindow:   600,
		WritesPerWindow:     60,
		FailedAuthPerWindow: 30,
		RateWindow:          time.Minute,
		IdempotencyLease:    time.Minute,
		PruneInterval:       time.Minute,
	}
}

// Flags are the module's settings on the svc command line.
func Flags() []cli.Flag {
	d := DefaultConfig()
	env := cli.EnvVars
	const cat = ID
	return []cli.Flag{
		&cli.IntFlag{Name: "sigv1-attempts-per-window", Value: d.AttemptsPerWindow, Sources: env("SVC_SIGV1_ATTEMPTS_PER_WINDOW"), Category: cat, Usage: "per agent: authenticated requests per rate window (429 beyond)"},
		&cli.IntFlag{Name: "sigv1-writes-per-window", Value: d.WritesPerWindow, Sources: env("SVC_SIGV1_WRITES_PER_WINDOW"), Category: cat, Usage: "per agent: writes per rate window (429 beyond)"},
		&cli.IntFlag{Name: "sigv1-failed-auth-per-window", Value: d.FailedAuthPerWindow, Sources: env("SVC_SIGV1_FAILED_AUTH_PER_WINDOW"), Category: cat, Usage: "per client address: requests failing authentication per rate window (429 beyond)"},
		&cli.DurationFlag{Name: "sigv1-rate-window", Value: d.RateWindow, Sources: env("SVC_SIGV1_RATE_WINDOW"), Category: cat, Usage: "length of the fixed window the rate limits count in"},
		&cli.DurationFlag{Name: "sigv1-idempotency-lease", Value: d.IdempotencyLease, Sources: env("SVC_SIGV1_IDEMPOTENCY_LEASE"), Category: cat, Usage: "how long a running write holds its Idempotency-Key; a crashed request's key is free after it"},
		&cli.DurationFlag{Name: "sigv1-prune-interval", Value: d.PruneInterval, Sources: env("SVC_SIGV1_PRUNE_INTERVAL"), Category: cat, Usage: "how often expired nonces, stored responses and rate windows are deleted"},
	}
}

// NewConfig reads the module's settings and checks them.
func NewConfig(s plugin.Settings) (Config, error) {
	c := Config{
		AttemptsPerWindow:   s.Int("sigv1-attempts-per-window"),
		WritesPerWindow:     s.Int("sigv1-writes-per-window"),
		FailedAuthPerWindow: s.Int("sigv1-failed-auth-per-window"),
		RateWindow:          s.Duration("sigv1-rate-window"),
		IdempotencyLease:    s.Duration("sigv1-idempotency-lease"),
		PruneInterval:       s.Duration("sigv1-prune-interval"),
	}
	return c, c.Validate()
}

// Validate reports the first setting that cannot work, in one line.
func (c Config) Validate() error {
	for name, n := range map[string]int{"attempts-per-window": c.AttemptsPerWindow, "writes-per-window": c.WritesPerWindow, "failed-auth-per-window": c.FailedAuthPerWindow} {
		if n < 1 {
			return fmt.Errorf("--sigv1-%s must be at least 1, got %d", name, n)
		}
	}
	if c.RateWindow < time.Second {
		return fmt.Errorf("--sigv1-rate-window must be at least 1s, got %s", c.RateWindow)
	}
	if c.IdempotencyLease < time.Second {
		return fmt.Errorf("--sigv1-idempotency-lease must be at least 1s, got %s", c.IdempotencyLease)
	}
	if c.PruneInterval < time.Second {
		return fmt.Errorf("--sigv1-prune-interval must be at least 1s, got %s", c.PruneInterval)
	}
	return nil
}
