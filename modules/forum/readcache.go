package forum

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	lru "github.com/hashicorp/golang-lru/v2"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/render"
)

// cacheEntries bounds the read cache: the least recently used answers leave first.
const cacheEntries = 2048

// cacheMaxAge is how long an answer is served again at most, however quiet the forum: a list's
// answer holds cursors sealed when it was built, good for a day (cursor.MaxAge), and each must be
// handed out with most of that day ahead of it. (A rebuild within the cursors' hour, cursor.IssueStep,
// gives the same bytes and ETag.)
const cacheMaxAge = time.Hour

// ReadCache keeps the public reads' answers (the JSON plane and the pages) in memory, each under the
// content version it was built at (ContentVersion), and serves one again while that version is
// current: a change to any forum table on any replica makes every answer stale. Only an answer that
// says it may be stored by a shared cache (200 with Cache-Control: public) is kept, under its method,
// address and negotiated media type; its bytes and ETag are the handler's, so they stay stable, and a
// matching If-None-Match gets 304 as from the handler.
type ReadCache struct {
	version *ContentVersion
	clock   port.Clock
	row     *versionRow // SQLite's version row, read on the read pool
	entries *lru.Cache[cacheKey, cached]
}

// cacheKey is what an answer is stored under: the request's method and address, and the media type
// negotiated for it.
type cacheKey struct{ method, uri, mediaType string }

// cached is one stored answer.
type cached struct {
	token  contentToken
	built  time.Time
	header http.Header // the headers the handler set
	etag   string      // header's ETag, if any
	body   []byte
}

// NewReadCache returns the cache, versioned by version and reading SQLite's version row on read; an
// answer older than cacheMaxAge on clock is built again.
func NewReadCache(version *ContentVersion, read *gorm.DB, clock port.Clock) *ReadCache {
	entries, err := lru.New[cacheKey, cached](cacheEntries)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &ReadCache{version: version, clock: clock, row: &versionRow{db: read}, entries: entries}
}

// UseCache makes r (and the pages on it) answer through rc.
func (r *Reads) UseCache(rc *ReadCache) { r.cache = rc }

// Notify makes w tell v of every write that commits, so that this process reads its writes at once.
func (w *Writes) Notify(v *ContentVersion) { w.version = v }

// serve answers with h through the cache (a nil cache: h alone).
func (rc *ReadCache) serve(h gin.HandlerFunc) gin.HandlerFunc {
	if rc == nil {
		return h
	}
	return func(c *gin.Context) {
		tok, ok := rc.version.token(c.Request.Context(), rc.row)
		if !ok {
			h(c)
			return
		}
		key := cacheKey{c.Request.Method, c.Request.URL.RequestURI(), render.MediaType(c)}
		now := rc.clock.Now()
		if e, hit := rc.entries.Get(key); hit && e.token == tok && now.Sub(e.built) < cacheMaxAge {
			e.answer(c)
			return
		}
		before := c.Writer.Header().Clone()
		rec := &recorder{ResponseWriter: c.Writer}
		c.Writer = rec
		h(c)
		c.Writer = rec.ResponseWriter
		if rec.Status() != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Cache-Control"), "public") {
			return
		}
		set := http.Header{}
		for name, values := range rec.Header() {
			if !slices.Equal(before[name], values) {
				set[name] = slices.Clip(slices.Clone(values))
			}
		}
		rc.entries.Add(key, cached{token: tok, built: now, header: set, etag: set.Get("ETag"), body: rec.body.Bytes()})
	}
}

// answer writes the stored answer, or 304 when the request's If-None-Match names its ETag.
func (e cached) answer(c *gin.Context) {
	h := c.Writer.Header()
	for name, values := range e.header {
		// Shared, not copied: each slice's capacity is its length (serve clips it), so a later
		// Header().Add on this answer appends to a copy and never reaches the stored entry.
		h[name] = values
	}
	if inm := c.GetHeader("If-None-Match"); inm != "" && e.etag != "" {
		for part := range strings.SplitSeq(inm, ",") {
			if v := strings.TrimPrefix(strings.TrimSpace(part), "W/"); v == e.etag || v == "*" {
				c.Status(http.StatusNotModified)
				return
			}
		}
	}
	c.Status(http.StatusOK)
	_, _ = c.Writer.Write(e.body)
}

// recorder keeps a copy of what the handler writes.
type recorder struct {
	gin.ResponseWriter
	body bytes.Buffer
}

func (r *recorder) Write(b []byte) (int, error) {
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

func (r *recorder) WriteString(s string) (int, error) {
	r.body.WriteString(s)
	return r.ResponseWriter.WriteString(s)
}
