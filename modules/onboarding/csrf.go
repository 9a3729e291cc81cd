package onboarding

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/justinas/nosurf"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/site"
)

// maxForm bounds a form's body. A browser percent-encodes every byte of a character beyond ASCII, so
// a character may take 12 bytes of form: the longest form, a draft of MaxDraft characters (96,000
// bytes at worst), fits with its token to spare.
const maxForm = 128 << 10

// ginContext carries the request's gin context through nosurf, an http.Handler built once.
type ginContext struct{}

// csrfGuard protects the plane's forms with nosurf: a token in a cookie and the same token, masked, in
// each form; a POST without both, or from another origin, is 403 csrf_failed. Its cookie is the
// site's (path /), so that every form of the service shares it.
func csrfGuard(d *plugin.Deployment, s *site.Site) gin.HandlerFunc {
	secure := strings.HasPrefix(d.BaseURL, "https://")
	// A proxy in front may change Host: the configured base URL is the site's origin too.
	allowed, err := nosurf.StaticOrigins(d.BaseURL)
	if err != nil {
		allowed = func(*url.URL) bool { return false }
	}
	of := func(r *http.Request) *gin.Context { return r.Context().Value(ginContext{}).(*gin.Context) }
	h := nosurf.New(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		c := of(r)
		c.Request = r
		c.Next()
	}))
	h.SetBaseCookie(http.Cookie{Path: "/", HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode})
	h.SetIsTLSFunc(func(*http.Request) bool { return secure })
	h.SetIsAllowedOriginFunc(allowed)
	h.SetFailureHandler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		c := of(r)
		s.Problem(c, problem.New(problem.CSRFFailed, "This form was sent without its security token, or from another site. Go back, reload the page and send the form again."))
		c.Abort()
	}))
	return func(c *gin.Context) {
		if c.Request.ContentLength > maxForm {
			s.Problem(c, problem.New(problem.BodyTooLarge, "The form is larger than any this site takes."))
			c.Abort()
			return
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxForm)
		c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), ginContext{}, c))
		c.Set(csrfKey, h)
		h.ServeHTTP(c.Writer, c.Request)
	}
}

const csrfKey = "onboarding.csrf"

// regenerateCSRF gives the browser a new form token (at sign-in and sign-out): a token learnt before
// is worth nothing after.
func regenerateCSRF(c *gin.Context) {
	if h, ok := c.Get(csrfKey); ok {
		h.(*nosurf.CSRFHandler).RegenerateToken(c.Writer, c.Request)
	}
}
