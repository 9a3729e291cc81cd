package sigv1

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/database"
)

// deferred is a write's admission left to the write (port.Admission): the first step of its
// planned write, so that the nonce, the limits, the claim, the write and its stored response
// commit together (on PostgreSQL in one round trip; on SQLite in one turn of its one writer). The
// claim's token is chosen before, so that the write can complete the claim in the same batch. When
// the plan fails, or the route never writes, the admission runs on its own, as it would have before
// the route (Guard.leave keeps the route's answer back until then).
type deferred struct {
	g     *Guard
	a     admission
	cl    *claim // the claim the admission takes (its token chosen ahead), or took on its own
	state deferredState
	adm   admitted // the admission's counts, once it ran
	ans   *answer  // once refused
	// The two windows as the plan's admission step left them: counted by its statements on SQLite;
	// on PostgreSQL scanned from its statement as hits and start, attempts then writes (window).
	counts  [2]counted
	scanned [4]*int64
}

type deferredState int

const (
	pending   deferredState = iota // not run
	uncertain                      // a plan holding it ended with an error: it may have committed
	passed                         // admitted, with its plan or on its own
	refused                        // refused on its own (ans)
)

var (
	_ port.Admission = (*deferred)(nil)
	_ port.Claim     = (*deferred)(nil)
)

// AdmitIn puts the admission first in p (admitInSQL) while it has not run.
func (d *deferred) AdmitIn(p *write.Plan) bool {
	if d.state != pending {
		return false
	}
	d.state = uncertain
	step := write.Step{Explain: func(ctx context.Context, _ *gorm.DB) error { return d.Admit(ctx) }}
	if p.Dialect() == database.Postgres {
		step.SQL, step.Vars, step.Checked = admitIn.sql, admitIn.vars(d.g.admission.params(d.a, d.cl.token)), true
		step.Scan = []any{&d.scanned[0], &d.scanned[1], &d.scanned[2], &d.scanned[3]}
	} else {
		// SQLite runs the admission's statements one by one in the write's transaction: one turn
		// of its one writer for the whole request.
		step.Run = func(tx *gorm.DB) (bool, error) {
			adm, err := d.g.admission.admitSteps(tx, d.a, d.cl.token)
			if err != nil {
				return false, err
			}
			d.counts = [2]counted{adm.attempts, adm.writes}
			// Admitted only with the key claimed by this request (its claim, not a zero outcome).
			return adm.fresh && adm.attemptsRetry == 0 && adm.writesRetry == 0 && adm.claim.outcome == claimed && adm.claim.claim != nil, nil
		}
	}
	p.Prepend(step)
	p.OnCommit(func() {
		d.g.metrics.admissions.WithLabelValues(admittedWithWrite).Inc()
		d.state = passed
		if step.Run == nil {
			d.counts = [2]counted{d.window(d.scanned[0], d.scanned[1]), d.window(d.scanned[2], d.scanned[3])}
		}
		d.adm = admitted{fresh: true, attempts: d.counts[0], writes: d.counts[1], claim: claimResult{outcome: claimed, claim: d.cl}}
	})
	return true
}

// window is a rate window as the admission's statement returns it: its hits and its start.
func (d *deferred) window(hits, start *int64) counted {
	if hits == nil || start == nil {
		return counted{}
	}
	return counted{hits: *hits, endMS: *start + d.a.window.Milliseconds()}
}

// Admit runs the admission on its own (Admission.Admit and Guard.verdict), once.
func (d *deferred) Admit(ctx context.Context) error {
	switch d.state {
	case passed:
		return nil
	case refused:
		return d.ans
	}
	adm, err := d.g.admit(ctx, d.a)
	if err != nil {
		d.state = uncertain
		return err
	}
	d.adm = adm
	res, ans, err := d.g.verdict(ctx, d.a, adm)
	switch {
	case err != nil:
		d.state = uncertain
		return err
	case ans != nil:
		d.state, d.ans = refused, ans
		if adm.attemptsRetry == 0 && adm.writesRetry == 0 {
			// A replay or a key's refusal did the route's work for nothing: the agent's next writes
			// take their admission first for a while (a limit's refusal set its own window's end).
			d.g.throttle(d.a.agentID, d.a.at.Add(d.g.cfg.RateWindow).UnixMilli())
		}
		return ans
	}
	d.state, d.cl = passed, res.claim
	return nil
}

// The claim (port.Claim) is the one the admission takes.
func (d *deferred) CompleteIn(p *write.Plan, status int, body []byte) {
	d.cl.CompleteIn(p, status, body)
}
func (d *deferred) Settled() { d.cl.Settled() }

