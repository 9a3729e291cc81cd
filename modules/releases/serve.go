package releases

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/fx"

	"github.com/svcforum/svc/connector/release"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
)

// Size limits of the files read whole.
const (
	maxKey      = 4 << 10
	maxManifest = 1 << 20
)

// downloadTimeout is how long one download of a listed file may take to write, past the listener's
// write timeout (a binary is megabytes, and an owner's link may be slow).
const downloadTimeout = 10 * time.Minute

// Releases serves the configured release directory. It is cheap to construct; the directory is read
// and verified when the application starts.
type Releases struct {
	cfg     Config
	log     *slog.Logger
	dirURL  string // the absolute URL of Prefix
	current atomic.Pointer[published]
}

// published is a verified release directory: the manifest and key in memory, and every listed file kept
// open, so that what is served is what was verified even if the directory's files are renamed over;
// and the release's description, release.json, made from the verified manifest.
type published struct {
	manifest *release.Manifest
	files    map[string]*file // served name -> file
	info     []byte           // release.json
}

type file struct {
	body        []byte   // the manifest and the key
	f           *os.File // a listed file
	size        int64
	modTime     time.Time
	etag        string
	contentType string
}

// New returns the module's service for cfg, publishing under the deployment's base URL.
func New(cfg Config, log *slog.Logger, d *plugin.Deployment) *Releases {
	return &Releases{cfg: cfg, log: log.With("module", ID), dirURL: d.BaseURL + Prefix}
}

// load reads the release directory dir and verifies it with the connector's own rules
// (release.Verify): the manifest must be signed by exactly the key in release-key and list install.sh,
// and every file it lists must be in dir with its SHA-256. The error says, on one line, what does not
// verify. dirURL is where the files are served, for release.json. Close the result's files with close.
func load(dir, dirURL string) (*published, error) {
	fail := func(format string, args ...any) (*published, error) {
		return nil, fmt.Errorf("--releases-dir %s: "+format, append([]any{dir}, args...)...)
	}
	rawKey, err := readSmall(filepath.Join(dir, release.KeyName), maxKey)
	if err != nil {
		return fail("%v", err)
	}
	key := strings.TrimSuffix(string(rawKey), "\n")
	if key == "" || strings.ContainsAny(key, "\r\n") {
		return fail("%s is not one line", release.KeyName)
	}
	signed, err := readSmall(filepath.Join(dir, release.ManifestName), maxManifest)
	if err != nil {
		return fail("%v", err)
	}
	m, err := release.Verify(signed, key)
	if err != nil {
		return fail("%s, under %s: %v", release.ManifestName, release.KeyName, err)
	}
	if _, ok := m.Files[release.InstallerName]; !ok {
		return fail("%s lists no %s", release.ManifestName, release.InstallerName)
	}
	info, err := json.MarshalIndent(m.Describe(dirURL), "", "  ")
	if err != nil {
		return fail("%v", err)
	}
	r := &published{manifest: m, info: append(info, '\n'), files: map[string]*file{
		release.ManifestName: {body: signed, size: int64(len(signed)), etag: etag(sha256Hex(signed)), contentType: "text/plain; charset=utf-8"},
		release.KeyName:      {body: rawKey, size: int64(len(rawKey)), etag: etag(sha256Hex(rawKey)), contentType: "text/plain; charset=utf-8"},
	}}
	for name, want := range m.Files {
		f, err := openVerified(filepath.Join(dir, name), want)
		if err != nil {
			r.close()
			return fail("%v", err)
		}
		f.contentType = "application/octet-stream"
		if name == release.InstallerName {
			f.contentType = "text/x-shellscript; charset=utf-8"
		}
		r.files[name] = f
	}
	return r, nil
}

func readSmall(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", filepath.Base(path), limit)
	}
	return b, nil
}

