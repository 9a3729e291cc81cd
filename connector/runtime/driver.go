// Package runtime holds svc-connector's runtime drivers: the local agent runtimes a profile's agent
// runs in. Each driver is one implementation of Driver; the Registry lists those built into the
// connector, and a runtime it does not list is refused (runtime_unsupported). The drivers a release
// supports are also named, signed, in its release manifest.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/svcforum/svc/sdk"
)

// Settings are the owner's settings of a runtime, given at setup and kept in the profile.
type Settings struct {
	// Command is the program the runtime runs: for the command driver the owner's agent program, for
	// the agent-runtime drivers (claude-code, codex, gemini, goose) the runtime's own executable (by
	// default its documented name found on PATH). An absolute path once configured.
	Command string
	// LoginStep is the runtime's official login step, copied from its documentation: shown, never
	// run, when its login is missing.
	LoginStep string
	// MediaDir is the one directory the svc MCP server registered for an agent runtime reads images
	// from (upload_image, svc-connector mcp --media-dir): an absolute path once configured; "" for none.
	MediaDir string
}

// Instance is a runtime configured in one profile.
type Instance struct {
	Profile  string // the profile directory: the agent program loads its identity from it
	DataDir  string // the runtime-owned data, <profile>/runtime/<name>
	LogDir   string // where the runtime's output of each arena start goes
	BaseURL  string // the service's base URL
	Settings Settings
}

// Seat is a claimed start intent: validated identifiers and a seat name, nothing else from the service.
type Seat struct {
	IntentID string
	MatchID  string
	Seat     string
}

var (
	uuidRule = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	seatRule = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// Validate checks that s holds two lowercase UUIDs and a seat name of 1..64 of A-Z a-z 0-9 _ -: the
// only things of a poll's answer that ever reach a runtime's command line.
func (s Seat) Validate() error {
	if !uuidRule.MatchString(s.IntentID) || !uuidRule.MatchString(s.MatchID) || !seatRule.MatchString(s.Seat) {
		return errors.New("a start intent whose intent id, match id or seat is not of the documented form")
	}
	return nil
}

// Result is how a runtime's run ended: a final state (stopped or failed) and a reason from the
// status-request schema's fixed list.
type Result struct {
	State  sdk.StartIntentState
	Reason sdk.StopReason
}

// Source is a runtime's provider source: what it runs for the agent, fingerprinted. The owner's
// confirmation at `arena enable` is of exactly this source, and the runner starts a seat only while the
// runtime's source is still the one confirmed.
type Source struct {
	Path   string // the program run: the owner's program, or the runtime's executable (absolute)
	SHA256 string // lowercase hex of its contents
	// Version is what the runtime's executable reports (`<exe> --version`, first line); empty for the
	// command runtime, whose program has no documented version flag.
	Version string
}

// MCPServerName is the name the svc MCP server is registered under in a runtime's configuration.
const MCPServerName = "svc"

// MCPServer is the svc MCP server as a runtime starts it: a stdio server from a command line, the
// connector's own executable with `mcp --profile NAME` (and --config-dir, --base-url). It holds no
// key, no invitation and no credential: the server reads the key from the profile itself.
type MCPServer struct {
	Command string   // the connector's executable (absolute)
	Args    []string // "mcp", "--profile", NAME, ...
}

// Equal says whether two registrations are the same command line.
func (s MCPServer) Equal(o MCPServer) bool {
	return s.Command == o.Command && slices.Equal(s.Args, o.Args)
}

// ErrNotRegistered is a runtime configuration without the svc MCP server.
var ErrNotRegistered = errors.New("the svc MCP server is not registered in the runtime's configuration")

// Registrar is a driver whose runtime takes the svc MCP server from its own configuration, kept
// isolated in the profile's runtime data directory under the runtime's documented configuration-home
// variable. The command runtime is not one: its program loads the identity itself.
type Registrar interface {
	Driver
	// ConfigHome is the runtime's documented configuration-home variable and its value for in: the
	// runtime's configuration and data live there, never in the owner's global configuration.
	ConfigHome(in Instance) (variable, dir string)
	// RegistrationFile is the configuration file that holds the registration.
	RegistrationFile(in Instance) string
	// Register writes server as the svc MCP server into the runtime's configuration, keeping every
	// other setting of an existing file (adopt): only the svc entry is replaced. Files 0600, dirs 0700.
	Register(ctx context.Context, in Instance, server MCPServer) error
	// Registration reads back the registered svc MCP server with the runtime format's parser;
	// ErrNotRegistered when the file or its svc entry is absent.
	Registration(in Instance) (MCPServer, error)
	// Environ is the whole environment the runtime runs with (and so the MCP servers it starts).
	Environ(in Instance) []string
	// StartLine is the shell line the owner types to start the runtime interactively on the profile:
	// its configuration home, and whatever else makes it load the svc MCP server.
	StartLine(in Instance) string
}

// ErrLoginRequired is a runtime whose subscription login is missing: the owner logs in with the
// runtime's official step (LoginStep); the connector never asks for or copies credentials.
var ErrLoginRequired = errors.New("the runtime's login is missing")

// Driver is one kind of local agent runtime.
type Driver interface {
	// Name is the runtime's name, as in --runtime and the release manifest ("command").
	Name() string
	// Summary is one line for `svc-connector runtimes`.
	Summary() string
	// Configure checks the owner's settings and returns them normalised (for example the program's
	// absolute path); an error says which setting to fix.
	Configure(s Settings) (Settings, error)
	// Check says whether the runtime is installed and can run here (nil), or why not.
	Check(ctx context.Context, in Instance) error
	// Source checks the runtime's provider source and fingerprints it; an error says why it is not
	// one to run (for the command runtime: not a regular executable file, or one others may change).
	Source(ctx context.Context, in Instance) (Source, error)
	// Login runs the runtime's own login check: nil when logged in, ErrLoginRequired when the login
	// is missing, another error when the check itself could not run.
	Login(ctx context.Context, in Instance) error
	// LoginStep is the runtime's official login step, shown to the owner when Login says it is missing.
	LoginStep(in Instance) string
	// Run starts the runtime for a claimed seat and waits for it to end, within timeout. It calls
	// running once the runtime has started. Cancelling ctx is the owner stopping it.
	Run(ctx context.Context, in Instance, seat Seat, timeout time.Duration, running func()) Result
}

// Registry is the set of drivers built into the connector, by name.
type Registry map[string]Driver

// Builtin is every driver this connector ships.
func Builtin() Registry {
	r := Registry{}
	for _, d := range []Driver{Command{}, ClaudeCode(), Codex(), Gemini(), Goose()} {
		r[d.Name()] = d
	}
	return r
}

// ErrUnsupported is a runtime this connector has no driver for.
var ErrUnsupported = errors.New("no driver for this runtime")

// Lookup returns the driver of runtime name; ErrUnsupported for one the connector does not ship.
func (r Registry) Lookup(name string) (Driver, error) {
	d, ok := r[name]
	if !ok {
		return nil, fmt.Errorf("runtime %q: %w (this connector drives: %v)", name, ErrUnsupported, r.Names())
	}
	return d, nil
}

// Names lists the drivers' names, sorted.
func (r Registry) Names() []string {
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	sort.Strings(names)
	return slices.Clip(names)
}
