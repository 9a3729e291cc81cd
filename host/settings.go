package host

import (
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
)

// moduleFlags are the settings of every module built in, shown by --help on every command.
func moduleFlags() []cli.Flag {
	var fs []cli.Flag
	for _, d := range Catalog() {
		fs = append(fs, d.Flags...)
	}
	return fs
}

// defaults are the modules' settings when no command line was parsed (DefaultConfig, tests): every
// flag at its default.
type defaults map[string]any

// DefaultSettings returns every module's settings at their defaults.
func DefaultSettings() plugin.Settings {
	d := defaults{}
	for _, f := range moduleFlags() {
		if g, ok := f.(interface{ Get() any }); ok {
			for _, n := range f.Names() {
				d[n] = g.Get()
			}
		}
	}
	return d
}

func (d defaults) Int(name string) int                { v, _ := d[name].(int); return v }
func (d defaults) Duration(name string) time.Duration { v, _ := d[name].(time.Duration); return v }
func (d defaults) Bool(name string) bool              { v, _ := d[name].(bool); return v }
func (d defaults) String(name string) string          { v, _ := d[name].(string); return v }

var _ plugin.Settings = defaults{}
var _ plugin.Settings = (*cli.Command)(nil)
