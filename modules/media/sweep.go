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
// or one whose failure could not be recorded. An upload always ends ready or failed, and a failed one
// keeps no object: the sweeper deletes what no job will.
type Sweeper struct {
	river.WorkerDefaults[SweepArgs]
	db         *gorm.DB
	storage    Storage
	clock      port.Clock
	stuckAfter time.Duration
	meter      port.Meter
	log        *slog.Logger
}

// NewSweeper returns the sweeper; meter refunds the uploads it fails (processing_error, the service's
// fault).
func NewSweeper(cfg Config, db *gorm.DB, storage Storage, clock port.Clock, meter port.Meter, log *slog.Logger) *Sweeper {
	return &Sweeper{db: db, storage: storage, clock: clock, stuckAfter: cfg.StuckAfter, meter: meter, log: log}
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

// Sweep fails the stuck uploads, deletes their objects, and returns how many it failed.
func (s *Sweeper) Sweep(ctx context.Context) (int64, error) {
	now := s.clock.Now().UTC()
	stuck := s.db.WithContext(ctx).Model(&assetRow{}).Where("status = ? AND updated_at < ?", port.AssetProcessing, now.Add(-s.stuckAfter))
	var ids []string
	if err := stuck.Pluck("id", &ids).Error; err != nil {
		return 0, fmt.Errorf("find stuck uploads: %w", err)
	}
	var failed int64
	for _, id := range ids {
		// Still stuck: a job may have finished it since it was found. Its charge is refunded with it.
		ok, err := failUpload(ctx, s.db, s.meter, id, FailureProcessing, now, func(q *gorm.DB) *gorm.DB {
			return q.Where("updated_at < ?", now.Add(-s.stuckAfter))
		})
		if err != nil {
			return failed, err
		}
		if ok {
			failed++
			dropFiles(ctx, s.storage, s.log, id)
		}
	}
	return failed, nil
}

var _ river.Worker[SweepArgs] = (*Sweeper)(nil)
