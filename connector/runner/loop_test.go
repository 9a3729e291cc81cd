package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/svcforum/svc/connector/runtime"
	"github.com/svcforum/svc/sdk"
)

const runnerID = "0196f500-0000-4000-8000-000000000001"

// intent is a start intent as a poll offers it.
func intent(n int, seat string) sdk.StartIntent {
	return sdk.StartIntent{IntentID: fmt.Sprintf("0196f410-3c4d-7e5f-8a6b-%012d", n), MatchID: "0196f410-3c4d-7e5f-8a6b-7c8d9e0f1a2b", Seat: seat}
}

// fakeService is the runner's Service: it offers intents, answers claims and records every call.
type fakeService struct {
	mu      sync.Mutex
	polls   []sdk.Availability
	claims  []string
	reports []string // "intent state reason"
	// offer is what the poll numbered n (from 0) offers.
	offer func(n int) []sdk.StartIntent
	// claimAnswer answers a claim; by default the intent claimed, held by the runner.
	claimAnswer func(it sdk.StartIntent) (*sdk.ClaimResponse, error)
	offered     map[string]sdk.StartIntent
	// refuseReport fails the status reports of a state (recorded with "refused").
	refuseReport sdk.StartIntentState
}

func (f *fakeService) PollStartIntents(_ context.Context, in sdk.RunnerPoll, _ ...sdk.CallOption) (*sdk.StartIntentList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if in.RunnerID != runnerID {
		return nil, errors.New("another runner id")
	}
	n := len(f.polls)
	f.polls = append(f.polls, in.Availability)
	var list []sdk.StartIntent
	if f.offer != nil {
		list = f.offer(n)
	}
	if f.offered == nil {
		f.offered = map[string]sdk.StartIntent{}
	}
	for _, it := range list {
		f.offered[it.IntentID] = it
	}
	return &sdk.StartIntentList{Intents: list, PollAfterSeconds: 1}, nil
}

func (f *fakeService) ClaimStartIntent(_ context.Context, intentID string, in sdk.ClaimRequest, _ ...sdk.CallOption) (*sdk.ClaimResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claims = append(f.claims, intentID)
	it, ok := f.offered[intentID]
	if !ok {
		return nil, &sdk.Problem{Status: 404, Code: "intent_not_found"}
	}
	if f.claimAnswer != nil {
		return f.claimAnswer(it)
	}
	return &sdk.ClaimResponse{IntentID: it.IntentID, MatchID: it.MatchID, Seat: it.Seat, RunnerID: in.RunnerID, State: sdk.StartIntentClaimed}, nil
}

func (f *fakeService) ReportStartIntentStatus(_ context.Context, intentID string, in sdk.StatusRequest, _ ...sdk.CallOption) (*sdk.StatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	reason := ""
	if in.ReasonCode != nil {
		reason = string(*in.ReasonCode)
	}
	if in.State == f.refuseReport {
		f.reports = append(f.reports, fmt.Sprintf("%s %s refused", intentID, in.State))
		return nil, errors.New("the report was lost")
	}
	f.reports = append(f.reports, fmt.Sprintf("%s %s %s", intentID, in.State, reason))
	return &sdk.StatusResponse{IntentID: intentID, State: in.State, ReasonCode: in.ReasonCode}, nil
}

func (f *fakeService) calls() (polls []sdk.Availability, claims, reports []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.polls), slices.Clone(f.claims), slices.Clone(f.reports)
}

// fakeDriver is a runtime whose seats end at once, or, with block, when the owner stops them.
type fakeDriver struct {
	mu    sync.Mutex
	seats []runtime.Seat
	block bool
}

