package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/svcforum/svc/connector/profile"
	"github.com/svcforum/svc/connector/release"
	"github.com/svcforum/svc/sdk"
)

// ErrStatusLink is a base URL that is an application's secret status link.
var ErrStatusLink = errors.New("--base-url (or SVC_BASE_URL) is an application's secret status link (/onboarding/status/...), not the service's base URL: give the service's base URL, for example https://forum.example, and keep the status link to yourself; it is never given to the connector")

// isStatusLink reports whether s holds the path of an application's status link (the page or its
// API), in any case, as the SDK tells it.
func isStatusLink(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "/onboarding/status/") || strings.Contains(s, "/onboarding/api/v1/status/")
}

// baseURL checks the service's base URL the owner gave: an absolute http(s) URL without query or
// fragment, never a status link (checked first, on the text as given and on the decoded path, so that
// no message repeats the link). It is returned without a trailing slash.
func baseURL(raw string) (string, error) {
	if raw == "" {
		return "", usageError("--base-url (or SVC_BASE_URL) names the service: its base URL, for example https://forum.example")
	}
	if isStatusLink(raw) {
		return "", &exitError{code: ExitUsage, err: ErrStatusLink}
	}
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "", usageError("--base-url must be an absolute http(s) URL such as https://forum.example")
	}
	if isStatusLink(u.Path) {
		return "", &exitError{code: ExitUsage, err: ErrStatusLink}
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return "", usageError("--base-url must not carry a query or a fragment: give the service's base URL")
	}
	return u.String(), nil
}

// connect bootstraps an SDK client of the service (discovery and the signing self-test), signing as id
// when it is not nil; the SDK says each URL once in its errors.
func (e *Env) connect(ctx context.Context, base string, id *sdk.Identity) (*sdk.Client, error) {
	return sdk.New(ctx, base, id, sdk.WithHTTPClient(e.HTTP), sdk.WithUserAgent("svc-connector/"+connectorVersion()))
}

// releaseFacts is what the signed release manifest says about this connector.
type releaseFacts struct {
	manifest *release.Manifest
	reason   string // "" when the manifest verified and lists this binary
	finding  string
}

// Reasons about the service and the release (see connector/README.md).
const (
	reasonInvalidHandle         = "invalid_handle"
	reasonServiceUnreachable    = "service_unreachable"
	reasonOnboardingUnavailable = "onboarding_unavailable"
	reasonArenaUnavailable      = "arena_unavailable"
	reasonReleaseUnpublished    = "release_unpublished"
	reasonReleaseUnverified     = "release_unverified"
	reasonConnectorUnsigned     = "connector_unsigned"
	reasonRuntimeUnsupported    = "runtime_unsupported"
	reasonRuntimeUnpublished    = "runtime_unpublished"
)

// release fetches and verifies the signed release manifest the service publishes, and checks that the
// running binary is one of its files.
func (e *Env) release(ctx context.Context, d *sdk.Discovery) releaseFacts {
	m, err := release.Fetch(ctx, e.HTTP, d.Locations.Other)
	switch {
	case errors.Is(err, release.ErrUnpublished):
		return releaseFacts{reason: reasonReleaseUnpublished, finding: "the service publishes no signed connector release"}
	case err != nil:
		return releaseFacts{reason: reasonReleaseUnverified, finding: "the connector release manifest does not verify: " + err.Error()}
	}
	sum, err := e.selfSHA256()
	if err != nil {
		return releaseFacts{manifest: m, reason: reasonConnectorUnsigned, finding: "cannot read this connector's own binary: " + err.Error()}
	}
	if !m.Contains(sum) {
		return releaseFacts{manifest: m, reason: reasonConnectorUnsigned,
			finding: fmt.Sprintf("this connector is not a file of the signed release %s: install the signed connector (the service's install script, or svc-connector self-update)", m.Version)}
	}
	return releaseFacts{manifest: m}
}

// selfSHA256 is the SHA-256 of the running binary.
func (e *Env) selfSHA256() (string, error) {
	exe, err := e.Executable()
	if err != nil {
		return "", err
	}
	return release.FileSHA256(exe)
}

// problemCode is the code of a service's problem, or "".
func problemCode(err error) string {
	var p *sdk.Problem
	if errors.As(err, &p) {
		return p.Code
	}
	return ""
}

// loadIdentity is the profile's identity to sign with, read by the SDK from the profile's files (the
// same way an agent program loads it), with the service it belongs to.
func loadIdentity(p *profile.Profile) (*sdk.Identity, string, error) {
	id, base, err := sdk.LoadIdentity(p.Dir)
	if err != nil {
		return nil, "", fmt.Errorf("load the profile's identity: %w", err)
	}
	return id, base, nil
}
