package host

import (
	"math"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/site"
	"github.com/svcforum/svc/modules/discovery"
)

// limiterAddresses bounds the per-address limiters a replica keeps: the most recently seen addresses.
// A forgotten address starts again with a full burst, as an address idle for burst/rate seconds has
// anyway, so an idle address needs no clock of its own to be forgotten.
const limiterAddresses = 100_000

// addressLimiter limits each client address of the public listener to a rate with a burst (a token
// bucket per address). It is kept per replica: public reads need no agreement between replicas, only
// that no reader can take a replica's capacity from the others.
type addressLimiter struct {
	rate  rate.Limit
	burst int
	mu    sync.Mutex // guards seen, and makes get-or-create one step
	seen  *simplelru.LRU[string, *rate.Limiter]
}

func newAddressLimiter(perSecond float64, burst int) *addressLimiter {
	seen, err := simplelru.NewLRU[string, *rate.Limiter](limiterAddresses, nil)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &addressLimiter{rate: rate.Limit(perSecond), burst: burst, seen: seen}
}

// allow takes one request of addr; when it is over the limit, retryAfter is the whole seconds (at least
// 1) until it would pass.
func (l *addressLimiter) allow(addr string, now time.Time) (ok bool, retryAfter int) {
	l.mu.Lock()
	lim, found := l.seen.Get(addr)
	if !found {
		lim = rate.NewLimiter(l.rate, l.burst)
		l.seen.Add(addr, lim)
	}
	l.mu.Unlock()
	r := lim.ReserveN(now, 1)
	delay := r.DelayFrom(now)
	if delay == 0 {
		return true, 0
	}
	r.CancelAt(now) // a refused request takes nothing from the bucket
	return false, max(1, int(math.Ceil(delay.Seconds())))
}

// budgets are the public listener's limits: one for the pages and the API, and one of its own for the
// published documents, which a tool bootstrapping from discovery (an OpenAPI loader, an MCP server)
// reads all at once. Those are immutable files served from memory with ETags, so a burst that covers a
// whole walk costs little, and takes nothing from the pages' budget.
type budgets struct {
	pages, documents *addressLimiter
	published        map[string]bool // the exact paths discovery names
}

func newBudgets(cfg Config, pubs []plugin.Publication) budgets {
	published := make(map[string]bool, len(pubs))
	for _, p := range pubs {
		published[p.Path] = true
	}
	return budgets{
		pages:     newAddressLimiter(cfg.PublicRate, cfg.PublicBurst),
		documents: newAddressLimiter(cfg.PublicDocumentsRate, cfg.PublicDocumentsBurst),
		published: published,
	}
}

// documentPath reports whether path is a published document: the discovery document, the OpenAPI
// document, the contracts tree, the developers' guides, and every other location discovery names (a
// release's manifest, a JSON Web Key Set).
func (b budgets) documentPath(path string) bool {
	switch {
	case path == discovery.DocumentPath, path == discovery.PublicAPI,
		strings.HasPrefix(path, discovery.ContractsDir+"/"), strings.HasPrefix(path, developersDir),
		b.published[path]:
		return true
	}
	return false
}

// developersDir holds the guides for the developers of agents (discovery.SkillPath).
const developersDir = "/developers/"

// limitAddresses answers 429 rate_limited, with Retry-After, to an address over its budget (the
// documents' or the pages'); the probes of /health are never limited. A person gets the site's page, a
// program a problem.
func limitAddresses(b budgets, s *site.Site) gin.HandlerFunc {
	return func(c *gin.Context) {
		if probe(c.FullPath()) {
			c.Next()
			return
		}
		l := b.pages
		if b.documents != nil && b.documentPath(c.Request.URL.Path) {
			l = b.documents
		}
		ok, retry := l.allow(plugin.ClientKey(c), time.Now())
		if ok {
			c.Next()
			return
		}
		p := problem.Newf(problem.RateLimited, "Too many requests from this address; slow down to %g a second.", float64(l.rate)).
			With("retry_after_seconds", retry)
		if site.WantsHTML(c.GetHeader("Accept")) {
			s.Problem(c, p)
			c.Abort()
			return
		}
		render.Abort(c, p)
	}
}
