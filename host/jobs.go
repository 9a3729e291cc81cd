package host

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"go.uber.org/fx"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/database"
)

// jobsModule names the host's own migrations: River's tables.
const jobsModule = "jobs"

// riverSchemaVersion is the version of River's schema this build migrates to (River v0.51).
const riverSchemaVersion = 8

// JobsSettings tune the job runner.
type JobsSettings struct {
	Workers      int           // jobs worked at once by one replica
	PollInterval time.Duration // how often a replica looks for new jobs
	Timeout      time.Duration // the longest one attempt of a job may run
	RescueAfter  time.Duration // a job still running this long after it started is taken to be lost and retried
}

// Jobs is the host's job runner: one River client over the service's database (PostgreSQL through
// database/sql, or SQLite), with the workers the modules contribute. It offers port.Jobs.
type Jobs struct {
	client  *river.Client[*sql.Tx]
	working bool // some module contributed workers: the runner works jobs where the service serves
	db      *sql.DB
	queues  []string
	failed  *prometheus.CounterVec
}

type jobsParams struct {
	fx.In
	Config  Config
	DB      *gorm.DB
	Log     *slog.Logger
	Workers []plugin.Workers `group:"svc.workers"`
}

// newJobs builds the runner; it works nothing until startJobs (the serve command) starts it, so a
// one-off command can insert jobs without working any.
func newJobs(p jobsParams) (*Jobs, error) {
	sqlDB, err := p.DB.DB()
	if err != nil {
		return nil, err
	}
	workers := river.NewWorkers()
	sets := slices.Clone(p.Workers)
	slices.SortFunc(sets, func(a, b plugin.Workers) int { return cmp.Compare(a.Module, b.Module) })
	var periodic []*river.PeriodicJob
	s := p.Config.Jobs
	queues := map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: s.Workers}}
	for _, w := range sets {
		if err := w.Register(workers); err != nil {
			return nil, fmt.Errorf("module %s: register job workers: %w", w.Module, err)
		}
		periodic = append(periodic, w.Periodic...)
		for name, n := range w.Queues {
			if _, taken := queues[name]; taken || n < 1 {
				return nil, fmt.Errorf("module %s: queue %q is taken or has no workers (%d)", w.Module, name, n)
			}
			queues[name] = river.QueueConfig{MaxWorkers: n}
		}
	}
	cfg := &river.Config{
		Logger:               p.Log.With("component", "jobs"),
		JobTimeout:           s.Timeout,
		RescueStuckJobsAfter: s.RescueAfter,
		FetchPollInterval:    s.PollInterval,
		FetchCooldown:        min(s.PollInterval, 100*time.Millisecond),
	}
	if len(sets) > 0 {
		cfg.Workers = workers
		cfg.PeriodicJobs = periodic
		cfg.Queues = queues
	}
	client, err := river.NewClient(jobsDriver(p.DB, sqlDB), cfg)
	if err != nil {
		return nil, fmt.Errorf("job runner: %w", err)
	}
	return &Jobs{client: client, working: len(sets) > 0, db: sqlDB, queues: slices.Sorted(maps.Keys(queues)), failed: newJobFailures()}, nil
}

func jobsDriver(db *gorm.DB, sqlDB *sql.DB) riverdriver.Driver[*sql.Tx] {
	if database.Dialect(db) == database.Postgres {
		return riverdatabasesql.New(sqlDB)
	}
	return riversqlite.New(sqlDB)
}

// InsertTx enqueues args on tx, the caller's write transaction (port.Jobs).
func (j *Jobs) InsertTx(ctx context.Context, tx *gorm.DB, args river.JobArgs, opts *river.InsertOpts) error {
	sqlTx, ok := tx.Statement.ConnPool.(*sql.Tx)
	if !ok {
		return errors.New("insert job: not inside a transaction")
	}
	if _, err := j.client.InsertTx(ctx, sqlTx, args, opts); err != nil {
		return fmt.Errorf("insert %s job: %w", args.Kind(), err)
	}
	return nil
}

// startJobs works jobs from start to stop, where the service serves. Stopping lets running jobs finish
// within the shutdown timeout, then cancels them: they are retried later, here or on another replica.
func startJobs(lc fx.Lifecycle, j *Jobs, cfg Config) {
	if !j.working {
		return
	}
	stopCounting := func() {}
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			stopCounting = j.countFailures()
			if err := j.client.Start(context.WithoutCancel(ctx)); err != nil {
				stopCounting()
				return err
			}
			return nil
		},
		OnStop: func(ctx context.Context) error {
			defer stopCounting()
			soft, cancel := context.WithTimeout(ctx, cfg.ShutdownTimeout)
			defer cancel()
			if err := j.client.Stop(soft); err == nil {
				return nil
			}
			return j.client.StopAndCancel(ctx)
		},
	})
}

