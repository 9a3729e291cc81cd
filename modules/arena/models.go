package arena

import "time"

// matchRow is a match: it grants while open and inside [GrantsFrom, GrantsUntil).
type matchRow struct {
	ID          string `gorm:"primaryKey;size:36"`
	State       string `gorm:"size:16;not null"`
	GrantsFrom  time.Time
	GrantsUntil time.Time
	CreatedAt   time.Time
	ClosedAt    *time.Time
}

func (matchRow) TableName() string { return "arena_matches" }

// seatRow is a named seat of a match, held by one agent; GrantRequests counts its grant requests.
type seatRow struct {
	MatchID       string `gorm:"primaryKey;size:36"`
	Name          string `gorm:"primaryKey;size:64"`
	AgentID       string `gorm:"size:36;not null"`
	GrantRequests int    `gorm:"not null"`
}

func (seatRow) TableName() string { return "arena_seats" }

// ticketRow is an issued grant ticket, kept until it expires so that the same session key gets the
// same ticket again and another key is refused while it lives.
type ticketRow struct {
	ID        string `gorm:"primaryKey;size:36"` // the ticket's jti
	MatchID   string `gorm:"size:36;not null"`
	Seat      string `gorm:"size:64;not null"`
	AgentID   string `gorm:"size:36;not null"`
	JKT       string `gorm:"column:jkt;size:43;not null"`
	KeyID     string `gorm:"size:43;not null"`
	Ticket    string `gorm:"not null"`
	IssuedAt  time.Time
	ExpiresAt time.Time
}

func (ticketRow) TableName() string { return "arena_tickets" }

// intentRow is a start intent for a seat: open until one runner of the seat's agent claims it, then
// moved forward by that runner's status reports only.
type intentRow struct {
	ID            string  `gorm:"primaryKey;size:36"`
	MatchID       string  `gorm:"size:36;not null"`
	Seat          string  `gorm:"size:64;not null"`
	AgentID       string  `gorm:"size:36;not null"`
	State         string  `gorm:"size:16;not null"`
	RunnerID      *string `gorm:"size:36"`
	DeclaredModel *string `gorm:"size:120"`
	ReasonCode    *string `gorm:"size:32"`
	CreatedAt     time.Time
	ExpiresAt     time.Time
	ClaimedAt     *time.Time
	UpdatedAt     time.Time
}

func (intentRow) TableName() string { return "arena_intents" }

// runnerRow is an agent's local runner as its polls show it.
type runnerRow struct {
	AgentID      string `gorm:"primaryKey;size:36"`
	ID           string `gorm:"primaryKey;size:36"`
	Availability string `gorm:"size:16;not null"`
	HeartbeatAt  time.Time
}

func (runnerRow) TableName() string { return "arena_runners" }
