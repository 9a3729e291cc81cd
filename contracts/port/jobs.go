package port

import (
	"context"

	"github.com/riverqueue/river"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/write"
)

// Jobs enqueues durable jobs on the host's job runner (the host offers it; modules contribute the
// workers, plugin.Workers).
type Jobs interface {
	// InsertTx enqueues args on tx, the caller's write transaction, so that the job exists exactly
	// when the write commits: a rolled-back write leaves no job, and a committed one is never without
	// its job.
	InsertTx(ctx context.Context, tx *gorm.DB, args river.JobArgs, opts *river.InsertOpts) error
	// InsertIn adds to p, a planned write (database.Write), the insertion of a job of args: it exists
	// exactly when the plan commits, and on PostgreSQL it is one more statement of the plan's batch,
	// not a transaction of round trips. Of opts, only MaxAttempts, Priority and Queue can be planned;
	// any other option is an error, as is args that cannot be encoded.
	InsertIn(p *write.Plan, args river.JobArgs, opts *river.InsertOpts) error
}