// newJobFailures counts the failed attempts of jobs.
func newJobFailures() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "svc_job_failures_total",
		Help: `Failed attempts of durable jobs, by kind and outcome: "retryable" (it runs again later) or "discarded" (its last attempt).`,
	}, []string{"kind", "outcome"})
}

// countFailures counts the failures River reports until stop is called (after the runner stopped).
func (j *Jobs) countFailures() (stop func()) {
	done := make(chan struct{})
	events, cancel := j.client.Subscribe(river.EventKindJobFailed)
	go func() {
		defer close(done)
		for ev := range events {
			if ev.Job != nil {
				j.failed.WithLabelValues(ev.Job.Kind, string(ev.Job.State)).Inc()
			}
		}
	}()
	return func() {
		cancel() // closes events, unless the runner's stop already did
		<-done
	}
}

// collectors are the job runner's metrics: the failures, and the queue's depth read from River's
// table at each scrape.
func (j *Jobs) collectors() []prometheus.Collector {
	return []prometheus.Collector{j.failed, queueDepth{j: j}}
}

// queueDepth counts the jobs not yet finished, by queue and state, with one grouped count over River's
// table (its fetch index leads with state and queue).
type queueDepth struct{ j *Jobs }

var (
	queueDepthDesc = prometheus.NewDesc("svc_job_queue_depth",
		"Durable jobs not finished yet, by queue and state (available, pending, retryable, running, scheduled).",
		[]string{"queue", "state"}, nil)
	unfinishedStates = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
		rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled}
)

func (q queueDepth) Describe(ch chan<- *prometheus.Desc) { ch <- queueDepthDesc }

func (q queueDepth) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts := map[[2]string]int64{}
	for _, queue := range q.j.queues { // the queues this replica works show 0 rather than nothing
		for _, s := range unfinishedStates {
			counts[[2]string{queue, string(s)}] = 0
		}
	}
	rows, err := q.j.db.QueryContext(ctx, `SELECT queue, state, COUNT(*) FROM river_job
WHERE state IN ('available', 'pending', 'retryable', 'running', 'scheduled') GROUP BY queue, state`)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(queueDepthDesc, fmt.Errorf("count jobs: %w", err))
		return
	}
	defer rows.Close()
	for rows.Next() {
		var queue, state string
		var n int64
		if err := rows.Scan(&queue, &state, &n); err != nil {
			ch <- prometheus.NewInvalidMetric(queueDepthDesc, fmt.Errorf("count jobs: %w", err))
			return
		}
		counts[[2]string{queue, state}] = n
	}
	if err := rows.Err(); err != nil {
		ch <- prometheus.NewInvalidMetric(queueDepthDesc, fmt.Errorf("count jobs: %w", err))
		return
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}

// jobsMigrations are River's tables as the host's own migration steps, one per version of River's
// schema, so they apply once, in order, under the migration lock like every module's. River applies
// each version in a transaction of its own (PostgreSQL needs the enum value version 4 adds committed
// before version 6 uses it), and a version already applied is not applied again, so a step interrupted
// before its history row is written is simply run again. A River upgrade that adds a version adds a
// step.
func jobsMigrations(db *gorm.DB) plugin.Migrations {
	step := func(version int) *gormigrate.Migration {
		return &gormigrate.Migration{ID: fmt.Sprintf("jobs_%04d_river_%d", version, version), Migrate: func(tx *gorm.DB) error {
			sqlDB, err := db.DB()
			if err != nil {
				return err
			}
			m, err := rivermigrate.New(jobsDriver(db, sqlDB), nil)
			if err != nil {
				return fmt.Errorf("migrate jobs: %w", err)
			}
			if _, err := m.Migrate(tx.Statement.Context, rivermigrate.DirectionUp, &rivermigrate.MigrateOpts{TargetVersion: version}); err != nil {
				return fmt.Errorf("migrate jobs to River's schema %d: %w", version, err)
			}
			return nil
		}}
	}
	var steps []*gormigrate.Migration
	for v := 1; v <= riverSchemaVersion; v++ {
		steps = append(steps, step(v))
	}
	return plugin.Migrations{Module: jobsModule, Steps: steps, OwnTransactions: true}
}

var _ port.Jobs = (*Jobs)(nil)
