package sigv1

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/privatekey"
	"github.com/svcforum/svc/contracts/problem"
)

// Enrolment admits new agents by proof of possession of their key (port.Enrolment): the same
// envelope, freshness, key and nonce checks as the guard's, with the key taken from the request
// instead of the registry, and the same operator's switches on writes: an enrolment creates an agent.
type Enrolment struct {
	registry *Registry
	nonces   *Nonces
	switches *Switches
	memory   *Memory // the guard's, where the agent plane is served; nil reads the switches from the database
	clock    port.Clock
}

// NewEnrolment returns the enrolment over the registry and the operator's switches.
func NewEnrolment(registry *Registry, nonces *Nonces, switches *Switches, clock port.Clock) *Enrolment {
	return &Enrolment{registry: registry, nonces: nonces, switches: switches, clock: clock}
}

// Proof reads a new agent's envelope: its headers, the all-zero agent id and the key id "new", and the
// timestamp.
func (e *Enrolment) Proof(_ context.Context, r *http.Request, body []byte) (port.Proof, error) {
	env, err := ParseHeaders(r.Method, r.RequestURI, r.Header)
	if err != nil {
		return nil, err
	}
	if env.AgentID != port.NewAgentID || env.KeyID != port.NewKeyID {
		// The problem names the offending header, never its value (WIRE.md section 1).
		header := HeaderAgentID
		if env.AgentID == port.NewAgentID {
			header = HeaderKeyID
		}
		return nil, problem.Newf(problem.MalformedSignatureHeaders, "A new agent signs its enrolment with %s %s and %s %s: it has no identity yet, only its key.",
			HeaderAgentID, port.NewAgentID, HeaderKeyID, port.NewKeyID).With("header", header)
	}
	env.BodySHA256 = BodySHA256(body)
	now := e.clock.Now()
	if err := env.CheckFreshness(now); err != nil {
		return nil, err
	}
	return &proof{e: e, env: env, at: now}, nil
}

type proof struct {
	e   *Enrolment
	env Envelope
	at  time.Time
}

// Verify checks the key as registration does, the signature under it and the nonce, then whether
// writes may run now. Nonces of new agents share the all-zero agent id: they are random, and a replay
// is refused whoever sends it.
func (p *proof) Verify(ctx context.Context, publicKey string) error {
	if privatekey.Is(publicKey) {
		return problem.New(problem.PrivateKeyRefused, "public_key holds a private key: send the public key only, and keep the private key where it was made").With("pointer", "/public_key")
	}
	pub, err := ParsePublicKey(publicKey)
	if err != nil {
		return err
	}
	if !Verify(pub, p.env) {
		return problem.New(problem.SignatureMismatch, "The signature does not verify under public_key over the canonical string of this request (method, raw target, headers and SHA-256 of the raw body).")
	}
	fresh, err := p.e.nonces.Record(ctx, p.env.AgentID, p.env.Nonce, p.at)
	if err != nil {
		return err
	}
	// An enrolment creates an agent, so it is a signed write: the service-wide freeze (403
	// writes_frozen) and the pause (503 writes_unavailable) stop it as the guard stops every other,
	// after the signature and before a replay, in WIRE.md's order. The nonce is used either way. It
	// has no agent or organisation yet, so only the service-wide switches apply.
	block, err := writeBlock(ctx, p.e.memory, p.e.switches, "", "")
	if err != nil {
		return err
	}
	if block != nil {
		return block
	}
	if !fresh {
		return problem.Newf(problem.NonceReplayed, "This %s was already used; sign every request, retries included, with a new nonce.", HeaderNonce)
	}
	return nil
}

// Enrol registers the agent and its key on tx, in a new organisation unless it joins one.
func (e *Enrolment) Enrol(ctx context.Context, tx *gorm.DB, in port.Enrollee) (port.Principal, error) {
	if privatekey.Is(in.PublicKey) {
		return port.Principal{}, problem.New(problem.PrivateKeyRefused, "this is a private key: register the public key only")
	}
	if _, err := ParsePublicKey(in.PublicKey); err != nil {
		return port.Principal{}, err
	}
	r := &Registry{db: tx, clock: e.clock}
	orgID := in.OrgID
	if orgID == "" {
		o, err := r.CreateOrg(ctx, in.OrgName)
		if err != nil {
			return port.Principal{}, err
		}
		orgID = o.ID
	}
	a, err := r.CreateAgent(ctx, orgID, in.Handle)
	var pr *problem.Problem
	if errors.As(err, &pr) && pr.Code == problem.Conflict {
		return port.Principal{}, problem.Newf(problem.HandleTaken, "The handle %q is now held by another agent.", in.Handle)
	}
	if err != nil {
		return port.Principal{}, err
	}
	k, err := r.AddKey(ctx, a.ID, in.PublicKey)
	if err != nil {
		return port.Principal{}, err
	}
	return port.Principal{AgentID: a.ID, KeyID: k.ID, OrgID: orgID, Handle: a.Handle}, nil
}

// HandleTaken reports whether an agent holds handle.
func (e *Enrolment) HandleTaken(ctx context.Context, handle string) (bool, error) {
	var n int64
	if err := e.registry.db.WithContext(ctx).Model(&Agent{}).Where("handle = ?", handle).Limit(1).Count(&n).Error; err != nil {
		return false, fmt.Errorf("find handle: %w", err)
	}
	return n > 0, nil
}

// limits is the limiter as port.Limits: windows on the service's clock.
type limits struct {
	l     *Limiter
	clock port.Clock
}

// Take counts one hit on bucket now.
func (l limits) Take(ctx context.Context, bucket string, limit int, window time.Duration) (bool, int, error) {
	return l.l.Take(ctx, bucket, limit, window, l.clock.Now())
}

// TakeIn counts one hit on bucket now, as a step of p: on PostgreSQL one statement of its batch,
// which divides by zero past limit; on SQLite take on the plan's transaction. Its explanation, after
// the plan rolled back the hit, refuses while the window is still full; otherwise the write is planned
// again.
func (l limits) TakeIn(p *write.Plan, bucket string, limit int, window time.Duration, refuse func(retryAfter int) error) {
	now := l.clock.Now()
	explain := func(ctx context.Context, db *gorm.DB) error {
		peeks := []peek{{Bucket: bucket, Limit: limit}}
		if err := (&Limiter{db: db}).PeekAll(ctx, peeks, window, now); err != nil {
			return err
		}
		if r := peeks[0].RetryAfter; r > 0 {
			return refuse(r)
		}
		return nil
	}
	if p.Dialect() != "postgres" {
		p.Append(write.Step{SQL: "-- count a rate-limit hit", Rows: write.AnyRows, Explain: explain, Run: func(tx *gorm.DB) (bool, error) {
			ok, _, err := take(tx, bucket, limit, window, now)
			return ok, err
		}})
		return
	}
	p.Append(write.Step{Checked: true, Explain: explain, Vars: []any{bucket, windowStart(now, window), window.Milliseconds(), limit},
		SQL: `WITH c AS (
  INSERT INTO sigv1_rate_windows (bucket, window_ms, hits, span_ms) VALUES ($1, $2, 1, $3)
  ON CONFLICT (bucket) DO UPDATE SET ` + countSet + `
  RETURNING hits
) SELECT 1/(CASE WHEN hits <= $4 THEN 1 ELSE 0 END) FROM c`})
}

var (
	_ port.Enrolment = (*Enrolment)(nil)
	_ port.Limits    = limits{}
)