func (*fakeDriver) Name() string                                           { return "fake" }
func (*fakeDriver) Summary() string                                        { return "a fake runtime" }
func (*fakeDriver) Configure(s runtime.Settings) (runtime.Settings, error) { return s, nil }
func (*fakeDriver) Check(context.Context, runtime.Instance) error          { return nil }
func (*fakeDriver) Login(context.Context, runtime.Instance) error          { return nil }
func (*fakeDriver) LoginStep(runtime.Instance) string                      { return "" }
func (*fakeDriver) Source(context.Context, runtime.Instance) (runtime.Source, error) {
	return runtime.Source{Path: "/fake", SHA256: "00"}, nil
}

func (d *fakeDriver) Run(ctx context.Context, _ runtime.Instance, seat runtime.Seat, _ time.Duration, running func()) runtime.Result {
	d.mu.Lock()
	d.seats = append(d.seats, seat)
	d.mu.Unlock()
	running()
	if d.block {
		<-ctx.Done()
		return runtime.Result{State: sdk.StartIntentStopped, Reason: sdk.StopCancelledByOwner}
	}
	return runtime.Result{State: sdk.StartIntentStopped, Reason: sdk.StopCompleted}
}

func (d *fakeDriver) ran() []runtime.Seat {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.seats)
}

var _ runtime.Driver = (*fakeDriver)(nil)

func newRunner(svc *fakeService, drv *fakeDriver) *Runner {
	return &Runner{Service: svc, RunnerID: runnerID, Driver: drv, SeatTimeout: time.Minute,
		shorten: func(time.Duration) time.Duration { return 10 * time.Millisecond }}
}

func run(t *testing.T, r *Runner, once bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.Run(ctx, once); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the runner did not return")
	}
}

func TestOncePollsOnceAndRunsEachClaimedIntentToItsEnd(t *testing.T) {
	a, b := intent(1, "north"), intent(2, "south")
	svc := &fakeService{offer: func(int) []sdk.StartIntent { return []sdk.StartIntent{a, b} }}
	drv := &fakeDriver{}
	run(t, newRunner(svc, drv), true)
	polls, claims, reports := svc.calls()
	if !slices.Equal(polls, []sdk.Availability{sdk.RunnerOnline}) || !slices.Equal(claims, []string{a.IntentID, b.IntentID}) {
		t.Fatalf("polls %v, claims %v", polls, claims)
	}
	want := []string{a.IntentID + " starting ", a.IntentID + " running ", a.IntentID + " stopped completed",
		b.IntentID + " starting ", b.IntentID + " running ", b.IntentID + " stopped completed"}
	if !slices.Equal(reports, want) {
		t.Fatalf("reports %q, want %q", reports, want)
	}
	if got := drv.ran(); len(got) != 2 || got[0].Seat != "north" || got[1].Seat != "south" {
		t.Fatalf("seats run %+v", got)
	}
}

func TestAnIntentNotOfTheDocumentedFormIsNeverClaimed(t *testing.T) {
	good := intent(9, "--help") // a seat may begin with "-"
	bad := []sdk.StartIntent{
		{IntentID: "not-a-uuid", MatchID: good.MatchID, Seat: "north"},
		{IntentID: intent(3, "").IntentID, MatchID: "0196F410-3C4D-7E5F-8A6B-7C8D9E0F1A2B", Seat: "north"},
		intent(4, "north; rm -rf ~"),
		intent(5, ""),
		intent(6, "--seat=x y"),
	}
	svc := &fakeService{offer: func(int) []sdk.StartIntent { return append(slices.Clone(bad), good) }}
	drv := &fakeDriver{}
	run(t, newRunner(svc, drv), true)
	_, claims, reports := svc.calls()
	if !slices.Equal(claims, []string{good.IntentID}) {
		t.Fatalf("claimed %v: only %s is of the documented form", claims, good.IntentID)
	}
	for _, r := range reports {
		if r[:len(good.IntentID)] != good.IntentID {
			t.Fatalf("reported on an intent never claimed: %q", r)
		}
	}
	if got := drv.ran(); len(got) != 1 || got[0].Seat != "--help" || got[0].IntentID != good.IntentID {
		t.Fatalf("seats run %+v", got)
	}
}

