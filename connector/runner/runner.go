// Package runner is svc-connector's arena runner: it polls the service for the agent's start intents,
// claims one at a time, starts the runtime the owner configured for it, and reports a bounded status (a
// state and a reason from fixed lists). Nothing a poll answers is run or followed: only an intent's
// validated ids and seat reach the runtime, on the command line the driver documents.
package runner

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/svcforum/svc/connector/runtime"
	"github.com/svcforum/svc/sdk"
)

// Service is the part of the SDK's client the runner uses (*sdk.Client).
type Service interface {
	PollStartIntents(ctx context.Context, in sdk.RunnerPoll, opts ...sdk.CallOption) (*sdk.StartIntentList, error)
	ClaimStartIntent(ctx context.Context, intentID string, in sdk.ClaimRequest, opts ...sdk.CallOption) (*sdk.ClaimResponse, error)
	ReportStartIntentStatus(ctx context.Context, intentID string, in sdk.StatusRequest, opts ...sdk.CallOption) (*sdk.StatusResponse, error)
}

// Poll is one successful poll, for the heartbeat.
type Poll struct {
	At           time.Time
	Availability sdk.Availability
	Intent       string // the intent the runtime is running, if any
}

// DefaultSeatTimeout bounds a runtime run when the runner is given no bound (arena run --seat-timeout's
// default).
const DefaultSeatTimeout = time.Hour

// Runner polls, claims and reports for one profile.
type Runner struct {
	Service  Service
	RunnerID string
	Driver   runtime.Driver
	Instance runtime.Instance
	// SeatTimeout bounds one runtime run (timed_out past it); zero or less is DefaultSeatTimeout.
	SeatTimeout time.Duration
	// DeclaredModel is the owner's optional self-declaration sent with each claim.
	DeclaredModel string
	// Enabled re-reads the owner's arena decision before each poll: once it is false the runner polls
	// "refused" one last time and stops.
	Enabled func() bool
	// Polled is called after every successful poll (the heartbeat file).
	Polled func(Poll)
	// Source checks, before each claimed seat starts, that the runtime's provider source is still the
	// one the owner confirmed at `arena enable`; an error fails the seat (failed, runtime_unavailable)
	// without starting anything.
	Source func(ctx context.Context) error
	Log    *slog.Logger
	// ReportTimeout bounds the final report after the owner stopped the runner.
	ReportTimeout time.Duration

	// shorten, in tests, shortens every wait between polls.
	shorten func(time.Duration) time.Duration
}

// Reasons are the only reasons the runner ever reports (schema "status-request").
var Reasons = []sdk.StopReason{sdk.StopCompleted, sdk.StopCancelledByOwner, sdk.StopLoginRequired, sdk.StopRuntimeUnavailable,
	sdk.StopProviderUnavailable, sdk.StopResourceExhausted, sdk.StopTimedOut, sdk.StopCrashed}

// Backoff bounds.
const (
	// MaxWait is the longest wait between two polls.
	MaxWait = 60 * time.Second
	// errorBase is the first wait after a failed poll that named no wait of its own.
	errorBase = time.Second
	// maxIdleDoublings caps how often an idle wait doubles.
	maxIdleDoublings = 4
)

// IdleWait is the wait before the next poll after idle polls in a row that offered nothing: the
// service's poll_after_seconds doubled for each, at most MaxWait, plus up to a second of jitter.
func IdleWait(pollAfter int, idle int) time.Duration {
	if pollAfter < 1 {
		pollAfter = 1
	}
	idle = min(max(idle, 0), maxIdleDoublings)
	d := min(time.Duration(pollAfter)*time.Second<<idle, MaxWait)
	return d + time.Duration(rand.Int64N(int64(time.Second)))
}

// ErrorWait is the wait after failures failed polls in a row: one second doubled for each failure, at
// most MaxWait, less a random jitter of up to half; and never less than the service's Retry-After.
func ErrorWait(failures int, retryAfter time.Duration) time.Duration {
	failures = min(max(failures, 1), 10)
	d := min(errorBase<<(failures-1), MaxWait)
	d = d/2 + time.Duration(rand.Int64N(int64(d/2)))
	return max(d, retryAfter)
}

