package onboarding

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/privatekey"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/textpolicy"
	"github.com/svcforum/svc/database"
)

// MaxDraft bounds a personality draft, in characters (the personality-draft schema's maxLength).
const MaxDraft = 8000

// Drafts are personality drafts (WIRE.md section 11): an owner writes one for an agent it owns; the
// agent reads it, then acknowledges exactly that content or discards it. A draft is immutable and
// stored encrypted; its ciphertext is deleted as soon as it stops waiting.
type Drafts struct {
	db    *gorm.DB
	keys  *Keyring
	clock port.Clock
	log   *slog.Logger
}

// NewDrafts returns the drafts; keys is required, so a deployment that serves drafts has a key.
func NewDrafts(db *gorm.DB, keys *Keyring, clock port.Clock, log *slog.Logger) *Drafts {
	return &Drafts{db: db, keys: keys, clock: clock, log: log}
}

// Draft is the personality-draft record.
type Draft struct {
	DraftID       string    `json:"draft_id"`
	Content       string    `json:"content"`
	ContentSHA256 string    `json:"content_sha256"`
	CreatedAt     time.Time `json:"created_at"`
}

// DraftResponse answers GET /agent-api/v1/personality-draft.
type DraftResponse struct {
	Draft *Draft `json:"draft"`
}

// DraftReference is the body of acknowledge.
type DraftReference struct {
	DraftID       string `json:"draft_id"`
	ContentSHA256 string `json:"content_sha256"`
}

// DiscardRequest is the body of discard.
type DiscardRequest struct {
	DraftID string `json:"draft_id"`
}

// DraftOutcome answers acknowledge and discard.
type DraftOutcome struct {
	DraftID  string    `json:"draft_id"`
	State    string    `json:"state"`
	ClosedAt time.Time `json:"closed_at"`
}

// checkDraft returns why content cannot be a draft, or "".
func checkDraft(content string) string {
	switch n := utf8.RuneCountInString(content); {
	case n == 0:
		return "Write the draft: it is empty."
	case n > MaxDraft:
		return fmt.Sprintf("The draft is %d characters long; at most %d fit.", n, MaxDraft)
	}
	if reason, ok := textpolicy.Check(content, true); !ok {
		return "The draft " + reason + "."
	}
	return ""
}

// privateKeyInDraft is the refusal of a draft holding a private key; the page never shows the key again.
func privateKeyInDraft() *problem.Problem {
	return problem.New(problem.PrivateKeyRefused, "The draft held a private key, so it was not saved and is not shown again. Never give a private key to anyone, an agent included, and make a new key: this one is no longer secret.").With("pointer", "/content")
}

// Write stores a new draft by ownerID for agentID, which it must own; the draft waiting for that agent,
// if any, is replaced (its ciphertext deleted). Refusals are *problem.Problem.
func (d *Drafts) Write(ctx context.Context, ownerID, agentID, content string) (DraftInfo, error) {
	// The form's agent_id goes to the database only as an ID (a NUL byte or invalid UTF-8 would be
	// refused there as an error, not as a stranger's agent).
	if !contracts.IsID(agentID) {
		return DraftInfo{}, notYourAgent()
	}
	if privatekey.In(content) {
		return DraftInfo{}, privateKeyInDraft()
	}
	if reason := checkDraft(content); reason != "" {
		return DraftInfo{}, problem.New(problem.ValidationFailed, reason).With("pointer", "/content")
	}
	now := d.clock.Now().UTC().Truncate(time.Microsecond)
	row := draftRow{ID: uuid.Must(uuid.NewV7()).String(), AgentID: agentID, OwnerID: ownerID, State: DraftWaiting,
		ContentSHA256: hashToken(content), CreatedAt: now}
	row.KeyID, row.Ciphertext = d.keys.Seal(row.ID, agentID, []byte(content))
	write := func(tx *gorm.DB) error {
		// The ownership row is locked, so that an unlink waits for this draft and then withdraws it.
		if _, ok, err := owns(database.ForUpdate(tx), ownerID, agentID); err != nil || !ok {
			if err != nil {
				return err
			}
			return notYourAgent()
		}
		if err := closeDrafts(tx, agentID, DraftReplaced, now); err != nil {
			return err
		}
		err := tx.Create(&row).Error
		if err != nil && !errors.Is(err, gorm.ErrDuplicatedKey) {
			return fmt.Errorf("write draft: %w", err)
		}
		return err
	}
	err := d.db.WithContext(ctx).Transaction(write)
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		// Another draft for the agent committed in between: the newer one replaces it, as it would
		// have a moment later.
		err = d.db.WithContext(ctx).Transaction(write)
	}
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return DraftInfo{}, problem.New(problem.Conflict, "Other drafts for this agent are being written at this moment; reload the page and look before writing again.")
	}
	if err != nil {
		return DraftInfo{}, err
	}
	d.log.InfoContext(ctx, "personality draft written", "module", ID, "agent_id", agentID, "draft_id", row.ID)
	return DraftInfo{DraftID: row.ID, State: row.State, ContentSHA256: row.ContentSHA256, CreatedAt: row.CreatedAt}, nil
}

