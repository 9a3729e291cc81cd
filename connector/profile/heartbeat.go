package profile

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Heartbeat is what the arena runner last did (runner.json), written after every successful poll:
// status reads it to tell a runner that actually polls from an arena that is merely enabled.
type Heartbeat struct {
	PID          int       `json:"pid"`
	RunnerID     string    `json:"runner_id"`
	Availability string    `json:"availability"` // "online" or "refused"
	StartedAt    time.Time `json:"started_at"`
	LastPollAt   time.Time `json:"last_poll_at"`
	// Intent is the start intent the runner's runtime is running now, if any.
	Intent string `json:"intent,omitempty"`
}

// ErrNoHeartbeat is a profile whose runner never polled.
var ErrNoHeartbeat = errors.New("the arena runner has never polled from this profile")

// ReadHeartbeat reads runner.json; ErrNoHeartbeat without one.
func (p *Profile) ReadHeartbeat() (*Heartbeat, error) {
	var h Heartbeat
	if err := readJSON(p.Path(HeartbeatFile), &h); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, ErrNoHeartbeat
		}
		return nil, fmt.Errorf("read the runner's heartbeat: %w", err)
	}
	return &h, nil
}

// WriteHeartbeat writes runner.json (0600, atomically).
func (p *Profile) WriteHeartbeat(h *Heartbeat) error {
	return writeJSON(p.Path(HeartbeatFile), h)
}