func TestAClaimAnsweredForAnotherIntentIsNotStarted(t *testing.T) {
	a, other := intent(1, "north"), intent(2, "north")
	for name, answer := range map[string]func(sdk.StartIntent) (*sdk.ClaimResponse, error){
		"another intent": func(it sdk.StartIntent) (*sdk.ClaimResponse, error) {
			return &sdk.ClaimResponse{IntentID: other.IntentID, MatchID: it.MatchID, Seat: it.Seat, RunnerID: runnerID}, nil
		},
		"another seat": func(it sdk.StartIntent) (*sdk.ClaimResponse, error) {
			return &sdk.ClaimResponse{IntentID: it.IntentID, MatchID: it.MatchID, Seat: "south", RunnerID: runnerID}, nil
		},
		"another runner": func(it sdk.StartIntent) (*sdk.ClaimResponse, error) {
			return &sdk.ClaimResponse{IntentID: it.IntentID, MatchID: it.MatchID, Seat: it.Seat, RunnerID: "0196f500-0000-4000-8000-000000000002"}, nil
		},
		"a seat not of the form": func(it sdk.StartIntent) (*sdk.ClaimResponse, error) {
			return &sdk.ClaimResponse{IntentID: it.IntentID, MatchID: it.MatchID, Seat: "north; reboot", RunnerID: runnerID}, nil
		},
		"claimed by another runner": func(sdk.StartIntent) (*sdk.ClaimResponse, error) {
			return nil, &sdk.Problem{Status: 409, Code: "intent_already_claimed"}
		},
	} {
		t.Run(name, func(t *testing.T) {
			svc := &fakeService{offer: func(int) []sdk.StartIntent { return []sdk.StartIntent{a} }, claimAnswer: answer}
			drv := &fakeDriver{}
			run(t, newRunner(svc, drv), true)
			_, claims, reports := svc.calls()
			if !slices.Equal(claims, []string{a.IntentID}) || len(reports) != 0 || len(drv.ran()) != 0 {
				t.Fatalf("claims %v, reports %v, seats run %v", claims, reports, drv.ran())
			}
		})
	}
}

// A claimed intent whose starting report fails is not started, and still gets its end: failed,
// runtime_unavailable.
func TestAFailedStartingReportStillEndsTheIntent(t *testing.T) {
	a := intent(1, "north")
	svc := &fakeService{offer: func(int) []sdk.StartIntent { return []sdk.StartIntent{a} }, refuseReport: sdk.StartIntentStarting}
	drv := &fakeDriver{}
	run(t, newRunner(svc, drv), true)
	_, _, reports := svc.calls()
	if want := []string{a.IntentID + " starting refused", a.IntentID + " failed runtime_unavailable"}; !slices.Equal(reports, want) {
		t.Fatalf("reports %q, want %q", reports, want)
	}
	if len(drv.ran()) != 0 {
		t.Fatalf("seats run %v after the starting report failed", drv.ran())
	}
}

// While a seat runs, the runner polls refused (it takes one intent at a time): it is offered nothing,
// and claims nothing, until its seat ends.
func TestABusyRunnerPollsRefused(t *testing.T) {
	a, b := intent(1, "north"), intent(2, "south")
	svc := &fakeService{offer: func(n int) []sdk.StartIntent {
		if n == 0 {
			return []sdk.StartIntent{a}
		}
		return []sdk.StartIntent{b}
	}}
	r := newRunner(svc, &fakeDriver{block: true})
	r.Enabled = func() bool {
		polls, _, _ := svc.calls()
		return len(polls) < 4 // the owner disables the arena after four polls (its refused poll is the fifth)
	}
	run(t, r, false)
	polls, claims, _ := svc.calls()
	if want := []sdk.Availability{sdk.RunnerOnline, sdk.RunnerRefused, sdk.RunnerRefused, sdk.RunnerRefused, sdk.RunnerRefused}; !slices.Equal(polls, want) {
		t.Fatalf("polls %v, want %v: online until a seat runs, then refused", polls, want)
	}
	if !slices.Equal(claims, []string{a.IntentID}) {
		t.Fatalf("claims %v: a busy runner claims nothing", claims)
	}
}

