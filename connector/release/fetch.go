package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/svcforum/svc/connector"
)

// The discovery locations of a release: its manifest, key and installer, and its description (Info,
// release.json).
const (
	LocationManifest = "connector_release_manifest"
	LocationKey      = "connector_release_key"
	LocationInstall  = "connector_install_script"
	LocationRelease  = "connector_release"
)

// Size limits of what Fetch and SelfUpdate download.
const (
	maxKey      = 4 << 10
	maxManifest = 1 << 20
	maxBinary   = 512 << 20
)

// Fetch reads the locations "connector_release_manifest" and "connector_release_key" (absolute URLs from the
// discovery document's locations; pass sdk.Discovery().Locations.Other), verifies the manifest under the
// published key, and — when connector.ReleaseKey is set — requires the published key to equal it.
func Fetch(ctx context.Context, hc *http.Client, locations map[string]string) (*Manifest, error) {
	m, _, err := fetch(ctx, hc, locations)
	return m, err
}

// fetch is Fetch, also returning the manifest's URL.
func fetch(ctx context.Context, hc *http.Client, locations map[string]string) (*Manifest, *url.URL, error) {
	manifestLoc, keyLoc := locations[LocationManifest], locations[LocationKey]
	if manifestLoc == "" || keyLoc == "" {
		return nil, nil, ErrUnpublished
	}
	manifestURL, err := absoluteURL(LocationManifest, manifestLoc)
	if err != nil {
		return nil, nil, err
	}
	keyURL, err := absoluteURL(LocationKey, keyLoc)
	if err != nil {
		return nil, nil, err
	}
	rawKey, err := get(ctx, hc, keyURL, maxKey)
	if err != nil {
		return nil, nil, err
	}
	published := strings.TrimSuffix(string(rawKey), "\n")
	if strings.ContainsAny(published, "\r\n") {
		return nil, nil, fmt.Errorf("%w: %s is not one line", ErrBadKey, keyURL.Redacted())
	}
	if pinned := strings.TrimSpace(connector.ReleaseKey); pinned != "" && published != pinned {
		return nil, nil, fmt.Errorf("%w: the service publishes %q, this connector trusts %q; if its operator rotated the key, "+
			"check the new key with them and reinstall with the install script and --release-key", ErrKeyMismatch, published, pinned)
	}
	raw, err := get(ctx, hc, manifestURL, maxManifest)
	if err != nil {
		return nil, nil, err
	}
	m, err := Verify(raw, published)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", manifestURL.Redacted(), err)
	}
	return m, manifestURL, nil
}

func absoluteURL(name, s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("release: the discovery location %s (%q) is not an absolute http(s) URL", name, s)
	}
	return u, nil
}

// get reads the body of a 200 answer to GET u, at most limit bytes.
func get(ctx context.Context, hc *http.Client, u *url.URL, limit int64) ([]byte, error) {
	res, err := open(ctx, hc, u)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("release: GET %s: %w", u.Redacted(), err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("release: GET %s: more than %d bytes", u.Redacted(), limit)
	}
	return body, nil
}

func open(ctx context.Context, hc *http.Client, u *url.URL) (*http.Response, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, &getError{u.Redacted(), err}
	}
	req.Header.Set("User-Agent", "svc-connector/"+connector.Version)
	res, err := hc.Do(req)
	if err != nil {
		return nil, &getError{u.Redacted(), err}
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		return nil, fmt.Errorf("release: GET %s: %s", u.Redacted(), res.Status)
	}
	return res, nil
}

// getError is a GET that got no answer: "release: GET <url>: <cause>", the URL named once (the
// *url.Error it wraps repeats it).
type getError struct {
	url string
	err error
}

func (e *getError) Error() string {
	cause := e.err
	if ue, ok := cause.(*url.Error); ok {
		cause = ue.Err
	}
	return "release: GET " + e.url + ": " + cause.Error()
}

func (e *getError) Unwrap() error { return e.err }

// SelfUpdateOptions are the choices of SelfUpdateWith. The zero value is SelfUpdate's.
type SelfUpdateOptions struct {
	// AllowDowngrade installs the published release when Compare does not find it newer than this
	// connector: an older version, or one that cannot be ordered after this one's (see Compare), for
	// an owner who decides to go back to a release the operator republished. Without it such a
	// release is refused with ErrDowngrade.
	AllowDowngrade bool
}

