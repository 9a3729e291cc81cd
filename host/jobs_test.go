package host

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/riverqueue/river"
	"go.uber.org/fx"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
)

// echoArgs is a test job: it reports its number to the test.
type echoArgs struct {
	N int `json:"n"`
}

func (echoArgs) Kind() string { return "host_test_echo" }

type echoWorker struct {
	river.WorkerDefaults[echoArgs]
	done chan<- int
}

func (w echoWorker) Work(_ context.Context, j *river.Job[echoArgs]) error {
	w.done <- j.Args.N
	return nil
}

// A module's job, inserted in its write's transaction, is worked by the serving replica once the
// write commits; a write that rolls back leaves no job. On both databases.
func TestJobsInsertedWithTheirWrite(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		cfg := testConfig(t, dialect)
		cfg.Jobs.PollInterval = 50 * time.Millisecond
		done := make(chan int, 4)
		var jobs port.Jobs
		var db *gorm.DB
		var once sync.Once
		worker := fx.Provide(plugin.AsWorkers(func() plugin.Workers {
			return plugin.Workers{Module: "jobtest", Register: func(w *river.Workers) error {
				var err error
				once.Do(func() { err = river.AddWorkerSafely(w, echoWorker{done: done}) })
				return err
			}}
		}))
		start(t, cfg, discoveryOnly(t), worker, fx.Populate(&jobs, &db))

		insert := func(n int, fail bool) error {
			return db.Transaction(func(tx *gorm.DB) error {
				if err := jobs.InsertTx(context.Background(), tx, echoArgs{N: n}, nil); err != nil {
					return err
				}
				if fail {
					return errors.New("the write failed")
				}
				return nil
			})
		}
		if err := insert(1, true); err == nil {
			t.Fatal("a failed write reported success")
		}
		if err := insert(2, false); err != nil {
			t.Fatalf("insert: %v", err)
		}
		select {
		case n := <-done:
			if n != 2 {
				t.Fatalf("worked job %d, want 2 (the rolled-back write's job must not exist)", n)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the committed write's job was not worked")
		}

		// A planned write's job (InsertIn) is a statement of its plan: a plan refused after it leaves no
		// job, a committed one is worked, and its row is the one River's own insert makes.
		planned := func(n int, refuse bool) error {
			_, _, err := database.Write(context.Background(), db, func(p *write.Plan) (int, any, error) {
				if err := jobs.InsertIn(p, echoArgs{N: n}, nil); err != nil {
					return 0, nil, err
				}
				if refuse {
					p.Refuse(errors.New("the write was refused"))
				}
				return http.StatusCreated, struct{}{}, nil
			})
			return err
		}
		if err := planned(3, true); err == nil {
			t.Fatal("a refused planned write reported success")
		}
		if err := planned(4, false); err != nil {
			t.Fatalf("planned insert: %v", err)
		}
		select {
		case n := <-done:
			if n != 4 {
				t.Fatalf("worked job %d, want 4 (the refused plan's job must not exist)", n)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the planned write's job was not worked")
		}
		// The runner records the completion a moment after the work (it batches them).
		type jobRow struct {
			State, Queue, Kind    string
			MaxAttempts, Priority int
			Tags, Metadata        string
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			var rows []jobRow
			if err := db.Raw("SELECT state, queue, kind, max_attempts, priority, CAST(tags AS TEXT) AS tags, CAST(metadata AS TEXT) AS metadata FROM river_job WHERE kind = ? ORDER BY id",
				echoArgs{}.Kind()).Scan(&rows).Error; err != nil {
				t.Fatal(err)
			}
			if len(rows) == 2 && rows[0].State == "completed" && rows[1].State == "completed" {
				if dialect == "sqlite" {
					// Both are River's insert there, which gives each its own nonce in metadata.
					rows[0].Metadata, rows[1].Metadata = "", ""
				}
				if rows[0] != rows[1] {
					t.Fatalf("the planned job's row %+v differs from River's insert %+v", rows[1], rows[0])
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("jobs %+v, want two completed", rows)
			}
		}
	})
}

// A planned job takes River's defaults and the options a statement can carry; the others are refused
// rather than dropped.
func TestPlannedJobOptions(t *testing.T) {
	o, err := plannedOptions(echoArgs{}, &river.InsertOpts{MaxAttempts: 7, Queue: "media"})
	if err != nil || o.MaxAttempts != 7 || o.Queue != "media" || o.Priority != river.PriorityDefault {
		t.Fatalf("planned options %+v, %v", o, err)
	}
	if o, err := plannedOptions(echoArgs{}, nil); err != nil || o.MaxAttempts != river.MaxAttemptsDefault || o.Queue != river.QueueDefault {
		t.Fatalf("default options %+v, %v", o, err)
	}
	for _, opts := range []river.InsertOpts{
		{UniqueOpts: river.UniqueOpts{ByArgs: true}}, {Tags: []string{"a"}}, {ScheduledAt: time.Now().Add(time.Hour)}, {Pending: true},
		{Metadata: []byte(`{"a":1}`)}, {Priority: 5}, {MaxAttempts: -1},
	} {
		if _, err := plannedOptions(echoArgs{}, &opts); err == nil {
			t.Errorf("options %+v were taken for a planned job", opts)
		}
	}
}

// blockArgs is a test job that runs until it is cancelled.
type blockArgs struct{}

func (blockArgs) Kind() string { return "host_test_block" }

type blockWorker struct {
	river.WorkerDefaults[blockArgs]
	started   chan<- struct{}
	cancelled chan<- struct{}
}

func (w blockWorker) Work(ctx context.Context, _ *river.Job[blockArgs]) error {
	w.started <- struct{}{}
	<-ctx.Done()
	close(w.cancelled)
	return ctx.Err()
}

// At shutdown the listeners stop taking connections before the job runner waits for its running jobs:
// a job that runs to the shutdown timeout does not keep the listeners open (they took new requests
// while readiness said 503, and had what was left of the stop's time to drain).
func TestListenersStopBeforeRunningJobs(t *testing.T) {
	cfg := testConfig(t, "sqlite")
	cfg.Jobs.PollInterval = 50 * time.Millisecond
	cfg.ShutdownTimeout = 3 * time.Second
	started, cancelled := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	worker := fx.Provide(plugin.AsWorkers(func() plugin.Workers {
		return plugin.Workers{Module: "test", Register: func(w *river.Workers) error {
			var err error
			once.Do(func() { err = river.AddWorkerSafely(w, blockWorker{started: started, cancelled: cancelled}) })
			return err
		}}
	}))
	var ls *Listeners
	var jobs port.Jobs
	var db *gorm.DB
	app := fx.New(Serve(cfg, testLogger(t), allModules(t)), worker, fx.Populate(&ls, &jobs, &db), fx.NopLogger)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := db.Transaction(func(tx *gorm.DB) error { return jobs.InsertTx(context.Background(), tx, blockArgs{}, nil) }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not start")
	}
	url := "http://" + ls.Addr(ListenerPublic) + "/health/live"
	stopped := make(chan error, 1)
	go func() { stopped <- app.Stop(context.Background()) }()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Second}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		res, err := client.Get(url)
		if err == nil {
			res.Body.Close()
			if time.Now().After(deadline) {
				t.Fatal("the listener still takes connections")
			}
			continue
		}
		select {
		case <-cancelled:
			t.Fatal("the listener stopped only after the running job was cancelled: it waited for the job runner")
		default: // the job still runs: the listeners went first
		}
		break
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}
