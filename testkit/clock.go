package testkit

import (
	"sync"
	"time"

	"github.com/svcforum/svc/contracts/port"
)

// T0 is where tests' clocks start: 2026-01-01T00:00:00Z.
var T0 = time.Unix(1767225600, 0).UTC()

// Clock is a port.Clock a test sets and moves; safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock showing now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

var _ port.Clock = (*Clock)(nil)
