package sdk

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/svcforum/svc/sdk/envelope"
	"github.com/svcforum/svc/sdk/signer"
)

// maxAnswer bounds how much of a JSON answer the client reads (the largest page is far smaller).
const maxAnswer = 8 << 20

// maxImageAnswer bounds an image variant's bytes (a 1600-pixel PNG stays well below it).
const maxImageAnswer = 64 << 20

// CallOption configures one call.
type CallOption func(*callOptions)

type callOptions struct {
	idemKey string
	info    *ResponseInfo
}

// WithIdempotencyKey sends a signed POST or PUT with the caller's Idempotency-Key instead of a new
// random one: the way to make a write safe across restarts of the caller (keep the key with the work
// it belongs to, and send the same request again with it after a crash). The key is 1..255 printable
// ASCII characters (0x21..0x7E); one key is one logical operation: reusing it for another request is
// 409 idempotency_key_conflict. Ignored on GETs, which never carry a key, and on unsigned calls.
func WithIdempotencyKey(key string) CallOption { return func(o *callOptions) { o.idemKey = key } }

// WithResponseInfo fills info with what the last answer said beyond its body (status, headers,
// whether it was an idempotent replay, how many times the request was sent). It is filled on success
// and on failure.
func WithResponseInfo(info *ResponseInfo) CallOption { return func(o *callOptions) { o.info = info } }

// ResponseInfo is what an answer said beyond its body.
type ResponseInfo struct {
	// Status is the HTTP status of the last answer (0 when no answer arrived).
	Status int
	// Replayed: the service answered a repeated Idempotency-Key with the stored outcome
	// (Idempotent-Replayed: true); the write ran once, earlier, and was charged once.
	Replayed bool
	// IdempotencyKey is the key the request was sent with ("" on GETs and unsigned calls).
	IdempotencyKey string
	// Attempts is how many times the request was sent, retries included.
	Attempts int
	// Header holds the last answer's headers (nil when no answer arrived).
	Header http.Header
}

// request is one call: where, what, and how it is signed and retried.
type request struct {
	method      string
	url         string
	body        []byte
	contentType string
	sign        *signer.Signer // nil: unsigned
	accept      string
	// unsafe marks an unsigned POST the service does not deduplicate (an application): it is sent
	// again only after an answer saying that nothing was done (429, 503), never after a lost answer.
	unsafe bool
	// noRetry sends the request once whatever the answer (a readiness probe reports the first answer).
	noRetry bool
	// limit bounds the answer's size (default maxAnswer).
	limit int64
}

// rawAnswer receives a 2xx answer's bytes instead of decoded JSON.
type rawAnswer struct {
	body        []byte
	contentType string
}

// newIdempotencyKey is a random key: 16 bytes from crypto/rand in hex.
func newIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return fmt.Sprintf("%x", b)
}

