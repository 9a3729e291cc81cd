package runner

import (
	"testing"
	"time"
)

func TestIdleWaitHonoursPollAfterAndBacksOffToAMinute(t *testing.T) {
	for i := 0; i < 200; i++ {
		if d := IdleWait(5, 0); d < 5*time.Second || d >= 6*time.Second {
			t.Fatalf("the first idle wait: %s", d)
		}
		if d := IdleWait(5, 1); d < 10*time.Second || d >= 11*time.Second {
			t.Fatalf("after one idle poll: %s", d)
		}
		if d := IdleWait(5, 50); d < MaxWait || d >= MaxWait+time.Second {
			t.Fatalf("after many idle polls: %s", d)
		}
		if d := IdleWait(0, 0); d < time.Second {
			t.Fatalf("a poll_after_seconds of 0: %s", d)
		}
		if d := IdleWait(600, 0); d > MaxWait+time.Second {
			t.Fatalf("a long poll_after_seconds is capped: %s", d)
		}
	}
}

func TestErrorWaitBacksOffExponentiallyWithJitter(t *testing.T) {
	seen := map[time.Duration]bool{}
	for i := 0; i < 200; i++ {
		d1, d3, d20 := ErrorWait(1, 0), ErrorWait(3, 0), ErrorWait(20, 0)
		if d1 < 500*time.Millisecond || d1 >= time.Second {
			t.Fatalf("after one failure: %s", d1)
		}
		if d3 < 2*time.Second || d3 >= 4*time.Second {
			t.Fatalf("after three failures: %s", d3)
		}
		if d20 < MaxWait/2 || d20 >= MaxWait {
			t.Fatalf("after many failures: %s", d20)
		}
		seen[d1] = true
		if d := ErrorWait(1, 30*time.Second); d < 30*time.Second {
			t.Fatalf("Retry-After not honoured: %s", d)
		}
	}
	if len(seen) < 10 {
		t.Fatalf("no jitter: %d distinct waits", len(seen))
	}
}
