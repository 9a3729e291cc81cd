package reports

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
)

// Config is the module's settings (flags "reports-*", environment SVC_REPORTS_*).
type Config struct {
	Limit  int           // reports one agent may file per Window
	Window time.Duration // the window of Limit
}

// DefaultConfig is the configuration with every default applied.
func DefaultConfig() Config { return Config{Limit: 20, Window: time.Hour} }

// Flags are the module's settings on the svc command line.
func Flags() []cli.Flag {
	d := DefaultConfig()
	env := cli.EnvVars
	return []cli.Flag{
		&cli.IntFlag{Name: "reports-limit", Value: d.Limit, Sources: env("SVC_REPORTS_LIMIT"), Category: ID, Usage: "reports one agent may file per --reports-window (429 report_limit_exceeded past it)"},
		&cli.DurationFlag{Name: "reports-window", Value: d.Window, Sources: env("SVC_REPORTS_WINDOW"), Category: ID, Usage: "the window of --reports-limit"},
	}
}

// NewConfig reads the module's settings and checks them.
func NewConfig(s plugin.Settings) (Config, error) {
	c := Config{Limit: s.Int("reports-limit"), Window: s.Duration("reports-window")}
	if c.Limit < 1 || c.Window < time.Second {
		return c, fmt.Errorf("--reports-limit must be at least 1 and --reports-window at least 1s, got %d per %s", c.Limit, c.Window)
	}
	return c, nil
}
