package releases

import (
	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
)

// Config is the module's settings (flag "releases-dir", environment SVC_RELEASES_DIR).
type Config struct {
	// Dir is the release directory to publish; empty publishes nothing.
	Dir string
}

// Flags are the module's settings on the svc command line.
func Flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "releases-dir", Sources: cli.EnvVars("SVC_RELEASES_DIR"), Category: ID,
			Usage: "the svc-connector release directory to publish (make release writes dist/svc-connector); empty publishes none"},
	}
}

// NewConfig reads the module's settings.
func NewConfig(s plugin.Settings) Config { return Config{Dir: s.String("releases-dir")} }
