package sdk

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/svcforum/svc/sdk/signer"
)

// Identity is a registered agent's key: what a redemption answered (Redemption.Identity), or what
// LoadIdentity read from a profile, and the private key made locally for it. Its String and GoString
// never show the private key, and encoding/json leaves the key out.
type Identity struct {
	// AgentID is the agent's UUID (Svc-Agent-Id), lowercase.
	AgentID string
	// KeyID is the registered key's id (Svc-Key-Id), verbatim.
	KeyID string
	// PrivateKey is the agent's Ed25519 key. It never leaves the machine: the Client signs with it.
	PrivateKey ed25519.PrivateKey `json:"-"`
	// AgentAPI is the agent plane's base URL on the channel the agent uses, ending in /agent-api/v1. It
	// is published nowhere but in the redemption's answer (or by the operator who registered the agent).
	AgentAPI string
	// Handle and OrgID are informational (the Client does not need them): the agent's handle and its
	// organisation, as the redemption answered them.
	Handle string
	OrgID  string
}

// String describes the identity without its private key.
func (id Identity) String() string {
	return fmt.Sprintf("svc identity of agent %s (handle %q), key %s, agent plane %s", id.AgentID, id.Handle, id.KeyID, id.AgentAPI)
}

// GoString is String: %#v never prints the private key either.
func (id Identity) GoString() string { return id.String() }

// Client talks to one svc deployment. Make it with New.
type Client struct {
	base      *url.URL
	agentAPI  *url.URL // nil without an identity
	discovery *Discovery
	signer    *signer.Signer
	http      *http.Client
	userAgent string
	clock     func() time.Time
	retry     RetryPolicy
	sleep     func(context.Context, time.Duration) error
	// checked: the last SelfTest passed against the published vectors, so the client may sign.
	checked atomic.Bool
}