// do sends r, repeating it while that is safe and useful, and decodes a 2xx answer into out (when not
// nil). The rules, which README.md states for callers:
//
//   - A signed POST or PUT carries an Idempotency-Key (the caller's, or a new random one), the same on
//     every attempt; each attempt is signed afresh (new timestamp, new nonce). GETs carry none.
//   - Sent again: a transport error (no answer, so the outcome is unknown), 408, 429, 500, 502, 503,
//     504 and 409 nonce_replayed, after the answer's Retry-After (whole seconds or an HTTP date; else retry_after_seconds;
//     else an exponential backoff with jitter), at most RetryPolicy.Attempts sends in all. An answer
//     asking to wait longer than RetryPolicy.MaxWait is returned as its Problem at once.
//   - 409 idempotency_request_in_flight (the first request with this key is still running) is waited
//     out: sent again after its Retry-After (1 s when absent), for at most RetryPolicy.InFlightWait in
//     all; these sends do not count against Attempts.
//   - Every other answer (400, 401, 403, 404, 409, 413, 415, 422, ...) is returned at once as a
//     *Problem.
func (c *Client) do(ctx context.Context, r request, out any, opts ...CallOption) error {
	var o callOptions
	for _, f := range opts {
		f(&o)
	}
	if r.sign != nil && !c.checked.Load() {
		return r.failed(ErrSignerUnchecked)
	}
	key := ""
	if r.sign != nil && envelope.IdempotencyKeyRule(r.method) == envelope.Required {
		key = o.idemKey
		if key == "" {
			key = newIdempotencyKey()
		}
		if !envelope.ValidIdempotencyKey(key) {
			return errors.New("svc: an idempotency key is 1 to 255 printable ASCII characters (0x21 to 0x7E)")
		}
	}
	var (
		lastErr  error
		failures int           // failed sends that count against Attempts
		inFlight time.Duration // waited so far for a request in flight
	)
	for sends := 1; ; sends++ {
		res, body, err := c.once(ctx, r, key)
		if o.info != nil {
			*o.info = ResponseInfo{IdempotencyKey: key, Attempts: sends}
			if res != nil {
				o.info.Status, o.info.Header = res.StatusCode, res.Header
				o.info.Replayed = res.Header.Get("Idempotent-Replayed") == "true"
			}
		}
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return r.failed(ctx.Err())
			}
			if r.unsafe || r.noRetry || errors.As(err, new(unsent)) {
				return err
			}
			failures++
			lastErr, wait = err, c.backoff(failures)
		case res.StatusCode >= 200 && res.StatusCode < 300:
			return decodeAnswer(r, res, body, out)
		default:
			p := parseProblem(res, body)
			after := retryAfter(res, p, c.clock())
			if res.StatusCode == http.StatusConflict && p.Code == CodeIdempotencyRequestInFlight && !r.noRetry {
				if after <= 0 {
					after = time.Second
				}
				if inFlight+after > c.retry.InFlightWait {
					return p
				}
				inFlight += after
				if err := c.sleep(ctx, after); err != nil {
					return r.failed(err)
				}
				continue
			}
			if r.noRetry || !retryable(res.StatusCode, p.Code, r.unsafe) {
				return p
			}
			failures++
			lastErr, wait = p, after
			if wait <= 0 {
				wait = c.backoff(failures)
			}
			if wait > c.retry.MaxWait {
				return p
			}
		}
		if failures >= c.retry.Attempts {
			return lastErr
		}
		if err := c.sleep(ctx, wait); err != nil {
			return r.failed(err)
		}
	}
}

// retryable says whether an answer may be sent again with the same Idempotency-Key and a fresh
// signature. Each of these committed nothing (408, 429, 503: the service says so) or has an outcome the
// service stores under the key (5xx of a signed write): a repeated key never runs a write twice (WIRE.md
// section 2). 409 nonce_replayed is one too: this client never reuses a nonce, so the answer means that a
// copy of this very attempt reached the service first (net/http resends a request carrying an
// Idempotency-Key, byte for byte, when a reused connection drops it), and that copy's outcome is unknown.
// An unsafe request is repeated only after 429 and 503.
func retryable(status int, code string, unsafe bool) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return true
	case http.StatusRequestTimeout, http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
		return !unsafe
	case http.StatusConflict:
		return code == CodeNonceReplayed && !unsafe
	}
	return false
}

// decodeAnswer decodes a 2xx answer into out: bytes into a *rawAnswer, JSON into anything else. Members
// the SDK does not know are ignored (clients must tolerate additive changes).
func decodeAnswer(r request, res *http.Response, body []byte, out any) error {
	switch out := out.(type) {
	case nil:
		return nil
	case *rawAnswer:
		out.body, out.contentType = body, res.Header.Get("Content-Type")
		return nil
	}
	if len(body) == 0 {
		return r.failed(fmt.Errorf("answered %d without a body", res.StatusCode))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return r.failed(fmt.Errorf("the answer is not the documented JSON: %w", err))
	}
	return nil
}

// backoff is the wait before the send after failure n when the service named none:
// Backoff·2^(n-1), between half and one and a half times that.
func (c *Client) backoff(n int) time.Duration {
	d := c.retry.Backoff << min(n-1, 16)
	return d/2 + time.Duration(mrand.Int64N(int64(d)))
}

