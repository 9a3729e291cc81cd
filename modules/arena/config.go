package arena

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
)

// Config is the module's settings (flags "arena-*", environment SVC_ARENA_*).
type Config struct {
	// GrantKeys are the grant keys: comma-separated base64 Ed25519 seeds; the first signs tickets, every
	// one is published in the JWKS. Empty: grants answer 503 grant_key_unavailable.
	GrantKeys string
	// TicketTTL is how long a ticket lives (at most MaxTicketTTL).
	TicketTTL time.Duration
	// GrantRequests is how many grant requests one seat may make in one match.
	GrantRequests int
	// RunnerTimeout is how long after its last poll a runner is still there; older, it is gone.
	RunnerTimeout time.Duration
	// PollAfter is how long a runner waits before it polls again.
	PollAfter time.Duration
	// IntentTTL is how long a start intent waits for its claim.
	IntentTTL time.Duration
}

// DefaultConfig is the configuration with every default applied.
func DefaultConfig() Config {
	return Config{TicketTTL: 10 * time.Minute, GrantRequests: 20, RunnerTimeout: 2 * time.Minute, PollAfter: 5 * time.Second, IntentTTL: time.Hour}
}

// Flags are the module's settings on the svc command line.
func Flags() []cli.Flag {
	d := DefaultConfig()
	env := cli.EnvVars
	return []cli.Flag{
		&cli.StringFlag{Name: "arena-grant-key", Sources: env("SVC_ARENA_GRANT_KEY"), Category: ID, Usage: "grant keys: base64 Ed25519 seeds (svc admin arena grant-key generate), comma-separated; the first signs tickets, all are published in the JWKS. To rotate: add the new key last (published, not signing) on every replica, wait 5 minutes (the JWKS's cache), move it first, and drop the old key after --arena-ticket-ttl. Without one, grants answer 503"},
		&cli.DurationFlag{Name: "arena-ticket-ttl", Value: d.TicketTTL, Sources: env("SVC_ARENA_TICKET_TTL"), Category: ID, Usage: "how long a grant ticket lives (1m to 15m)"},
		&cli.IntFlag{Name: "arena-grant-requests", Value: d.GrantRequests, Sources: env("SVC_ARENA_GRANT_REQUESTS"), Category: ID, Usage: "grant requests one seat may make in one match (429 grant_requests_exhausted past it)"},
		&cli.DurationFlag{Name: "arena-runner-timeout", Value: d.RunnerTimeout, Sources: env("SVC_ARENA_RUNNER_TIMEOUT"), Category: ID, Usage: "how long after its last poll a runner is still there; a runner that has not polled for longer is gone and may claim nothing"},
		&cli.DurationFlag{Name: "arena-poll-after", Value: d.PollAfter, Sources: env("SVC_ARENA_POLL_AFTER"), Category: ID, Usage: "how long a runner waits between polls (poll_after_seconds)"},
		&cli.DurationFlag{Name: "arena-intent-ttl", Value: d.IntentTTL, Sources: env("SVC_ARENA_INTENT_TTL"), Category: ID, Usage: "how long a start intent waits for a runner's claim"},
	}
}

// NewConfig reads the module's settings and checks them.
func NewConfig(s plugin.Settings) (Config, error) {
	c := Config{GrantKeys: s.String("arena-grant-key"), TicketTTL: s.Duration("arena-ticket-ttl"), GrantRequests: s.Int("arena-grant-requests"),
		RunnerTimeout: s.Duration("arena-runner-timeout"), PollAfter: s.Duration("arena-poll-after"), IntentTTL: s.Duration("arena-intent-ttl")}
	switch {
	case c.TicketTTL < time.Minute || c.TicketTTL > MaxTicketTTL || c.TicketTTL%time.Second != 0:
		return c, fmt.Errorf("--arena-ticket-ttl must be whole seconds between 1m and %s, got %s", MaxTicketTTL, c.TicketTTL)
	case c.GrantRequests < 1:
		return c, fmt.Errorf("--arena-grant-requests must be at least 1, got %d", c.GrantRequests)
	case c.PollAfter < time.Second || c.RunnerTimeout < 2*c.PollAfter:
		return c, fmt.Errorf("--arena-poll-after must be at least 1s and --arena-runner-timeout at least twice it, got %s and %s", c.PollAfter, c.RunnerTimeout)
	case c.IntentTTL < time.Minute:
		return c, fmt.Errorf("--arena-intent-ttl must be at least 1m, got %s", c.IntentTTL)
	}
	return c, nil
}
