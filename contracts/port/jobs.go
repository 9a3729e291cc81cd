package port

import (
	"context"

	"github.com/riverqueue/river"
	"gorm.io/gorm"
)

// Jobs enqueues durable jobs on the host's job runner (the host offers it; modules contribute the
// workers, plugin.Workers).
type Jobs interface {
	// InsertTx enqueues args on tx, the caller's write transaction, so that the job exists exactly
	// when the write commits: a rolled-back write leaves no job, and a committed one is never without
	// its job.
	InsertTx(ctx context.Context, tx *gorm.DB, args river.JobArgs, opts *river.InsertOpts) error
}
