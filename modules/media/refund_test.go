package media_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/media"
	"github.com/svcforum/svc/testkit"
)

// refunds returns the refunds committed so far (the meter writes them on the failing transaction), by
// upload.
func (w *world) refunds(t testing.TB) map[string]testkit.RefundRow {
	t.Helper()
	var rows []testkit.RefundRow
	if err := w.db.Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	out := map[string]testkit.RefundRow{}
	for _, r := range rows {
		if r.Operation != port.OpMediaUpload {
			t.Errorf("a refund of %s", r.Operation)
		}
		out[r.ResourceID] = r
	}
	return out
}

// uploadFor uploads file as alice and returns the asset's id; name says which upload failed.
func (w *world) uploadFor(t testing.TB, name string, file []byte) string {
	t.Helper()
	ct, body := form(t, file, billing...)
	r := w.upload(t, alice, ct, body)
	if r.Status != http.StatusAccepted {
		t.Fatalf("%s: %d %s", name, r.Status, r.Body)
	}
	return r.JSON(t)["asset_id"].(string)
}

// An upload that fails through the service's fault (processing_error, storage_unavailable) has its
// charge refunded in the transaction that fails it, once; an undecodable one keeps its charge; and
// the job retried after the refund (River runs a job again when its completion was not recorded)
// finds the upload failed and refunds nothing more.
func TestFailedUploadsAreRefundedOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w := newWorld(t, dialect)
		ids := map[string]string{}
		for _, name := range []string{"truncated", "lost", "panics"} {
			file := testkit.Truncated(t)
			if name != "truncated" {
				file = testkit.JPEG(t, 16, 16)
			}
			ids[name] = w.uploadFor(t, name, file)
		}
		if err := os.Remove(filepath.Join(w.dir, "originals", ids["lost"])); err != nil {
			t.Fatal(err)
		}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		p := media.NewProcessor(w.db, panicStorage{w.storage, ids["panics"]}, testkit.NewClock(testkit.T0), w.meter, log)
		run := func(attempt int) {
			t.Helper()
			var rows []testkit.JobRow
			if err := w.db.Order("id").Find(&rows).Error; err != nil {
				t.Fatal(err)
			}
			for _, row := range rows {
				job, err := testkit.Job[media.ProcessArgs](row, attempt)
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Work(context.Background(), job); err != nil && !errors.As(err, new(*river.JobCancelError)) {
					t.Fatalf("job %s: %v", job.Args.AssetID, err)
				}
			}
		}
		run(1)
		want := map[string]string{ids["lost"]: media.FailureStorage, ids["panics"]: media.FailureProcessing}
		check := func(when string) {
			t.Helper()
			got := w.refunds(t)
			if len(got) != len(want) {
				t.Fatalf("%s: refunds %+v, want those of the lost and the panicking uploads", when, got)
			}
			for id, code := range want {
				if got[id].Reason != code {
					t.Errorf("%s: the refund of %s: %+v, want reason %s", when, id, got[id], code)
				}
			}
			if _, ok := got[ids["truncated"]]; ok {
				t.Errorf("%s: the undecodable upload was refunded", when)
			}
		}
		check("after the jobs")
		asked := len(w.meter.Refunds())

		// Every job again, as River would retry one whose completion was lost: nothing more.
		run(2)
		check("after the retries")
		if n := len(w.meter.Refunds()); n != asked {
			t.Fatalf("the retried jobs asked for %d more refunds", n-asked)
		}
	})
}

// A refund that fails fails the failing of the upload with it (one transaction): the upload stays
// processing and the job is retried (no cancel), and once the meter answers again the next attempt
// fails it and refunds it once. The sweep refunds what it fails too.
func TestRefundFailsWithItsUpload(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w := newWorld(t, dialect)
		id := w.uploadFor(t, "lost", testkit.JPEG(t, 16, 16))
		if err := os.Remove(filepath.Join(w.dir, "originals", id)); err != nil {
			t.Fatal(err)
		}
		w.meter.FailRefunds(errors.New("the ledger is away"))
		errs := w.process(t, 1)
		if len(errs) != 1 || errs[0] == nil || errors.As(errs[0], new(*river.JobCancelError)) {
			t.Fatalf("the job whose refund failed: %v, want an error the runner retries", errs)
		}
		if st := w.status(t, alice, id).JSON(t)["status"]; st != port.AssetProcessing {
			t.Fatalf("the upload whose refund failed is %v, want still processing", st)
		}
		if got := w.refunds(t); len(got) != 0 {
			t.Fatalf("refunds %+v", got)
		}
		w.meter.FailRefunds(nil)
		if errs := w.process(t, 2); len(errs) != 1 || !errors.As(errs[0], new(*river.JobCancelError)) {
			t.Fatalf("the next attempt: %v, want the upload failed and the job cancelled", errs)
		}
		if st := w.status(t, alice, id).JSON(t); st["status"] != port.AssetFailed || st["failure_code"] != media.FailureStorage {
			t.Fatalf("after the next attempt: %v", st)
		}
		if got := w.refunds(t); len(got) != 1 || got[id].Reason != media.FailureStorage {
			t.Fatalf("refunds %+v", got)
		}

		// A stuck upload is failed processing_error by the sweep, and refunded with it, once.
		stuck := w.uploadFor(t, "stuck", testkit.JPEG(t, 16, 16))
		clock := testkit.NewClock(testkit.T0.Add(media.DefaultConfig().StuckAfter + time.Minute))
		sweeper := media.NewSweeper(media.DefaultConfig(), w.db, w.storage, clock, w.meter, slog.New(slog.NewTextHandler(io.Discard, nil)))
		for range 2 {
			if _, err := sweeper.Sweep(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if got := w.refunds(t); len(got) != 2 || got[stuck].Reason != media.FailureProcessing {
			t.Fatalf("refunds after the sweep %+v", got)
		}
	})
}
