package sigv1

import "time"

// The module's tables. Operational times that the guard compares (nonce sightings, leases, rate
// windows) are Unix milliseconds, which compare the same way on PostgreSQL and SQLite.

// Org is an organisation: the owner of agents and, in billing, of a wallet.
type Org struct {
	ID        string `gorm:"primaryKey;size:36"`
	Name      string `gorm:"size:200;not null"`
	CreatedAt time.Time
}

func (Org) TableName() string { return "sigv1_orgs" }

// The states of an agent.
const (
	AgentActive    = "active"
	AgentSuspended = "suspended"
)

// Agent is a registered agent of an organisation.
type Agent struct {
	ID        string `gorm:"primaryKey;size:36"`
	OrgID     string `gorm:"size:36;not null;index"`
	Handle    string `gorm:"size:32;not null;uniqueIndex"`
	State     string `gorm:"size:16;not null"`
	CreatedAt time.Time
	UpdatedAt time.Time
}

func (Agent) TableName() string { return "sigv1_agents" }

// The states of a key.
const (
	KeyActive  = "active"
	KeyRevoked = "revoked"
)

// Key is one registered public key of an agent; an agent may hold several, so keys can be rotated.
type Key struct {
	ID        string `gorm:"primaryKey;size:64"` // the key_id issued at registration
	AgentID   string `gorm:"size:36;not null;index"`
	PublicKey string `gorm:"size:44;not null;uniqueIndex"` // 32 raw bytes, standard base64
	State     string `gorm:"size:16;not null"`
	CreatedAt time.Time
	RevokedAt *time.Time
}

func (Key) TableName() string { return "sigv1_keys" }

// nonce is one sighting of a nonce by an agent.
type nonce struct {
	AgentID string `gorm:"primaryKey;size:36"`
	Nonce   string `gorm:"primaryKey;size:128"`
	SeenMS  int64  `gorm:"not null;index"`
}

func (nonce) TableName() string { return "sigv1_nonces" }

// The states of an idempotency claim.
const (
	claimRunning = "running"
	claimDone    = "done"
)

// idempotency is one (agent, Idempotency-Key) claim and, once done, its stored response.
type idempotency struct {
	AgentID     string `gorm:"primaryKey;size:36"`
	Key         string `gorm:"primaryKey;size:255;column:idem_key"`
	Fingerprint string `gorm:"size:64;not null"`
	Token       string `gorm:"size:36;not null"` // which request holds the claim
	State       string `gorm:"size:16;not null"`
	LeaseMS     int64  `gorm:"not null"` // a running claim is abandoned after this
	CreatedMS   int64  `gorm:"not null;index"`
	Status      int    `gorm:"not null"`
	Body        []byte
}

func (idempotency) TableName() string { return "sigv1_idempotency" }

// rateWindow counts hits on one bucket in its current fixed window.
type rateWindow struct {
	Bucket   string `gorm:"primaryKey;size:200"`
	WindowMS int64  `gorm:"not null;index"`
	SpanMS   int64  `gorm:"not null;default:0"` // the window's length when not the guard's RateWindow
	Hits     int64  `gorm:"not null"`
}

func (rateWindow) TableName() string { return "sigv1_rate_windows" }

// switchRow is an operator switch that is on while its row exists: a closed gate, paused writes, a
// freeze (see switches.go for the names).
type switchRow struct {
	Name  string `gorm:"primaryKey;size:100"`
	SetAt time.Time
}

func (switchRow) TableName() string { return "sigv1_switches" }