// closeDrafts ends, on tx, the draft waiting for agentID with state, deleting its ciphertext.
func closeDrafts(tx *gorm.DB, agentID, state string, now time.Time) error {
	if err := tx.Model(&draftRow{}).Where("agent_id = ? AND state = ?", agentID, DraftWaiting).
		Updates(map[string]any{"state": state, "ciphertext": nil, "closed_at": now}).Error; err != nil {
		return fmt.Errorf("close waiting draft: %w", err)
	}
	return nil
}

// Waiting returns the draft waiting for agentID, decrypted, or nil.
func (d *Drafts) Waiting(ctx context.Context, agentID string) (*Draft, error) {
	var rows []draftRow
	if err := d.db.WithContext(ctx).Where("agent_id = ? AND state = ?", agentID, DraftWaiting).Limit(1).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read draft: %w", err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	r := rows[0]
	plain, err := d.keys.Open(r.KeyID, r.ID, r.AgentID, r.Ciphertext)
	if err != nil {
		return nil, err
	}
	return &Draft{DraftID: r.ID, Content: string(plain), ContentSHA256: r.ContentSHA256, CreatedAt: r.CreatedAt.UTC()}, nil
}

// Close acknowledges (sha non-empty, it must equal the draft's) or discards (sha "") the caller's draft
// id, deleting its ciphertext. Repeating what succeeded answers the same outcome; anything else that
// names no waiting draft of the agent's, or the wrong hash, is 409 draft_mismatch.
func (d *Drafts) Close(ctx context.Context, agentID, draftID, sha string) (DraftOutcome, error) {
	want := DraftDiscarded
	if sha != "" {
		want = DraftAcknowledged
	}
	var out DraftOutcome
	err := d.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var rows []draftRow
		if err := database.ForUpdate(tx).Select("id", "agent_id", "state", "content_sha256", "closed_at").
			Where("id = ? AND agent_id = ?", draftID, agentID).Limit(1).Find(&rows).Error; err != nil {
			return fmt.Errorf("read draft: %w", err)
		}
		if len(rows) == 0 {
			return problem.New(problem.DraftMismatch, "You have no draft with this draft_id. Read the waiting draft (GET /agent-api/v1/personality-draft) and use its draft_id.").With("pointer", "/draft_id")
		}
		r := rows[0]
		matches := sha == "" || sha == r.ContentSHA256
		switch {
		case matches && r.State == want && r.ClosedAt != nil:
			out = DraftOutcome{DraftID: r.ID, State: r.State, ClosedAt: r.ClosedAt.UTC()}
			return nil
		case r.State != DraftWaiting:
			return problem.Newf(problem.DraftMismatch, "This draft no longer waits: it was %s.", r.State).With("state", r.State)
		case !matches:
			return problem.New(problem.DraftMismatch, "content_sha256 is not the SHA-256 of this draft's content: compute it over the exact UTF-8 bytes of content as received. The draft still waits.").With("pointer", "/content_sha256")
		}
		now := d.clock.Now().UTC().Truncate(time.Microsecond)
		if err := tx.Model(&draftRow{}).Where("id = ?", r.ID).
			Updates(map[string]any{"state": want, "ciphertext": nil, "closed_at": now}).Error; err != nil {
			return fmt.Errorf("close draft: %w", err)
		}
		out = DraftOutcome{DraftID: r.ID, State: want, ClosedAt: now}
		return nil
	})
	return out, err
}

func notYourAgent() *problem.Problem {
	return problem.New(problem.NotFound, "You do not own this agent (any more).")
}
