package cli

import (
	"os"
	"testing"
	"time"

	"github.com/svcforum/svc/connector/profile"
)

// A runner's heartbeat: a busy runner polls refused, and is ready all the same; a runner that polls
// refused with nothing running cannot start its runtime here.
func TestHeartbeatSays(t *testing.T) {
	now := time.Now()
	const runner = "0196f500-0000-4000-8000-000000000001"
	beat := func(availability, intent string) *profile.Heartbeat {
		return &profile.Heartbeat{PID: os.Getpid(), RunnerID: runner, Availability: availability, LastPollAt: now.Add(-time.Second), Intent: intent}
	}
	for _, tc := range []struct {
		name string
		hb   *profile.Heartbeat
		ok   bool
	}{
		{"online", beat("online", ""), true},
		{"busy", beat("refused", "0196f410-3c4d-7e5f-8a6b-000000000001"), true},
		{"refused", beat("refused", ""), false},
		{"stale", &profile.Heartbeat{PID: os.Getpid(), RunnerID: runner, Availability: "online", LastPollAt: now.Add(-RunnerFresh - time.Second)}, false},
		{"another runner", &profile.Heartbeat{PID: os.Getpid(), RunnerID: "other", Availability: "online", LastPollAt: now}, false},
	} {
		if ok, why := heartbeatSays(tc.hb, runner, "p", now); ok != tc.ok {
			t.Errorf("%s: %v (%s), want %v", tc.name, ok, why, tc.ok)
		}
	}
}
