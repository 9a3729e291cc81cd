package sigv1

import (
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

// The rate-limit fields of draft-ietf-httpapi-ratelimit-headers (the structured-field form of
// draft 08 and later): the policies a request counts against, and what is left of each.
const (
	HeaderRateLimitPolicy = "RateLimit-Policy"
	HeaderRateLimit       = "RateLimit"
)

// The names of the policies, as the fields name them.
const (
	policyAttempts   = "attempts"
	policyWrites     = "writes"
	policyFailedAuth = "failed-auth"
)

// quota is one policy as the fields state it: its quota per window and, when this request counted
// against it, what is left (r) and the seconds until the window ends (t).
type quota struct {
	name    string
	limit   int
	counted bool
	left    int64
	reset   int
}

// quotaOf is the policy name of limit per window, as the window w (the admission's count) left it.
func quotaOf(name string, limit int, w counted, now time.Time) quota {
	if w.endMS == 0 {
		return quota{name: name, limit: limit} // not counted: an earlier limit refused the request
	}
	return quota{name: name, limit: limit, counted: true, left: max(int64(limit)-w.hits, 0), reset: retryAfterSeconds(w.endMS, now)}
}

// announceLimits writes RateLimit-Policy (each policy the route counts against: q requests per w
// seconds) and RateLimit (each window this request counted in: r requests left, t seconds until it
// ends). It runs before the answer is written, so that the route's answer, a refusal of the limits
// (429) and a replayed write all carry them. Nothing is read for it: the counts are the admission's.
func (g *Guard) announceLimits(c *gin.Context, write, uncounted bool, adm admitted, now time.Time) {
	var qs []quota
	if !uncounted {
		qs = append(qs, quotaOf(policyAttempts, g.cfg.AttemptsPerWindow, adm.attempts, now))
	}
	if write {
		qs = append(qs, quotaOf(policyWrites, g.cfg.WritesPerWindow, adm.writes, now))
	}
	writeLimitFields(c, g.cfg.RateWindow, qs...)
}

// writeLimitFields writes the fields of qs, each a member of a structured-field List: a String (the
// policy's name) with Integer parameters; w is the window in whole seconds, rounded up.
func writeLimitFields(c *gin.Context, window time.Duration, qs ...quota) {
	w := strconv.FormatInt(int64((window+time.Second-1)/time.Second), 10)
	var policies, left []string
	for _, q := range qs {
		policies = append(policies, strconv.Quote(q.name)+";q="+strconv.Itoa(q.limit)+";w="+w)
		if q.counted {
			left = append(left, strconv.Quote(q.name)+";r="+strconv.FormatInt(q.left, 10)+";t="+strconv.Itoa(q.reset))
		}
	}
	if len(policies) > 0 {
		c.Header(HeaderRateLimitPolicy, strings.Join(policies, ", "))
	}
	if len(left) > 0 {
		c.Header(HeaderRateLimit, strings.Join(left, ", "))
	}
}
