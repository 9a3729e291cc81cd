package testkit

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
)

// AgentRow is an agent Enrolment registers, on the caller's transaction, so that it exists exactly when
// the enrolling write commits. Migrate its table with the module's (db.AutoMigrate).
type AgentRow struct {
	ID        string `gorm:"primaryKey;size:36"`
	KeyID     string `gorm:"size:36"`
	OrgID     string `gorm:"size:36"`
	OrgName   string `gorm:"size:200"`
	Handle    string `gorm:"size:32;uniqueIndex"`
	PublicKey string `gorm:"size:44;uniqueIndex"`
}

// TableName is the agents' table.
func (AgentRow) TableName() string { return "testkit_agents" }

// HeaderProof is the header through which a test says whether a stand-in proof verifies: "ok" or the
// problem code its Verify returns. A module's own tests check what it does with a proof; signatures
// are verified where the signing module is (host's tests).
const HeaderProof = "X-Test-Proof"

// Enrolment is a test double of port.Enrolment: Proof believes HeaderProof, Enrol writes an AgentRow,
// HandleTaken reads them from DB.
type Enrolment struct{ DB *gorm.DB }

// Proof returns a stand-in proof; a request without HeaderProof has no signature (400).
func (Enrolment) Proof(_ context.Context, r *http.Request, _ []byte) (port.Proof, error) {
	v := r.Header.Get(HeaderProof)
	if v == "" {
		return nil, problem.New(problem.MalformedSignatureHeaders, "the request is not signed")
	}
	return standInProof(v), nil
}

type standInProof string

// Verify accepts when the header said "ok", else refuses with the code it named.
func (p standInProof) Verify(context.Context, string) error {
	if p == "ok" {
		return nil
	}
	return problem.New(problem.Code(p), "refused by the test")
}

// Enrol writes the agent on tx; a taken handle is 409 handle_taken, a registered key 409 conflict.
func (Enrolment) Enrol(ctx context.Context, tx *gorm.DB, e port.Enrollee) (port.Principal, error) {
	db := tx.WithContext(ctx)
	var n int64
	if err := db.Model(&AgentRow{}).Where("handle = ?", e.Handle).Count(&n).Error; err != nil {
		return port.Principal{}, fmt.Errorf("find handle: %w", err)
	}
	if n > 0 {
		return port.Principal{}, problem.New(problem.HandleTaken, "the handle is taken")
	}
	if err := db.Model(&AgentRow{}).Where("public_key = ?", e.PublicKey).Count(&n).Error; err != nil {
		return port.Principal{}, fmt.Errorf("find key: %w", err)
	}
	if n > 0 {
		return port.Principal{}, problem.New(problem.Conflict, "the key is registered")
	}
	row := AgentRow{ID: uuid.Must(uuid.NewV7()).String(), KeyID: uuid.Must(uuid.NewV7()).String(), OrgID: e.OrgID,
		OrgName: e.OrgName, Handle: e.Handle, PublicKey: e.PublicKey}
	if row.OrgID == "" {
		row.OrgID = uuid.Must(uuid.NewV7()).String()
	}
	if err := db.Create(&row).Error; err != nil {
		return port.Principal{}, fmt.Errorf("enrol: %w", err)
	}
	return port.Principal{AgentID: row.ID, KeyID: row.KeyID, OrgID: row.OrgID, Handle: row.Handle}, nil
}

// HandleTaken reports whether an enrolled agent holds handle.
func (e Enrolment) HandleTaken(ctx context.Context, handle string) (bool, error) {
	var n int64
	if err := e.DB.WithContext(ctx).Model(&AgentRow{}).Where("handle = ?", handle).Count(&n).Error; err != nil {
		return false, fmt.Errorf("find handle: %w", err)
	}
	return n > 0, nil
}

// Limits is a test double of port.Limits: fixed windows on a Clock, in memory.
type Limits struct {
	Clock *Clock
	mu    sync.Mutex
	hits  map[string]int
}

// Take counts one hit on bucket in the window of now.
func (l *Limits) Take(_ context.Context, bucket string, limit int, window time.Duration) (bool, int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hits == nil {
		l.hits = map[string]int{}
	}
	now := l.Clock.Now()
	start := now.Truncate(window)
	key := fmt.Sprintf("%s@%d", bucket, start.UnixNano())
	l.hits[key]++
	if l.hits[key] <= limit {
		return true, 0, nil
	}
	return false, max(int(start.Add(window).Sub(now).Seconds()), 1), nil
}

// TakeIn is Take, counted as the write is planned: the double counts in memory, so a hit stays
// counted if the plan rolls back. A hit past limit makes the plan refuse at this step.
func (l *Limits) TakeIn(p *write.Plan, bucket string, limit int, window time.Duration, refuse func(retryAfter int) error) {
	if ok, retry, _ := l.Take(context.Background(), bucket, limit, window); !ok {
		p.Refuse(refuse(retry))
	}
}

var (
	_ port.Enrolment = Enrolment{}
	_ port.Limits    = (*Limits)(nil)
)
