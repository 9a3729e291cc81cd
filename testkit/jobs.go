package testkit

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/svcforum/svc/contracts/write"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
)

// JobRow is the row Jobs writes on the caller's transaction for each job inserted: it exists exactly
// when the write committed, as a River job does. Migrate its table with the module's (db.AutoMigrate).
type JobRow struct {
	ID          int64  `gorm:"primaryKey;autoIncrement"`
	Kind        string `gorm:"size:64"`
	Args        string
	MaxAttempts int
}

// TableName is the jobs' table.
func (JobRow) TableName() string { return "testkit_jobs" }

// Jobs is a recording test double of port.Jobs, for a module's own tests: the host's runner (River)
// is tested in host, and a module's test runs its worker on the recorded job itself.
type Jobs struct{}

// InsertTx writes the job's row on tx.
func (Jobs) InsertTx(ctx context.Context, tx *gorm.DB, args river.JobArgs, opts *river.InsertOpts) error {
	row, err := jobRow(args, opts)
	if err != nil {
		return err
	}
	if err := tx.WithContext(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("record test job: %w", err)
	}
	return nil
}

// InsertIn adds the job's row to p, as one more step of the planned write.
func (Jobs) InsertIn(p *write.Plan, args river.JobArgs, opts *river.InsertOpts) error {
	row, err := jobRow(args, opts)
	if err != nil {
		return err
	}
	p.Add(p.Build().Create(&row), 1, nil)
	return nil
}

func jobRow(args river.JobArgs, opts *river.InsertOpts) (JobRow, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return JobRow{}, fmt.Errorf("encode job args: %w", err)
	}
	row := JobRow{Kind: args.Kind(), Args: string(raw)}
	if opts != nil {
		row.MaxAttempts = opts.MaxAttempts
	}
	return row, nil
}

// Job decodes a recorded job as a River job at attempt (1 is the first), for calling a worker's Work.
func Job[T river.JobArgs](row JobRow, attempt int) (*river.Job[T], error) {
	var args T
	if err := json.Unmarshal([]byte(row.Args), &args); err != nil {
		return nil, fmt.Errorf("decode job args: %w", err)
	}
	j := &river.Job[T]{Args: args}
	j.JobRow = &rivertype.JobRow{ID: row.ID, Kind: row.Kind, Attempt: attempt, MaxAttempts: row.MaxAttempts, EncodedArgs: []byte(row.Args)}
	return j, nil
}

var _ port.Jobs = Jobs{}