func TestTheArenaDisabledWhileASeatRunsPollsRefusedOnceAndStops(t *testing.T) {
	a := intent(1, "north")
	svc := &fakeService{offer: func(n int) []sdk.StartIntent {
		if n == 0 {
			return []sdk.StartIntent{a}
		}
		return nil
	}}
	drv := &fakeDriver{block: true}
	r := newRunner(svc, drv)
	var beats []sdk.Availability
	r.Polled = func(p Poll) { beats = append(beats, p.Availability) }
	r.Enabled = func() bool {
		_, _, reports := svc.calls()
		return !slices.Contains(reports, a.IntentID+" running ") // the owner disables once the seat runs
	}
	run(t, r, false)
	polls, _, reports := svc.calls()
	if len(polls) < 2 || polls[0] != sdk.RunnerOnline || slices.Contains(polls[1:], sdk.RunnerOnline) {
		t.Fatalf("polls %v: want online until the seat was claimed, then refused (busy, then disabled)", polls)
	}
	if !slices.Equal(beats, polls) {
		t.Fatalf("heartbeats %v, polls %v", beats, polls)
	}
	want := []string{a.IntentID + " starting ", a.IntentID + " running ", a.IntentID + " stopped cancelled_by_owner"}
	if !slices.Equal(reports, want) {
		t.Fatalf("reports %q, want %q", reports, want)
	}
}

func TestADisabledArenaPollsRefusedAndClaimsNothing(t *testing.T) {
	svc := &fakeService{offer: func(int) []sdk.StartIntent { return []sdk.StartIntent{intent(1, "north")} }}
	r := newRunner(svc, &fakeDriver{})
	r.Enabled = func() bool { return false }
	run(t, r, false)
	if polls, claims, _ := svc.calls(); !slices.Equal(polls, []sdk.Availability{sdk.RunnerRefused}) || len(claims) != 0 {
		t.Fatalf("polls %v, claims %v", polls, claims)
	}
}

func TestAChangedProviderSourceStartsNothing(t *testing.T) {
	a := intent(1, "north")
	svc := &fakeService{offer: func(int) []sdk.StartIntent { return []sdk.StartIntent{a} }}
	drv := &fakeDriver{}
	r := newRunner(svc, drv)
	r.Source = func(context.Context) error {
		return errors.New("the agent program changed since the owner enabled the arena")
	}
	run(t, r, true)
	_, claims, reports := svc.calls()
	if !slices.Equal(claims, []string{a.IntentID}) || !slices.Equal(reports, []string{a.IntentID + " failed runtime_unavailable"}) || len(drv.ran()) != 0 {
		t.Fatalf("claims %v, reports %q, seats run %v", claims, reports, drv.ran())
	}
}

func TestTheOwnerStoppingTheRunnerStopsTheSeat(t *testing.T) {
	a := intent(1, "north")
	svc := &fakeService{offer: func(n int) []sdk.StartIntent { return []sdk.StartIntent{a} }}
	drv := &fakeDriver{block: true}
	r := newRunner(svc, drv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, false) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, _, reports := svc.calls(); slices.Contains(reports, a.IntentID+" running ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the seat never ran")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel() // SIGINT or SIGTERM
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the runner did not stop")
	}
	_, claims, reports := svc.calls()
	if len(claims) != 1 || reports[len(reports)-1] != a.IntentID+" stopped cancelled_by_owner" {
		t.Fatalf("claims %v, reports %q", claims, reports)
	}
}
