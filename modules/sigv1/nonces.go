package sigv1

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Nonces remember every nonce an agent used in the last NonceWindow, in the database, so that a replay
// is refused by whichever replica it reaches.
type Nonces struct {
	db *gorm.DB
}

// NewNonces returns the nonce memory on db.
func NewNonces(db *gorm.DB) *Nonces { return &Nonces{db: db} }

// Record records the nonce of agentID as seen at at (the server's clock, or later for a request from
// the future) in its own committed statement and reports whether it was fresh. A nonce seen within
// NonceWindow is a replay; one last seen longer ago may be used again. Two concurrent records of one
// nonce cannot both succeed: the primary key serialises them.
func (n *Nonces) Record(ctx context.Context, agentID, nonce string, at time.Time) (fresh bool, err error) {
	return recordNonce(n.db.WithContext(ctx), agentID, nonce, at)
}

// recordNonce is Record on db, which may be a transaction.
func recordNonce(db *gorm.DB, agentID, nonce string, at time.Time) (fresh bool, err error) {
	nowMS := at.UnixMilli()
	res := db.Exec(`INSERT INTO sigv1_nonces (agent_id, nonce, seen_ms) VALUES (?, ?, ?)
ON CONFLICT (agent_id, nonce) DO UPDATE SET seen_ms = excluded.seen_ms
WHERE sigv1_nonces.seen_ms <= ?`, agentID, nonce, nowMS, nowMS-NonceWindow.Milliseconds())
	if res.Error != nil {
		return false, fmt.Errorf("record nonce: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// Prune deletes the nonces older than NonceWindow and returns how many.
func (n *Nonces) Prune(ctx context.Context, now time.Time) (int64, error) {
	res := n.db.WithContext(ctx).Where("seen_ms <= ?", now.Add(-NonceWindow).UnixMilli()).Delete(&nonce{})
	if res.Error != nil {
		return 0, fmt.Errorf("prune nonces: %w", res.Error)
	}
	return res.RowsAffected, nil
}
