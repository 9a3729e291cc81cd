package media

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
)

// SweepEvery is how often the sweeper runs.
const SweepEvery = 5 * time.Minute

// SweepArgs is the periodic sweep of uploads that no job will finish.
type SweepArgs struct{}

// Kind is the job's kind.
func (SweepArgs) Kind() string { return "media_sweep" }

// Sweeper fails the uploads that are still processing long after any attempt of their job could have
// ended: a job River discarded without calling the worker (its last attempt lost with its process),
// or one whose failure could not be recorded. An upload always ends ready or failed.
type Sweeper struct {
	river.WorkerDefaults[SweepArgs]
	db         *gorm.DB
	clock      port.Clock
	stuckAfter time.Duration
	log        *slog.Logger
}

// NewSweeper returns the sweeper.
func NewSweeper(cfg Config, db *gorm.DB, clock port.Clock, log *slog.Logger) *Sweeper {
	return &Sweeper{db: db, clock: clock, stuckAfter: cfg.StuckAfter, log: log}
}

// Work fails every upload processing for longer than the setting allows.
func (s *Sweeper) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	n, err := s.Sweep(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		s.log.WarnContext(ctx, "uploads that no job would finish were failed", "count", n, "failure_code", FailureProcessing)
	}
	return nil
}

// Sweep fails the stuck uploads and returns how many.
func (s *Sweeper) Sweep(ctx context.Context) (int64, error) {
	now := s.clock.Now().UTC()
	res := s.db.WithContext(ctx).Model(&assetRow{}).Where("status = ? AND updated_at < ?", port.AssetProcessing, now.Add(-s.stuckAfter)).
		Updates(map[string]any{"status": port.AssetFailed, "failure_code": FailureProcessing, "updated_at": now})
	if res.Error != nil {
		return 0, fmt.Errorf("sweep stuck uploads: %w", res.Error)
	}
	return res.RowsAffected, nil
}

var _ river.Worker[SweepArgs] = (*Sweeper)(nil)