// once sends r one time, signed afresh (new timestamp and nonce), and reads the answer.
func (c *Client) once(ctx context.Context, r request, key string) (*http.Response, []byte, error) {
	var rd io.Reader
	if r.body != nil {
		rd = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, rd)
	if err != nil {
		return nil, nil, r.failed(unsent{err})
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	accept := r.accept
	if accept == "" {
		accept = "application/json"
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", c.userAgent)
	if key != "" {
		req.Header.Set(envelope.HeaderIdempotencyKey, key)
	}
	if r.sign != nil {
		if err := r.sign.Sign(req); err != nil {
			return nil, nil, r.failed(unsent{fmt.Errorf("signing: %w", err)})
		}
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, nil, r.failed(err)
	}
	defer res.Body.Close()
	limit := r.limit
	if limit <= 0 {
		limit = maxAnswer
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return nil, nil, r.failed(fmt.Errorf("reading the answer: %w", err))
	}
	if int64(len(body)) > limit {
		return nil, nil, r.failed(fmt.Errorf("the answer is larger than %d bytes", limit))
	}
	return res, body, nil
}

// retryAfter is the wait an answer asks for: its Retry-After header (whole seconds, or an HTTP date),
// else the problem's retry_after_seconds, else 0.
func retryAfter(res *http.Response, p *Problem, now time.Time) time.Duration {
	if h := strings.TrimSpace(res.Header.Get("Retry-After")); h != "" {
		if s, err := strconv.ParseInt(h, 10, 64); err == nil && s >= 0 {
			return time.Duration(min(s, 1<<30)) * time.Second
		}
		if t, err := http.ParseTime(h); err == nil {
			return max(t.Sub(now), 0)
		}
	}
	if p != nil && p.RetryAfterSeconds > 0 {
		return time.Duration(p.RetryAfterSeconds) * time.Second
	}
	return 0
}

// redact drops a URL's query, which may hold a cursor or search terms, and the password of its user
// information from error messages.
func redact(raw string) string {
	if i := strings.IndexByte(raw, '?'); i >= 0 {
		raw = raw[:i]
	}
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	return raw
}

// requestError is a request that got no usable answer: none at all (the network, a timeout, a
// cancelled context), one that could not be read or decoded, or one that was never sent. Its message
// is one line that names the request once, "svc: GET https://forum.example/...: <cause>", or, with a
// step, what the client was doing: "svc: reading the discovery document at https://...: <cause>". It
// wraps the cause (errors.Is and errors.As find a *url.Error, a net.Error, context.Canceled, a
// *Problem).
type requestError struct {
	step   string // what the client was doing ("reading the discovery document"), or ""
	method string
	url    string // redacted
	err    error
}

func (e *requestError) Error() string {
	cause := e.err
	if ue, ok := cause.(*url.Error); ok {
		cause = ue.Err // its text repeats the method and the URL
	}
	msg := strings.TrimPrefix(cause.Error(), "svc: ")
	if e.step != "" {
		return "svc: " + e.step + " at " + e.url + ": " + msg
	}
	return "svc: " + e.method + " " + e.url + ": " + msg
}

func (e *requestError) Unwrap() error { return e.err }

// failed is err, the cause of r's failure, as the error of r.
// unsent is a failure before the request left (building or signing it): nothing reached the service,
// and sending again would fail the same way, so it is not retried.
type unsent struct{ error }

func (u unsent) Unwrap() error { return u.error }

func (r request) failed(err error) error {
	return &requestError{method: r.method, url: redact(r.url), err: err}
}

// inStep says what the client was doing when err, the failure of a request to u, happened, in one line
// that names u once; the error wraps what err wrapped (a *Problem the service answered, a net error).
func inStep(step, method, u string, err error) error {
	if re, ok := err.(*requestError); ok {
		named := *re
		named.step = step
		return &named
	}
	return &requestError{step: step, method: method, url: redact(u), err: err}
}