// openVerified opens the regular file at path and checks its SHA-256.
func openVerified(path, want string) (*file, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the manifest lists %s: %w", filepath.Base(path), err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, fi.Size())); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		f.Close()
		return nil, fmt.Errorf("%s has SHA-256 %s, the manifest says %s: the release was changed after it was signed", filepath.Base(path), got, want)
	}
	return &file{f: f, size: fi.Size(), modTime: fi.ModTime(), etag: etag(want)}, nil
}

func (r *published) close() {
	for _, f := range r.files {
		if f.f != nil {
			f.f.Close()
		}
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func etag(sha256hex string) string { return `"` + sha256hex[:32] + `"` }

// Routes serves the release on the public plane: GET and HEAD of Prefix + the manifest, the key, each
// listed file and release.json. The directory is verified when the application starts (a release that does not verify
// stops start-up), and its files are closed when it stops. Without a directory, nothing is mounted.
func (s *Releases) Routes(lc fx.Lifecycle) plugin.Routes {
	routes := plugin.Routes{Module: ID, Plane: plugin.Public, Mount: func(gin.IRouter) {}}
	if s.cfg.Dir == "" {
		return routes
	}
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			r, err := load(s.cfg.Dir, s.dirURL)
			if err != nil {
				return err
			}
			s.current.Store(r)
			s.log.Info("publishing svc-connector", "version", r.manifest.Version, "runtimes", r.manifest.Runtimes, "dir", s.cfg.Dir, "files", len(r.manifest.Files))
			return nil
		},
		OnStop: func(context.Context) error {
			if r := s.current.Swap(nil); r != nil {
				r.close()
			}
			return nil
		},
	})
	routes.Mount = func(g gin.IRouter) {
		g.GET(Prefix+":name", s.serve)
		g.HEAD(Prefix+":name", s.serve)
	}
	return routes
}

// ConnectorRelease is the release being published, for other modules (port.ConnectorReleases).
func (s *Releases) ConnectorRelease() (port.ConnectorRelease, bool) {
	r := s.current.Load()
	if r == nil {
		return port.ConnectorRelease{}, false
	}
	return port.ConnectorRelease{Version: r.manifest.Version, InstallScript: s.dirURL + release.InstallerName, ReleaseKey: r.manifest.Key}, true
}

func (s *Releases) serve(c *gin.Context) {
	r := s.current.Load()
	if r != nil && c.Param("name") == release.InfoName {
		s.serveInfo(c, r)
		return
	}
	var f *file
	if r != nil {
		f = r.files[c.Param("name")]
	}
	if f == nil {
		render.Problem(c, problem.Newf(problem.NotFound, "No resource at %s.", c.Request.URL.Path))
		return
	}
	content := io.ReadSeeker(bytes.NewReader(f.body))
	if f.f != nil {
		// Served from the file verified at start-up; one changed in place since is not served.
		if fi, err := f.f.Stat(); err != nil || fi.Size() != f.size || !fi.ModTime().Equal(f.modTime) {
			s.log.Error("a published release file changed after start-up; restart to publish the new release", "file", c.Param("name"), "dir", s.cfg.Dir)
			render.Error(c, fmt.Errorf("release file %s changed after start-up", c.Param("name")))
			return
		}
		content = io.NewSectionReader(f.f, 0, f.size)
		_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Now().Add(downloadTimeout))
	}
	h := c.Writer.Header()
	h.Set("ETag", f.etag)
	h.Set("Content-Type", f.contentType)
	// Always revalidated (cheap with the ETag): the manifest and the binaries change together.
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(c.Writer, c.Request, "", time.Time{}, content)
}

// serveInfo answers release.json in the negotiated JSON media type, with an ETag of that representation.
func (s *Releases) serveInfo(c *gin.Context, r *published) {
	mediaType := render.MediaType(c)
	h := c.Writer.Header()
	h.Set("ETag", etag(sha256Hex(append([]byte(mediaType+"\n"), r.info...))))
	h.Set("Content-Type", mediaType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(c.Writer, c.Request, "", time.Time{}, bytes.NewReader(r.info))
}

var _ port.ConnectorReleases = (*Releases)(nil)
