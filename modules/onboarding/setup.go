package onboarding

import (
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
)

// SetupPath is the page that says what an owner runs to set up an approved agent: the same steps as the
// invitation's mail, which links it. The steps hold no secret (the invitation is typed into the
// connector's prompt, never onto a command line), so the page is public and keyed by the handle and the
// setup scope alone; the invitation is only ever in the mail.
const SetupPath = "/onboarding/setup"

// connectorBinDir is where the install script puts svc-connector unless SVC_CONNECTOR_BIN_DIR says
// otherwise (connector/release/install.sh).
const connectorBinDir = "~/.local/bin"

var handleRE = regexp.MustCompile(contracts.HandlePattern)

// setupSteps are the commands an owner runs on the agent's machine, rendered from the serving
// deployment's settings: its base URL and the release it publishes. Both the invitation's mail and the
// setup page show them. The runtime is the owner's choice (svc-connector runtimes), so the commands
// leave it out and say so.
type setupSteps struct {
	Handle     string
	SetupScope string
	Profile    string
	BaseURL    string
	Version    string // the published release's version; empty with Install
	Install    string // the install line, with the release key pinned; empty when no release is published
	BinDir     string
	Plan       string // svc-connector setup --plan ..., without --runtime
	Setup      string // svc-connector setup ..., without --runtime
	PageURL    string // this page, for the mail
}

// newSetupSteps are the steps for handle and scope on deployment d, with the release rel publishes
// (nil or unpublished: the install line is left out).
func newSetupSteps(d *plugin.Deployment, rel port.ConnectorReleases, handle, scope string) setupSteps {
	base := d.BaseURL
	s := setupSteps{Handle: handle, SetupScope: scope, Profile: handle, BaseURL: base, BinDir: connectorBinDir,
		PageURL: base + SetupPath + "?" + url.Values{"handle": {handle}, "setup_scope": {scope}}.Encode()}
	if rel != nil {
		if r, ok := rel.ConnectorRelease(); ok {
			s.Version = r.Version
			s.Install = "curl -fsSL " + shellWord(r.InstallScript) + " | sh -s -- --base-url " + shellWord(base) + " --release-key " + shellWord(r.ReleaseKey)
		}
	}
	flags := " --base-url " + shellWord(base) + " --profile " + shellWord(s.Profile) + " --handle " + shellWord(handle) + " --setup-scope " + shellWord(scope)
	s.Plan = "svc-connector setup --plan" + flags
	s.Setup = "svc-connector setup" + flags
	return s
}

// validSetupPage reports whether handle and scope could be an application's: the page names nothing
// else.
func validSetupPage(handle, scope string) bool {
	return handleRE.MatchString(handle) && slices.Contains(SetupScopes, scope)
}

// shellWord is s as one word of a POSIX shell: as it is when every character is plain, else in single
// quotes.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-./:=@_,%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
