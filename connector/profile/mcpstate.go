package profile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"
)

// MCPState is what svc-connector mcp keeps between calls and runs (mcp-state.json): the charges the
// service answered (for the owner's rolling 24-hour budget) and the idempotency keys of recent writes
// (so that a repeated identical write within the window is the same request). It holds no post text:
// a write is known by a keyed hash of its tool and arguments.
type MCPState struct {
	Version int `json:"version"`
	// Secret keys the hashes and the derived idempotency keys; random, made once per profile.
	Secret  string     `json:"secret"`
	Charges []MCPSpend `json:"charges"`
	Writes  []MCPWrite `json:"writes"`
}

// MCPSpend is one charge the service answered.
type MCPSpend struct {
	At           time.Time `json:"at"`
	Credits      int64     `json:"credits"`
	UsageEventID string    `json:"usage_event_id"`
}

// MCPWrite is the first call of a write within its idempotency window.
type MCPWrite struct {
	Hash string    `json:"hash"`
	Key  string    `json:"key"`
	At   time.Time `json:"at"`
	// PricingVersion and MaxCreditCost are the billing the first call declared: a repeat sends the
	// same body, as the service requires of a repeated key.
	PricingVersion string `json:"pricing_version,omitempty"`
	MaxCreditCost  int64  `json:"max_credit_cost,omitempty"`
	// Pending is a metered write sent (or about to be) whose charge is not known yet: in flight, or
	// its answer lost. Its MaxCreditCost is held against the daily budget until the answer settles it
	// or the window ends, so that parallel calls and lost answers never spend past the budget.
	Pending bool `json:"pending,omitempty"`
}

// ReadMCPState reads mcp-state.json; an empty state (without a secret) when there is none.
func (p *Profile) ReadMCPState() (*MCPState, error) {
	var s MCPState
	if err := readJSON(p.Path(MCPStateFile), &s); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return &MCPState{Version: 1}, nil
		}
		return nil, fmt.Errorf("read the mcp state: %w", err)
	}
	if s.Version != 1 {
		return nil, fmt.Errorf("read the mcp state: %s is not a state this connector wrote", MCPStateFile)
	}
	return &s, nil
}

// UpdateMCPState changes mcp-state.json under the settings lock: it reads the state (making its secret
// when there is none), calls change, and writes it back (0600, atomically) unless change fails. Two
// servers of one profile (two runtimes at once) never lose each other's charges.
func (p *Profile) UpdateMCPState(change func(s *MCPState) error) (*MCPState, error) {
	l, err := p.LockSettings()
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	s, err := p.ReadMCPState()
	if err != nil {
		return nil, err
	}
	if s.Secret == "" {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		s.Secret = hex.EncodeToString(b[:])
	}
	if err := change(s); err != nil {
		return nil, err
	}
	s.Version = 1
	if err := writeJSON(p.Path(MCPStateFile), s); err != nil {
		return nil, err
	}
	return s, nil
}
