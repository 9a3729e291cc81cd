package host

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/svcforum/svc/contracts/write"

	"github.com/riverqueue/river"
	"gorm.io/gorm"
)

// plannedJobSQL inserts one job into River's table (its schema version riverSchemaVersion) as River's
// own insert does for a job without unique, tag, metadata or schedule options: the other columns take
// their defaults (state available, scheduled and created now). Writing the row is how River's clients
// in other languages insert jobs; it makes the job one more statement of a planned write's batch. No
// notification is sent: the runner's driver (database/sql) polls, it does not listen.
const plannedJobSQL = `INSERT INTO river_job (args, kind, max_attempts, priority, queue) VALUES (CAST(? AS jsonb), ?, ?, ?, ?)`

// InsertIn adds the insertion of a job of args to p (port.Jobs): on PostgreSQL a statement of the
// plan's batch, on SQLite River's own InsertTx on the plan's transaction.
func (j *Jobs) InsertIn(p *write.Plan, args river.JobArgs, opts *river.InsertOpts) error {
	o, err := plannedOptions(args, opts)
	if err != nil {
		return fmt.Errorf("plan %s job: %w", args.Kind(), err)
	}
	if p.Dialect() != "postgres" {
		p.Append(write.Step{SQL: "-- River's insert", Rows: write.AnyRows, Run: func(tx *gorm.DB) (bool, error) {
			return true, j.InsertTx(tx.Statement.Context, tx, args, &o)
		}})
		return nil
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("plan %s job: encode its args: %w", args.Kind(), err)
	}
	p.Exec(1, nil, plannedJobSQL, string(raw), args.Kind(), o.MaxAttempts, o.Priority, o.Queue)
	return nil
}

// plannedOptions are the options River would insert args with, given opts, with its defaults filled
// in (the runner's config sets no default of its own); an option a planned job cannot carry is an
// error rather than silently dropped.
func plannedOptions(args river.JobArgs, opts *river.InsertOpts) (river.InsertOpts, error) {
	var own, given river.InsertOpts
	if a, ok := args.(river.JobArgsWithInsertOpts); ok {
		own = a.InsertOpts()
	}
	if opts != nil {
		given = *opts
	}
	for _, o := range []river.InsertOpts{own, given} {
		if !o.ScheduledAt.IsZero() || o.Pending || len(o.Tags) > 0 || len(o.Metadata) > 0 || !reflect.ValueOf(o.UniqueOpts).IsZero() {
			return river.InsertOpts{}, errors.New("a planned job takes only MaxAttempts, Priority and Queue; insert it with InsertTx")
		}
	}
	o := river.InsertOpts{
		MaxAttempts: cmp.Or(given.MaxAttempts, own.MaxAttempts, river.MaxAttemptsDefault),
		Priority:    cmp.Or(given.Priority, own.Priority, river.PriorityDefault),
		Queue:       cmp.Or(given.Queue, own.Queue, river.QueueDefault),
	}
	// River's own insert checks these; the table's constraints would only fail the whole write.
	if o.Priority < 1 || o.Priority > 4 || o.MaxAttempts < 1 || len(o.Queue) > 127 {
		return river.InsertOpts{}, fmt.Errorf("a job's priority is 1..4 (%d), its max attempts at least 1 (%d), its queue's name under 128 bytes", o.Priority, o.MaxAttempts)
	}
	return o, nil
}
