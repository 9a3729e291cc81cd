package sigv1

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"

	"github.com/svcforum/svc/database"
)

// admission is what the guard records once a request's signature verifies: its nonce, and, when the
// states allow the request (proceed), its hits on the rate limits and, for a write, its claim on the
// Idempotency-Key. Each step runs only when the one before it let the request through, as the checks
// of WIRE.md section 1 run in order.
type admission struct {
	agentID   string
	nonce     string
	at        time.Time
	proceed   bool   // the agent's and key's states and the write switches let the request run
	attempts  string // the attempts bucket, "" when the route is not counted
	writes    string // the writes bucket, "" for a read
	key       string // the Idempotency-Key of a write
	print     string // its fingerprint
	window    time.Duration
	maxTries  int
	maxWrites int
}

// admitted is the outcome of an admission.
type admitted struct {
	fresh          bool
	attemptsRetry  int     // > 0: the attempts limit refused the request, retry after so many seconds
	writesRetry    int     // > 0: the writes limit refused it
	attempts       counted // the attempts window as this request's hit left it (zero: not counted)
	writes         counted // the writes window, likewise
	claim          claimResult
	claimUndecided bool // the claim lost a race the statement could not settle: claim again
}

// Admission records admissions in one round trip: on PostgreSQL one statement whose data-modifying
// CTEs run the steps in order, each gated on the one before; on SQLite, which has no such CTEs and no
// network between it and the process, the same steps in one transaction, so one commit.
type Admission struct {
	db     *gorm.DB
	claims *Claims
}

// Admit records a.
func (ad *Admission) Admit(ctx context.Context, a admission) (admitted, error) {
	if database.Dialect(ad.db) == database.Postgres {
		return ad.admitPostgres(ctx, a)
	}
	var out admitted
	err := ad.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		out, err = ad.admitSteps(tx, a, uuid.NewString())
		return err
	})
	return out, err
}

// admitSteps runs the steps one statement each, on tx, claiming with token.
func (ad *Admission) admitSteps(tx *gorm.DB, a admission, token string) (admitted, error) {
	var out admitted
	var err error
	if out.fresh, err = recordNonce(tx, a.agentID, a.nonce, a.at); err != nil || !out.fresh || !a.proceed {
		return out, err
	}
	if a.attempts != "" {
		if out.attempts, err = count(tx, a.attempts, a.window, a.at); err != nil {
			return out, err
		}
		if out.attempts.hits > int64(a.maxTries) {
			out.attemptsRetry = retryAfterSeconds(out.attempts.endMS, a.at)
			return out, nil
		}
	}
	if a.writes == "" {
		return out, nil
	}
	if out.writes, err = count(tx, a.writes, a.window, a.at); err != nil {
		return out, err
	}
	if out.writes.hits > int64(a.maxWrites) {
		out.writesRetry = retryAfterSeconds(out.writes.endMS, a.at)
		return out, nil
	}
	out.claim, err = ad.claims.claim(tx, a.agentID, a.key, a.print, a.at, token)
	return out, err
}

// admitSQL is the admission as one PostgreSQL statement. Its CTEs all run, on one snapshot; each
// writes only when the ones before it let the request through (n: the nonce was fresh; a, w: the
// limits were not passed). The claim's existing row (e) is read from the statement's snapshot: when the
// claim was refused and the row is not there, a concurrent request committed it after the snapshot
// began, and the caller claims again on its own.
const admitSQL = admitCTEs + `
SELECT EXISTS (SELECT 1 FROM n) AS fresh,
  (SELECT hits FROM a) AS attempt_hits, (SELECT window_ms FROM a) AS attempt_window,
  (SELECT hits FROM w) AS write_hits, (SELECT window_ms FROM w) AS write_window,
  EXISTS (SELECT 1 FROM c) AS claimed,
  e.fingerprint, e.state, e.status, e.body
FROM (SELECT 1) AS one
LEFT JOIN sigv1_idempotency AS e ON @writes <> '' AND e.agent_id = @agent AND e.idem_key = @key`

// admitInSQL is the admission of a write as the first statement of the write's own batch (a
// write.Step that checks itself): it returns the two windows' counts, and divides by zero, failing the
// batch, unless every step let the request through and the key was claimed (c inserts only then).
const admitInSQL = admitCTEs + `
SELECT (SELECT hits FROM a), (SELECT window_ms FROM a), (SELECT hits FROM w), (SELECT window_ms FROM w),
  1/(CASE WHEN EXISTS (SELECT 1 FROM c) THEN 1 ELSE 0 END)`

// admitIn is admitInSQL with positional parameters, rewritten once by pgx's named arguments: a write
// adds it to its batch as it is (deferred.AdmitIn), with its values in the order of names.
var admitIn = positional(admitInSQL)

type positionalSQL struct {
	sql   string
	names []string
}

func positional(sql string) positionalSQL {
	named := pgx.StrictNamedArgs{}
	for name := range (&Admission{claims: &Claims{}}).params(admission{window: time.Second}, "") {
		named[name] = name
	}
	// Strict: a name the statement uses that params lacks, or one it does not use, fails here.
	out, names, err := named.RewriteQuery(context.Background(), nil, sql, nil)
	if err != nil {
		panic(fmt.Sprintf("sigv1: rewrite the admission's statement: %v", err))
	}
	p := positionalSQL{sql: out}
	for _, n := range names {
		p.names = append(p.names, n.(string))
	}
	return p
}