// SelfUpdate is SelfUpdateWith with the zero SelfUpdateOptions: it never installs an older release.
func SelfUpdate(ctx context.Context, hc *http.Client, locations map[string]string, exe string) (newVersion string, updated bool, err error) {
	return SelfUpdateWith(ctx, hc, locations, exe, SelfUpdateOptions{})
}

// SelfUpdateWith fetches and verifies the manifest, and when its version is newer than connector.Version
// (Compare) downloads this platform's file from the manifest's directory (same URL base as the
// manifest), checks its SHA-256, and replaces exe atomically (write beside it, chmod 0755, rename; keep
// the old one on any failure). A release of the same version is left alone. An older one, or one whose
// version cannot be ordered after this connector's, is refused with ErrDowngrade before anything is
// downloaded, unless opts.AllowDowngrade, which installs any release whose version differs.
//
// newVersion is the release's version, whether or not it was installed. A symbolic link exe is followed:
// the file it names is replaced.
func SelfUpdateWith(ctx context.Context, hc *http.Client, locations map[string]string, exe string, opts SelfUpdateOptions) (newVersion string, updated bool, err error) {
	m, manifestURL, err := fetch(ctx, hc, locations)
	if err != nil {
		return "", false, err
	}
	if m.Version == connector.Version {
		return m.Version, false, nil
	}
	if c := Compare(connector.Version, m.Version); c <= 0 && !opts.AllowDowngrade {
		if c == 0 {
			return m.Version, false, nil // the same release, built with other metadata
		}
		return m.Version, false, downgrade(connector.Version, m.Version)
	}
	name, sum, ok := m.FileFor(runtime.GOOS, runtime.GOARCH)
	if !ok {
		return m.Version, false, fmt.Errorf("%w (%s/%s): the release %s has no %s", ErrNoPlatform, runtime.GOOS, runtime.GOARCH, m.Version, BinaryName(runtime.GOOS, runtime.GOARCH))
	}
	target, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return m.Version, false, fmt.Errorf("release: the connector to replace: %w", err)
	}
	binURL := manifestURL.ResolveReference(&url.URL{Path: name})
	if err := replace(ctx, hc, binURL, sum, target); err != nil {
		return m.Version, false, err
	}
	return m.Version, true, nil
}

// downgrade is the refusal of a published version that is not newer than the running one.
func downgrade(running, published string) error {
	why := "older than"
	if !semver.IsValid(published) {
		why = "not a semantic version, so it cannot be ordered after"
	}
	return fmt.Errorf("%w: the service publishes svc-connector %s, %s this connector's %s; install it only if you mean to go back "+
		"(svc-connector self-update --allow-downgrade)", ErrDowngrade, published, why, running)
}

// replace downloads u beside target, checks its SHA-256 against sum, and renames it over target. On any
// failure target is left as it was and the download removed.
func replace(ctx context.Context, hc *http.Client, u *url.URL, sum, target string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".new-*")
	if err != nil {
		return fmt.Errorf("release: write beside %s: %w", target, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	res, err := open(ctx, hc, u)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(res.Body, maxBinary+1))
	if err != nil {
		return fmt.Errorf("release: GET %s: %w", u.Redacted(), err)
	}
	if n > maxBinary {
		return fmt.Errorf("release: GET %s: more than %d bytes", u.Redacted(), maxBinary)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum {
		return fmt.Errorf("%w: %s has SHA-256 %s, the manifest says %s", ErrChecksum, u.Redacted(), got, sum)
	}
	if err := tmp.Chmod(0o755); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return swap(tmp.Name(), target)
}

// swap puts the file at next in place of target. Windows cannot rename over a running program, but can
// rename the program: it is moved aside first (to target.old, removed at the next update), and moved
// back if the new file cannot take its place.
func swap(next, target string) error {
	if runtime.GOOS != "windows" {
		if err := os.Rename(next, target); err != nil {
			return fmt.Errorf("release: replace %s: %w", target, err)
		}
		return nil
	}
	old := target + ".old"
	if err := os.Remove(old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("release: remove %s: %w", old, err)
	}
	if err := os.Rename(target, old); err != nil {
		return fmt.Errorf("release: move %s aside: %w", target, err)
	}
	if err := os.Rename(next, target); err != nil {
		if back := os.Rename(old, target); back != nil {
			return fmt.Errorf("release: replace %s: %w (and the old one stays at %s: %v)", target, err, old, back)
		}
		return fmt.Errorf("release: replace %s: %w", target, err)
	}
	return nil
}