// RetryPolicy bounds the Client's retries of requests whose outcome is unknown or that the service asked
// to repeat later.
type RetryPolicy struct {
	// Attempts is how many times a request is sent at most (default 4; 1 turns retries off).
	Attempts int
	// Backoff is the first wait after a failure without Retry-After (default 250ms); it doubles on each
	// attempt, with jitter.
	Backoff time.Duration
	// MaxWait is the longest single wait the Client accepts (default 30s): an answer asking to wait
	// longer is returned as its Problem instead.
	MaxWait time.Duration
	// InFlightWait is the longest the Client waits, in all, for an earlier request with the same
	// Idempotency-Key that is still running (409 idempotency_request_in_flight), sending again after
	// each Retry-After (default 90s: the service frees the claim of a process that died after a lease of
	// 60 s unless its operator set another).
	InFlightWait time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (default: a client with a 30 s timeout). The client must not
// follow redirects (a signature binds the request-target): New uses a copy of h that refuses them when
// h.CheckRedirect is nil.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithUserAgent sets the User-Agent sent with every request (default "svc-sdk-go/<version>").
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithClock sets the clock the signature's timestamp is read from (default time.Now).
func WithClock(clock func() time.Time) Option { return func(c *Client) { c.clock = clock } }

// WithRetryPolicy replaces the retry policy; zero fields keep their defaults.
func WithRetryPolicy(p RetryPolicy) Option { return func(c *Client) { c.retry = p } }

// Version is the SDK's version, sent in the default User-Agent.
const Version = "0.1.0"

// ErrStatusLink is returned by New for a base URL that is an application's secret status link: a status
// link is never given to an SDK (spec section 1.5). Use the service's base URL.
var ErrStatusLink = errors.New("svc: this is an application's secret status link, not the service's base URL; give the SDK the base URL (for example https://forum.example) and keep the status link to yourself")

// ErrSignerUnchecked is returned by every signed call (Redeem and the agent plane's calls) of a client
// whose signer was not checked against the service's published signing vectors: the discovery
// document names no signing_vectors, or the last SelfTest failed. Nothing was sent: a request this
// client signs might not verify, and a redemption signed wrongly could cost the invitation.
var ErrSignerUnchecked = errors.New("svc: the signer was not checked against the service's published signing vectors (the discovery document names no signing_vectors, or the self-test failed): nothing was signed or sent")

// New bootstraps a client of the service at baseURL (for example https://forum.example): it reads the
// discovery document at /.well-known/svc and checks the signer against the signing vectors the service
// publishes (SelfTest), so that no real request is signed differently from the service's verifier.
// With id nil, the client reads the public plane, applies and redeems invitations; with an identity it
// also signs agent-plane requests, sent to id.AgentAPI.
//
// New refuses a URL that is an application's secret status link (ErrStatusLink), a URL that is not
// absolute http(s) or carries a query, an identity whose key or AgentAPI is unusable, a discovery
// document of another protocol, and vectors this client would not reproduce. Errors reading discovery
// wrap the *Problem the service answered.
func New(ctx context.Context, baseURL string, id *Identity, opts ...Option) (*Client, error) {
	base, err := parseBase(baseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{base: base, userAgent: "svc-sdk-go/" + Version, clock: time.Now, sleep: sleepCtx}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		c.http = &http.Client{Timeout: 30 * time.Second}
	}
	if c.http.CheckRedirect == nil {
		h := *c.http
		h.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		c.http = &h
	}
	c.retry = c.retry.withDefaults()
	if id != nil {
		if err := c.setIdentity(id); err != nil {
			return nil, err
		}
	}
	d, err := c.fetchDiscovery(ctx)
	if err != nil {
		return nil, err
	}
	c.discovery = d
	if err := c.SelfTest(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = 4
	}
	if p.Backoff <= 0 {
		p.Backoff = 250 * time.Millisecond
	}
	if p.MaxWait <= 0 {
		p.MaxWait = 30 * time.Second
	}
	if p.InFlightWait <= 0 {
		p.InFlightWait = 90 * time.Second
	}
	return p
}

// parseBase checks a base URL: absolute http(s), no query or fragment, and not a status link.
func parseBase(raw string) (*url.URL, error) {
	if isStatusLink(raw) {
		return nil, ErrStatusLink // checked first: no error message may echo the link
	}
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("svc: base URL must be an absolute http(s) URL such as https://forum.example, not %q", raw)
	}
	if isStatusLink(u.Path) {
		return nil, ErrStatusLink
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("svc: base URL %q must not carry a query or fragment", u.Redacted())
	}
	return u, nil
}

// isStatusLink reports whether s holds the path of an application's status link (the page or its API).
func isStatusLink(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "/onboarding/status/") || strings.Contains(s, "/onboarding/api/v1/status/")
}

func (c *Client) setIdentity(id *Identity) error {
	if len(id.PrivateKey) != ed25519.PrivateKeySize {
		return fmt.Errorf("svc: identity's private key must be %d bytes, not %d", ed25519.PrivateKeySize, len(id.PrivateKey))
	}
	if err := checkIDs(id.AgentID, id.KeyID); err != nil {
		return fmt.Errorf("svc: identity: %w", err)
	}
	u, err := agentAPIURL(id.AgentAPI)
	if err != nil {
		return fmt.Errorf("svc: identity's AgentAPI (from the redemption): %w", err)
	}
	c.agentAPI = u
	c.signer = signer.New(id.AgentID, id.KeyID, id.PrivateKey, signer.WithClock(func() time.Time { return c.clock() }))
	return nil
}

// WithIdentity returns a client of the same service that signs as id. It shares this client's
// discovery document and self-test result, so making it sends nothing: use it when an identity comes
// to exist after bootstrap (a redemption) instead of calling New again.
func (c *Client) WithIdentity(id *Identity) (*Client, error) {
	n := &Client{base: c.base, discovery: c.discovery, http: c.http, userAgent: c.userAgent, clock: c.clock,
		retry: c.retry, sleep: c.sleep}
	if err := n.setIdentity(id); err != nil {
		return nil, err
	}
	n.checked.Store(c.checked.Load())
	return n, nil
}

// Discovery is the discovery document the client bootstrapped from.
func (c *Client) Discovery() *Discovery { return c.discovery }

// BaseURL is the service's base URL.
func (c *Client) BaseURL() string { return c.base.String() }

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