// vars are the statement's values from params, in order.
func (p positionalSQL) vars(params map[string]any) []any {
	vars := make([]any, len(p.names))
	for i, n := range p.names {
		vars[i] = params[n]
	}
	return vars
}

// admitCTEs are the admission's steps, as data-modifying CTEs.
const admitCTEs = `WITH n AS (
  INSERT INTO sigv1_nonces (agent_id, nonce, seen_ms) VALUES (@agent, @nonce, @now)
  ON CONFLICT (agent_id, nonce) DO UPDATE SET seen_ms = excluded.seen_ms
  WHERE sigv1_nonces.seen_ms <= @nonce_cut
  RETURNING 1 AS fresh
), a AS (
  INSERT INTO sigv1_rate_windows (bucket, window_ms, hits, span_ms)
  SELECT CAST(@attempts AS text), CAST(@window_ms AS bigint), 1, CAST(@span_ms AS bigint) FROM n
  WHERE CAST(@proceed AS boolean) AND @attempts <> ''
  ON CONFLICT (bucket) DO UPDATE SET ` + countSet + `
  RETURNING window_ms, hits
), w AS (
  INSERT INTO sigv1_rate_windows (bucket, window_ms, hits, span_ms)
  SELECT CAST(@writes AS text), CAST(@window_ms AS bigint), 1, CAST(@span_ms AS bigint) FROM n
  WHERE CAST(@proceed AS boolean) AND @writes <> '' AND NOT EXISTS (SELECT 1 FROM a WHERE a.hits > @max_tries)
  ON CONFLICT (bucket) DO UPDATE SET ` + countSet + `
  RETURNING window_ms, hits
), c AS (
  INSERT INTO sigv1_idempotency (agent_id, idem_key, fingerprint, token, state, lease_ms, created_ms, status, body)
  SELECT CAST(@agent AS text), CAST(@key AS text), CAST(@print AS text), CAST(@token AS text), 'running',
    CAST(@lease_ms AS bigint), CAST(@now AS bigint), 0, CAST(NULL AS bytea) FROM w WHERE w.hits <= @max_writes
  ON CONFLICT (agent_id, idem_key) DO UPDATE SET ` + claimSet + `
  RETURNING 1 AS claimed
)`

// params are the named parameters of admitCTEs for a, claiming with token.
func (ad *Admission) params(a admission, token string) map[string]any {
	nowMS := a.at.UnixMilli()
	return map[string]any{
		"agent": a.agentID, "nonce": a.nonce, "now": nowMS, "nonce_cut": nowMS - NonceWindow.Milliseconds(),
		"proceed": a.proceed, "attempts": a.attempts, "writes": a.writes,
		"window_ms": windowStart(a.at, a.window), "span_ms": a.window.Milliseconds(),
		"max_tries": a.maxTries, "max_writes": a.maxWrites,
		"key": a.key, "print": a.print, "token": token, "lease_ms": nowMS + ad.claims.lease.Milliseconds(),
		"claim_expired": nowMS, "claim_stale": nowMS - ResponseTTL.Milliseconds(),
	}
}

func (ad *Admission) admitPostgres(ctx context.Context, a admission) (admitted, error) {
	token := uuid.NewString()
	var row struct {
		Fresh         bool
		AttemptHits   *int64
		AttemptWindow *int64
		WriteHits     *int64
		WriteWindow   *int64
		Claimed       bool
		Fingerprint   *string
		State         *string
		Status        *int
		Body          []byte
	}
	// Row, not Scan: gorm's Scan renders every statement with its values for its logger (a regexp
	// over all of them), which cost as much CPU as the signature's verification.
	err := ad.db.WithContext(ctx).Raw(admitSQL, ad.params(a, token)).Row().Scan(&row.Fresh, &row.AttemptHits, &row.AttemptWindow, &row.WriteHits, &row.WriteWindow, &row.Claimed,
		&row.Fingerprint, &row.State, &row.Status, &row.Body)
	if err != nil {
		return admitted{}, fmt.Errorf("admit request: %w", err)
	}
	out := admitted{fresh: row.Fresh}
	end := func(window *int64) int { return retryAfterSeconds(*window+a.window.Milliseconds(), a.at) }
	if row.AttemptHits != nil && row.AttemptWindow != nil {
		out.attempts = counted{hits: *row.AttemptHits, endMS: *row.AttemptWindow + a.window.Milliseconds()}
	}
	if row.WriteHits != nil && row.WriteWindow != nil {
		out.writes = counted{hits: *row.WriteHits, endMS: *row.WriteWindow + a.window.Milliseconds()}
	}
	switch {
	case !out.fresh || !a.proceed:
		return out, nil
	case row.AttemptHits != nil && *row.AttemptHits > int64(a.maxTries):
		out.attemptsRetry = end(row.AttemptWindow)
		return out, nil
	case a.writes == "":
		return out, nil
	case row.WriteHits == nil:
		return out, fmt.Errorf("admit request: the writes limit was not counted")
	case *row.WriteHits > int64(a.maxWrites):
		out.writesRetry = end(row.WriteWindow)
		return out, nil
	case row.Claimed:
		out.claim = claimResult{outcome: claimed, claim: &claim{db: ad.db, agentID: a.agentID, key: a.key, token: token}}
		return out, nil
	case row.Fingerprint == nil:
		out.claimUndecided = true
		return out, nil
	}
	out.claim = decide(idempotency{Fingerprint: *row.Fingerprint, State: *row.State, Status: *row.Status, Body: row.Body}, a.print)
	return out, nil
}
