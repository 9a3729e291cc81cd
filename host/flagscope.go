package host

import (
	"reflect"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"
)

// Which settings each command's --help shows. `svc serve` shows every one. The one-off commands
// (migrate, admin) show the database, modules and logging settings beside their own flags, and health
// the public address. Every command still reads every setting from its flag or environment variable,
// the ones it does not show hidden, so that one environment configures the server and the operator's
// shell alike (WIRE.md section 8): a module's admin command may need one of the module's settings.

// oneOffCategories are the categories of the settings that migrate and admin commands show.
var oneOffCategories = []string{"database", "modules", "logging"}

// oneOffUnused are settings of those categories that migrate and admin commands do not use: they
// never migrate as a side effect and never serve public reads.
var oneOffUnused = []string{"no-migrate", "seed", "db-read-max-conns", "db-read-timeout"}

// oneOffFlags are every setting, those a one-off command does not use hidden.
func oneOffFlags() []cli.Flag {
	return scopedFlags(func(f cli.Flag) bool {
		return slices.Contains(oneOffCategories, category(f)) && !slices.Contains(oneOffUnused, f.Names()[0])
	})
}

// healthFlags are every setting, all but the public address hidden.
func healthFlags() []cli.Flag {
	return scopedFlags(func(f cli.Flag) bool { return f.Names()[0] == "public-addr" })
}

// scopedFlags returns every setting (new flag values: a command's flags are its own) with those that
// shown rejects hidden from --help.
func scopedFlags(shown func(cli.Flag) bool) []cli.Flag {
	fs := flags()
	for _, f := range fs {
		if !shown(f) {
			setField(f, "Hidden", reflect.ValueOf(true))
		}
	}
	return fs
}

func category(f cli.Flag) string {
	if c, ok := f.(cli.CategorizableFlag); ok {
		return c.GetCategory()
	}
	return ""
}

// required is how --help marks a flag a command cannot run without (urfave/cli omits a required
// flag's default but does not say that it is required).
const required = "(required)"

// markRequired appends "(required)" to the usage of every required flag of cmd and its subcommands.
func markRequired(cmd *cli.Command) {
	for _, f := range cmd.Flags {
		rf, ok := f.(cli.RequiredFlag)
		if !ok || !rf.IsRequired() {
			continue
		}
		usage := ""
		if df, ok := f.(cli.DocGenerationFlag); ok {
			usage = df.GetUsage()
		}
		if !strings.HasSuffix(usage, required) {
			setField(f, "Usage", reflect.ValueOf(strings.TrimSpace(usage+" "+required)))
		}
	}
	for _, sub := range cmd.Commands {
		markRequired(sub)
	}
}

// setField sets a field of urfave/cli's generic flag struct (every flag type is a *FlagBase[...],
// with Hidden and Usage fields but no setters). A flag of another shape is a programming error that
// the help tests catch.
func setField(f cli.Flag, name string, v reflect.Value) {
	p := reflect.ValueOf(f)
	if p.Kind() != reflect.Pointer || p.Elem().Kind() != reflect.Struct {
		panic("flag " + f.Names()[0] + " is not a pointer to a struct")
	}
	field := p.Elem().FieldByName(name)
	if !field.IsValid() || !field.CanSet() || field.Type() != v.Type() {
		panic("flag " + f.Names()[0] + " has no settable " + name)
	}
	field.Set(v)
}
