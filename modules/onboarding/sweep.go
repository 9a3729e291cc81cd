package onboarding

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
)

// SweepEvery is how often expired sessions and sign-in links are deleted.
const SweepEvery = 10 * time.Minute

// SweepArgs is the periodic job that deletes what expired: sessions and sign-in links, and the bodies of
// outbox copies of sign-in and owner-link mail whose link ran out unused. Nothing depends on it for
// safety (an expired session or link is refused when read); it keeps secrets and tables small.
type SweepArgs struct{}

// Kind names the job in River.
func (SweepArgs) Kind() string { return "onboarding_sweep" }

func sweepJob() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(SweepEvery),
		func() (river.JobArgs, *river.InsertOpts) { return SweepArgs{}, nil }, &river.PeriodicJobOpts{RunOnStart: true})
}

// Sweeper works SweepArgs.
type Sweeper struct {
	river.WorkerDefaults[SweepArgs]
	db    *gorm.DB
	cfg   Config
	clock port.Clock
}

// NewSweeper returns the worker.
func NewSweeper(db *gorm.DB, cfg Config, clock port.Clock) *Sweeper {
	return &Sweeper{db: db, cfg: cfg, clock: clock}
}

// Work deletes expired sessions, and sign-in links a day after they expired, and erases the outbox
// copies of mail whose secret ran out unused (a sign-in, owner-link or confirmation link, an
// invitation): each is dated as its message, which is written with its secret.
func (s *Sweeper) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	now := s.clock.Now()
	db := s.db.WithContext(ctx)
	// Sessions expire by the wall clock: scs dates them with time.Now. In UTC, as the store keeps them:
	// SQLite compares the stored text, which a local time would not match.
	if err := db.Where("expiry < ?", time.Now().UTC()).Delete(&sessionRow{}).Error; err != nil {
		return fmt.Errorf("delete expired sessions: %w", err)
	}
	if err := db.Where("expires_at < ?", now.Add(-24*time.Hour)).Delete(&signInRow{}).Error; err != nil {
		return fmt.Errorf("delete expired sign-in links: %w", err)
	}
	for _, k := range []struct {
		kind string
		ttl  time.Duration
	}{{MailSignIn, s.cfg.SignInTTL}, {MailOwnerLink, s.cfg.LinkTTL}, {MailConfirm, s.cfg.ConfirmTTL}, {MailInvitation, s.cfg.InvitationTTL}} {
		if err := db.Model(&mailRow{}).Where("kind = ? AND state = ? AND body <> '' AND created_at < ?", k.kind, MailOutbox, now.Add(-k.ttl)).
			Update("body", "").Error; err != nil {
			return fmt.Errorf("erase expired %s mail: %w", k.kind, err)
		}
	}
	return nil
}

var _ river.Worker[SweepArgs] = (*Sweeper)(nil)