// Run polls until ctx ends (the owner's SIGINT or SIGTERM) or the owner disables the arena. With once,
// it polls one time, runs each intent it claimed to its end, and returns. A running runtime is stopped
// when ctx ends or the arena is disabled, and reported stopped with cancelled_by_owner.
func (r *Runner) Run(ctx context.Context, once bool) error {
	if r.Log == nil {
		r.Log = slog.New(slog.DiscardHandler)
	}
	if r.ReportTimeout == 0 {
		r.ReportTimeout = 15 * time.Second
	}
	type done struct{}
	var busy string             // the intent the runtime runs now
	stopRun := func() {}        // stops it: the owner disabled the arena
	finished := make(chan done) // a run ended
	idle, failures := 0, 0
	for {
		enabled := r.Enabled == nil || r.Enabled()
		availability := sdk.RunnerOnline
		// Busy, the runner takes no intent (one runtime at a time): it says so, and is offered none.
		if !enabled || busy != "" || r.Driver.Check(ctx, r.Instance) != nil {
			availability = sdk.RunnerRefused
		}
		answer, err := r.Service.PollStartIntents(ctx, sdk.RunnerPoll{RunnerID: r.RunnerID, Availability: availability})
		var wait time.Duration
		switch {
		case ctx.Err() != nil:
			if busy != "" {
				<-finished
			}
			return nil
		case err != nil:
			failures++
			var p *sdk.Problem
			retryAfter := time.Duration(0)
			if errors.As(err, &p) {
				retryAfter = time.Duration(p.RetryAfterSeconds) * time.Second
			}
			wait = ErrorWait(failures, retryAfter)
			r.Log.Warn("poll failed", "error", err, "next_poll_in", wait.Round(time.Second).String())
			if once {
				return err
			}
		default:
			failures = 0
			if r.Polled != nil {
				r.Polled(Poll{At: time.Now(), Availability: availability, Intent: busy})
			}
			if !enabled {
				r.Log.Info("the arena is disabled for this profile: the runner polled refused and stops")
				if busy != "" {
					stopRun()
					<-finished
				}
				return nil
			}
			claimed := false
			if busy == "" && availability == sdk.RunnerOnline {
				for _, it := range answer.Intents {
					seat := runtime.Seat{IntentID: it.IntentID, MatchID: it.MatchID, Seat: it.Seat}
					if err := seat.Validate(); err != nil {
						r.Log.Warn("skipped a start intent that is not of the documented form")
						continue
					}
					claim, ok := r.claim(ctx, seat)
					if !ok {
						continue
					}
					claimed = true
					if once {
						r.run(ctx, claim)
						continue // --once: each claimed intent in turn, to its end
					}
					busy = claim.IntentID
					runCtx, cancel := context.WithCancel(ctx)
					stopRun = cancel
					go func() {
						defer cancel()
						r.run(runCtx, claim)
						finished <- done{}
					}()
					break // one intent at a time; the runner keeps polling while it runs
				}
			}
			if claimed || len(answer.Intents) > 0 {
				idle = 0
			} else {
				idle++
			}
			wait = IdleWait(answer.PollAfterSeconds, idle)
			if busy != "" {
				// While a runtime runs, keep the heartbeat fresh at the service's own pace.
				wait = IdleWait(answer.PollAfterSeconds, 0)
			}
			if once {
				return nil
			}
		}
		if r.shorten != nil {
			wait = r.shorten(wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if busy != "" {
				<-finished
			}
			return nil
		case <-finished:
			t.Stop()
			busy, idle = "", 0
		case <-t.C:
		}
	}
}

// claim claims an intent the poll offered; false when it is not ours to start (another runner claimed
// it, it expired) or the claim failed.
func (r *Runner) claim(ctx context.Context, seat runtime.Seat) (runtime.Seat, bool) {
	req := sdk.ClaimRequest{RunnerID: r.RunnerID}
	if r.DeclaredModel != "" {
		m := r.DeclaredModel
		req.DeclaredModel = &m
	}
	c, err := r.Service.ClaimStartIntent(ctx, seat.IntentID, req)
	if err != nil {
		var p *sdk.Problem
		if errors.As(err, &p) {
			r.Log.Info("did not claim a start intent", "intent", seat.IntentID, "code", p.Code)
		} else {
			r.Log.Warn("claim failed", "intent", seat.IntentID, "error", err)
		}
		return seat, false
	}
	// The claim's answer must be the intent claimed; its ids and seat are validated again.
	got := runtime.Seat{IntentID: c.IntentID, MatchID: c.MatchID, Seat: c.Seat}
	if got.Validate() != nil || got != seat || c.RunnerID != r.RunnerID {
		r.Log.Warn("the claim's answer is not the intent claimed: not starting it", "intent", seat.IntentID)
		return seat, false
	}
	return got, true
}

// run starts the runtime for a claimed seat and reports starting, running, then its end. A provider
// source that is no longer the one the owner confirmed starts nothing: failed, runtime_unavailable.
func (r *Runner) run(ctx context.Context, seat runtime.Seat) {
	if r.Source != nil {
		if err := r.Source(ctx); err != nil {
			r.Log.Warn("not starting the runtime: its provider source is not the one the owner enabled", "intent", seat.IntentID, "error", err)
			r.final(seat.IntentID, runtime.Result{State: sdk.StartIntentFailed, Reason: sdk.StopRuntimeUnavailable})
			return
		}
	}
	r.Log.Info("starting the runtime for a start intent", "intent", seat.IntentID, "match", seat.MatchID, "seat", seat.Seat)
	if err := r.report(ctx, seat.IntentID, sdk.StartIntentStarting, ""); err != nil {
		// Not started: the claimed intent still gets its end, so that it is not left claimed.
		res := runtime.Result{State: sdk.StartIntentFailed, Reason: sdk.StopRuntimeUnavailable}
		if ctx.Err() != nil {
			res = runtime.Result{State: sdk.StartIntentStopped, Reason: sdk.StopCancelledByOwner}
		}
		r.final(seat.IntentID, res)
		return
	}
	var res runtime.Result
	if err := r.Driver.Login(ctx, r.Instance); errors.Is(err, runtime.ErrLoginRequired) {
		res = runtime.Result{State: sdk.StartIntentFailed, Reason: sdk.StopLoginRequired}
	} else if err != nil && ctx.Err() == nil {
		res = runtime.Result{State: sdk.StartIntentFailed, Reason: sdk.StopRuntimeUnavailable}
	} else if ctx.Err() != nil {
		res = runtime.Result{State: sdk.StartIntentStopped, Reason: sdk.StopCancelledByOwner}
	} else {
		timeout := r.SeatTimeout
		if timeout <= 0 {
			timeout = DefaultSeatTimeout
		}
		res = r.Driver.Run(ctx, r.Instance, seat, timeout, func() {
			_ = r.report(ctx, seat.IntentID, sdk.StartIntentRunning, "")
		})
	}
	if !slices.Contains(Reasons, res.Reason) || (res.State != sdk.StartIntentStopped && res.State != sdk.StartIntentFailed) {
		res = runtime.Result{State: sdk.StartIntentFailed, Reason: sdk.StopCrashed}
	}
	r.final(seat.IntentID, res)
}

// final reports the end of a run, even after the owner stopped the runner (within ReportTimeout).
func (r *Runner) final(intentID string, res runtime.Result) {
	ctx, cancel := context.WithTimeout(context.Background(), r.ReportTimeout)
	defer cancel()
	if err := r.report(ctx, intentID, res.State, res.Reason); err == nil {
		r.Log.Info("the runtime ended", "intent", intentID, "state", res.State, "reason", res.Reason)
	}
}

// report sends a state (and, for stopped and failed, a reason) for a claimed intent.
func (r *Runner) report(ctx context.Context, intentID string, state sdk.StartIntentState, reason sdk.StopReason) error {
	req := sdk.StatusRequest{RunnerID: r.RunnerID, State: state}
	if reason != "" {
		req.ReasonCode = &reason
	}
	if _, err := r.Service.ReportStartIntentStatus(ctx, intentID, req); err != nil {
		r.Log.Warn("status report failed", "intent", intentID, "state", state, "error", err)
		return err
	}
	return nil
}