// leave hands a planned write on with its admission left to the write, and keeps the route's answer
// back until the admission has decided: a request it refuses gets the guard's answer, whatever the
// route wrote, as if the admission had run first.
func (g *Guard) leave(c *gin.Context, span trace.Span, ctx context.Context, a admission, route plugin.AgentRoute, now time.Time) {
	d := &deferred{g: g, a: a, cl: &claim{db: g.claims.db, agentID: a.agentID, key: a.key, token: uuid.NewString()}}
	held := holdAnswer(c)
	ctx = port.WithAdmission(port.WithClaim(handOn(c, span, ctx), d), d)
	returned := false
	defer func() {
		if !returned {
			// The route panicked: the host's recovery answers on the real writer, the claim is
			// freed, and a request that never reached its admission has used its nonce all the same.
			held.drop()
			g.afterward(ctx, d)
		}
	}()
	c.Request = c.Request.WithContext(ctx)
	c.Next()
	returned = true
	if d.state == pending {
		// The route answered without writing (it refused the request first): the admission runs
		// now, even if the client left meanwhile, and its refusals come before the route's.
		if err := d.Admit(context.WithoutCancel(ctx)); err != nil && d.state != refused {
			held.drop()
			g.unavailable(c, err)
			answered(c)
			g.burn(ctx, a)
			return
		}
	}
	switch d.state {
	case refused:
		held.drop()
		if d.adm.fresh {
			g.announceLimits(c, true, route.Uncounted, d.adm, now)
		}
		d.ans.write(c)
	case uncertain:
		// The write failed with an error and may have committed: its bytes must not run again. The
		// client has its answer first.
		held.flush()
		answered(c)
		g.afterward(ctx, d)
	default:
		g.announceLimits(c, true, route.Uncounted, d.adm, now)
		held.flush()
		g.release(c, ctx, d.cl)
	}
}

// afterward admits on its own a request whose route ended before its admission decided (it
// panicked, or its batch failed with an error and may have committed), so that its nonce is used and
// the limits count it as if the admission had run first; a claim it takes is freed. The route's
// answer stands whatever the admission says: if the batch committed, the admission finds its own nonce.
func (g *Guard) afterward(ctx context.Context, d *deferred) {
	ctx = database.Afterwards(ctx)
	if err := d.Admit(ctx); err != nil {
		var ans *answer
		if !errors.As(err, &ans) {
			g.burn(ctx, d.a)
		}
		return
	}
	if _, err := d.cl.release(ctx); err != nil {
		g.log.WarnContext(ctx, "idempotency key not released; it frees itself when its lease ends", "error", err)
	}
}

// burn records the nonce of a request whose admission did not run to the end. Failures are only
// logged: the request is answered either way.
func (g *Guard) burn(ctx context.Context, a admission) {
	if _, err := g.nonces.Record(database.Afterwards(ctx), a.agentID, a.nonce, a.at); err != nil {
		g.log.WarnContext(ctx, "nonce of a write whose admission did not finish not recorded", "error", err)
	}
}

// leavesAdmission reports whether agentID's planned write may take its admission with it: unless the
// admission refused one of the agent's writes lately (throttle). Such a write would do its work for
// nothing (its schema, its Markdown, its reads) before the admission refused it; taking the admission
// first keeps a refused write as cheap as its admission.
func (g *Guard) leavesAdmission(agentID string, now time.Time) bool {
	if until, ok := g.throttled.agents.Load(agentID); ok {
		if now.UnixMilli() < until.(int64) {
			return false
		}
		g.throttled.agents.CompareAndDelete(agentID, until)
	}
	return true
}

// throttle records that agentID's writes take their admission first until endMS. Every so often the
// entries that ended are dropped, so the set holds only agents refused lately.
func (g *Guard) throttle(agentID string, endMS int64) {
	g.throttled.agents.Store(agentID, endMS)
	if g.throttled.stored.Add(1)%256 != 0 {
		return
	}
	now := g.clock.Now().UnixMilli()
	g.throttled.agents.Range(func(k, v any) bool {
		if v.(int64) <= now {
			g.throttled.agents.CompareAndDelete(k, v)
		}
		return true
	})
}

// throttledAgents is the set Guard.throttle keeps (agent ID to the time its writes may take their
// admission with them again, in Unix milliseconds): a hint for this process only, never a decision.
type throttledAgents struct {
	agents sync.Map
	stored atomic.Int64
}
