package arena_test

import (
	"context"
	"testing"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/modules/arena"
)

// settings is a plugin.Settings double: the flags' values by name.
type settings map[string]any

func (s settings) Int(name string) int                { v, _ := s[name].(int); return v }
func (s settings) Duration(name string) time.Duration { v, _ := s[name].(time.Duration); return v }
func (s settings) Bool(name string) bool              { v, _ := s[name].(bool); return v }
func (s settings) String(name string) string          { v, _ := s[name].(string); return v }

// settingsOf is c as the flags would give it.
func settingsOf(c arena.Config) settings {
	return settings{"arena-grant-key": c.GrantKeys, "arena-ticket-ttl": c.TicketTTL, "arena-grant-requests": c.GrantRequests,
		"arena-runner-timeout": c.RunnerTimeout, "arena-poll-after": c.PollAfter, "arena-intent-ttl": c.IntentTTL}
}

// NewConfig reads the settings and refuses those the arena cannot work with.
func TestConfig(t *testing.T) {
	t.Parallel()
	d := arena.DefaultConfig()
	if got, err := arena.NewConfig(settingsOf(d)); err != nil || got != d {
		t.Fatalf("the defaults: %+v, %v", got, err)
	}
	edge := d
	edge.GrantKeys, edge.TicketTTL, edge.GrantRequests, edge.PollAfter, edge.RunnerTimeout, edge.IntentTTL = "k", time.Minute, 1, time.Second, 2*time.Second, time.Minute
	if got, err := arena.NewConfig(settingsOf(edge)); err != nil || got != edge {
		t.Fatalf("the smallest settings: %+v, %v", got, err)
	}
	edge.TicketTTL = arena.MaxTicketTTL
	if _, err := arena.NewConfig(settingsOf(edge)); err != nil {
		t.Fatalf("a ticket TTL of %s: %v", arena.MaxTicketTTL, err)
	}
	for name, change := range map[string]func(c *arena.Config){
		"ticket TTL over 15m":                 func(c *arena.Config) { c.TicketTTL = arena.MaxTicketTTL + time.Second },
		"ticket TTL under 1m":                 func(c *arena.Config) { c.TicketTTL = 59 * time.Second },
		"no ticket TTL":                       func(c *arena.Config) { c.TicketTTL = 0 },
		"no grant requests":                   func(c *arena.Config) { c.GrantRequests = 0 },
		"negative grant requests":             func(c *arena.Config) { c.GrantRequests = -1 },
		"runner timeout under twice the poll": func(c *arena.Config) { c.PollAfter, c.RunnerTimeout = 10*time.Second, 19*time.Second },
		"poll interval under 1s":              func(c *arena.Config) { c.PollAfter = 500 * time.Millisecond },
		"intent TTL under 1m":                 func(c *arena.Config) { c.IntentTTL = 59 * time.Second },
	} {
		c := d
		change(&c)
		if _, err := arena.NewConfig(settingsOf(c)); err == nil {
			t.Errorf("%s: accepted %+v", name, c)
		}
	}
}

// The flags' defaults are DefaultConfig, and each flag sets its setting.
func TestFlags(t *testing.T) {
	t.Parallel()
	run := func(args ...string) arena.Config {
		t.Helper()
		var got arena.Config
		cmd := &cli.Command{Name: "svc", Flags: arena.Flags(), Action: func(_ context.Context, cmd *cli.Command) error {
			var err error
			got, err = arena.NewConfig(cmd)
			return err
		}}
		if err := cmd.Run(context.Background(), append([]string{"svc"}, args...)); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return got
	}
	if got := run(); got != arena.DefaultConfig() {
		t.Fatalf("defaults %+v, want %+v", got, arena.DefaultConfig())
	}
	want := arena.Config{GrantKeys: "a,b", TicketTTL: 5 * time.Minute, GrantRequests: 3, RunnerTimeout: time.Minute, PollAfter: 2 * time.Second, IntentTTL: 2 * time.Hour}
	if got := run("--arena-grant-key", "a,b", "--arena-ticket-ttl", "5m", "--arena-grant-requests", "3", "--arena-runner-timeout", "1m",
		"--arena-poll-after", "2s", "--arena-intent-ttl", "2h"); got != want {
		t.Fatalf("flags %+v, want %+v", got, want)
	}
}
