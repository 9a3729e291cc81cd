package sigv1

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
)

// ResponseTTL is how long a write's stored response is replayed for its Idempotency-Key (WIRE.md
// section 2).
const ResponseTTL = 24 * time.Hour

// Claims keep the Idempotency-Keys of writes (WIRE.md section 2), scoped per agent. A write first
// claims its key in its own committed statement, so that concurrent requests with the key see the
// claim; the planned write then stores its response on the claim (CompleteIn, database.Write), and the guard
// releases a claim whose write did not commit. A claim's lease frees the key of a crashed process.
type Claims struct {
	db    *gorm.DB
	lease time.Duration
}

// NewClaims returns the claims on db; a running claim is abandoned after lease.
func NewClaims(db *gorm.DB, lease time.Duration) *Claims {
	return &Claims{db: db, lease: lease}
}

// Fingerprint identifies a request for its Idempotency-Key: method, target and body SHA-256.
func Fingerprint(method, target, bodySHA256 string) string {
	sum := sha256.Sum256([]byte(method + "\n" + target + "\n" + bodySHA256))
	return hex.EncodeToString(sum[:])
}

// The outcomes of claiming a key.
type claimOutcome int

const (
	claimed  claimOutcome = iota // the request holds the key and runs
	replay                       // a stored response is returned again
	conflict                     // the key belongs to a different request
	inFlight                     // the key's first request is still running
)

type claimResult struct {
	outcome claimOutcome
	claim   *claim // when claimed
	status  int    // when replay
	body    []byte // when replay
}

// Claim claims key for agentID's request with fingerprint at now: a new key, a running claim whose
// lease has run out, or a stored response older than ResponseTTL is taken; otherwise the existing
// claim decides (replay, conflict, in flight).
func (cs *Claims) Claim(ctx context.Context, agentID, key, fingerprint string, now time.Time) (claimResult, error) {
	return cs.claim(cs.db.WithContext(ctx), agentID, key, fingerprint, now, uuid.NewString())
}

// claimSet is the claim's takeover of an existing row: only a running claim whose lease ended, or a
// stored response past ResponseTTL, is taken over. Its parameters are named: claim_expired (now) and
// claim_stale (now less ResponseTTL), in milliseconds.
const claimSet = `fingerprint = excluded.fingerprint, token = excluded.token,
  state = excluded.state, lease_ms = excluded.lease_ms, created_ms = excluded.created_ms, status = 0, body = NULL
  WHERE (sigv1_idempotency.state = 'running' AND sigv1_idempotency.lease_ms <= @claim_expired)
     OR (sigv1_idempotency.state = 'done' AND sigv1_idempotency.created_ms <= @claim_stale)`

// claim is Claim on db, which may be a transaction, holding the claim with token.
func (cs *Claims) claim(db *gorm.DB, agentID, key, fingerprint string, now time.Time, token string) (claimResult, error) {
	nowMS := now.UnixMilli()
	// The row can vanish between a refused claim and its read (its request failed and released it):
	// then claim again.
	for range 3 {
		res := db.Exec(`INSERT INTO sigv1_idempotency (agent_id, idem_key, fingerprint, token, state, lease_ms, created_ms, status, body)
VALUES (@agent, @key, @print, @token, 'running', @lease_ms, @now, 0, NULL)
ON CONFLICT (agent_id, idem_key) DO UPDATE SET `+claimSet, map[string]any{
			"agent": agentID, "key": key, "print": fingerprint, "token": token, "lease_ms": nowMS + cs.lease.Milliseconds(),
			"now": nowMS, "claim_expired": nowMS, "claim_stale": nowMS - ResponseTTL.Milliseconds()})
		if res.Error != nil {
			return claimResult{}, fmt.Errorf("claim idempotency key: %w", res.Error)
		}
		if res.RowsAffected == 1 {
			return claimResult{outcome: claimed, claim: &claim{db: cs.db, agentID: agentID, key: key, token: token}}, nil
		}
		var rows []idempotency
		if err := db.Where("agent_id = ? AND idem_key = ?", agentID, key).Limit(1).Find(&rows).Error; err != nil {
			return claimResult{}, fmt.Errorf("read idempotency key: %w", err)
		}
		if len(rows) == 0 {
			continue
		}
		return decide(rows[0], fingerprint), nil
	}
	return claimResult{}, errors.New("claim idempotency key: the key changed hands three times; retry")
}

// decide is the outcome of a claim refused because row holds the key.
func decide(row idempotency, fingerprint string) claimResult {
	switch {
	case row.Fingerprint != fingerprint:
		return claimResult{outcome: conflict}
	case row.State == claimDone:
		return claimResult{outcome: replay, status: row.Status, body: row.Body}
	default:
		return claimResult{outcome: inFlight}
	}
}

// Prune deletes stored responses older than ResponseTTL and claims abandoned longer than that.
func (cs *Claims) Prune(ctx context.Context, now time.Time) (int64, error) {
	cut := now.Add(-ResponseTTL).UnixMilli()
	res := cs.db.WithContext(ctx).Where("created_ms <= ? AND (state = ? OR lease_ms <= ?)", cut, claimDone, cut).Delete(&idempotency{})
	if res.Error != nil {
		return 0, fmt.Errorf("prune idempotency keys: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// claim is a key held by one request (its token).
type claim struct {
	db      *gorm.DB
	agentID string
	key     string
	token   string
	settled bool // the write that completed it committed
}

// errClaimLost means the claim was taken over (its lease ran out) before the write committed: the
// write must roll back, since another request now runs under the key. It is the problem the client
// gets: the request that took the key over is the one in flight.
var errClaimLost = problem.New(problem.IdempotencyRequestInFlight,
	"This request outlived its hold on the Idempotency-Key, and a retry with the key now runs; nothing of this request was kept. Retry after a second to get that retry's response.").
	With("retry_after_seconds", 1)

// held narrows q to the claim's row while this request still holds it.
func (c *claim) held(q *gorm.DB) *gorm.DB {
	return q.Where("agent_id = ? AND idem_key = ? AND token = ? AND state = ?", c.agentID, c.key, c.token, claimRunning)
}

// CompleteIn stores the response on the claim in a planned write (the body with its Late numbers resolved);
// a claim that is no longer this request's fails the plan with errClaimLost.
func (c *claim) CompleteIn(p *write.Plan, status int, body []byte) {
	p.Exec(1, func(context.Context, *gorm.DB) error { return errClaimLost },
		`UPDATE "sigv1_idempotency" SET state = ?, status = ?, body = ? WHERE agent_id = ? AND idem_key = ? AND token = ? AND state = ?`,
		claimDone, status, p.Bytes(body), c.agentID, c.key, c.token, claimRunning)
}

// Settled records that the transaction that completed the claim committed.
func (c *claim) Settled() { c.settled = true }

// release frees the key unless the write stored its response (committed), and reports whether it did;
// it is safe to call always.
func (c *claim) release(ctx context.Context) (released bool, err error) {
	res := c.held(c.db.WithContext(ctx)).Delete(&idempotency{})
	if res.Error != nil {
		return false, fmt.Errorf("release idempotency key: %w", res.Error)
	}
	return res.RowsAffected > 0, nil
}

var _ port.Claim = (*claim)(nil)
