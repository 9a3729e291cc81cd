package profile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
)

// State is how far a setup got. States only move forward, one at a time, in this order.
type State string

const (
	// StateStarted: the checkpoint exists, with the redemption's Idempotency-Key; no key yet.
	StateStarted State = "started"
	// StateKeyMade: key.pem holds the new key (its public half is in the checkpoint); nothing sent.
	StateKeyMade State = "key_made"
	// StateRedemptionSent: the redemption was, or was about to be, sent; its outcome is unknown.
	StateRedemptionSent State = "redemption_sent"
	// StateRedeemed: the service answered the identity; identity.json holds it.
	StateRedeemed State = "redeemed"
	// StateRuntimeChecked: the runtime is installed and logged in.
	StateRuntimeChecked State = "runtime_checked"
	// StateComplete: a signed conformance and write-admission round trip passed.
	StateComplete State = "complete"
)

// States lists the states in order.
var States = []State{StateStarted, StateKeyMade, StateRedemptionSent, StateRedeemed, StateRuntimeChecked, StateComplete}

func (s State) index() int { return slices.Index(States, s) }

// Valid reports whether s is a known state.
func (s State) Valid() bool { return s.index() >= 0 }

// Before reports whether s comes before t.
func (s State) Before(t State) bool { return s.index() < t.index() }

// Checkpoint is a setup's progress, kept in setup.json so that an interrupted setup resumes where it
// stopped. It never holds the invitation (it is asked again when needed) or the private key (key.pem).
type Checkpoint struct {
	Version    int    `json:"version"`
	State      State  `json:"state"`
	Handle     string `json:"handle"`
	BaseURL    string `json:"base_url"`
	Runtime    string `json:"runtime"`
	SetupScope string `json:"setup_scope"`
	// IdempotencyKey is the redemption's Idempotency-Key, chosen once: a resumed redemption is the same
	// request again, so the service answers it with the same identity.
	IdempotencyKey string `json:"idempotency_key"`
	// PublicKey is the new key's public half (standard base64), from key_made on.
	PublicKey string `json:"public_key,omitempty"`
	// AgentID is the redeemed agent, from redeemed on.
	AgentID   string    `json:"agent_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ErrNoCheckpoint is a profile without a setup checkpoint.
var ErrNoCheckpoint = errors.New("no setup checkpoint")

// NewCheckpoint is a checkpoint in state, with a new redemption Idempotency-Key.
func NewCheckpoint(state State, handle, baseURL, rt, scope string) *Checkpoint {
	var b [16]byte
	_, _ = rand.Read(b[:])
	now := time.Now().UTC().Truncate(time.Second)
	return &Checkpoint{Version: 1, State: state, Handle: handle, BaseURL: baseURL, Runtime: rt, SetupScope: scope,
		IdempotencyKey: "svc-connector-redeem-" + hex.EncodeToString(b[:]), CreatedAt: now, UpdatedAt: now}
}

// ReadCheckpoint reads the profile's checkpoint; ErrNoCheckpoint when it has none.
func (p *Profile) ReadCheckpoint() (*Checkpoint, error) {
	var c Checkpoint
	if err := readJSON(p.Path(CheckpointFile), &c); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, ErrNoCheckpoint
		}
		return nil, fmt.Errorf("read the setup checkpoint: %w", err)
	}
	if c.Version != 1 || !c.State.Valid() || c.Handle == "" || c.BaseURL == "" || c.IdempotencyKey == "" {
		return nil, fmt.Errorf("read the setup checkpoint: %s is not a checkpoint this connector wrote", CheckpointFile)
	}
	return &c, nil
}

// WriteCheckpoint writes c (0600, atomically).
func (p *Profile) WriteCheckpoint(c *Checkpoint) error {
	return writeJSON(p.Path(CheckpointFile), c)
}

// Advance moves c to the next state, to, and writes it: a state only moves forward, one step at a
// time (staying in a state is allowed: a resent redemption stays "redemption_sent").
func (p *Profile) Advance(c *Checkpoint, to State) error {
	if !to.Valid() {
		return fmt.Errorf("checkpoint: unknown state %q", to)
	}
	if to != c.State && to.index() != c.State.index()+1 {
		return fmt.Errorf("checkpoint: cannot move from %s to %s", c.State, to)
	}
	prev := *c
	c.State, c.UpdatedAt = to, time.Now().UTC().Truncate(time.Second)
	if err := p.WriteCheckpoint(c); err != nil {
		*c = prev
		return err
	}
	return nil
}
