package media_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/gin-gonic/gin"
	"github.com/riverqueue/river"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/media"
	"github.com/svcforum/svc/testkit"
)

// TestUploadProcessServe is the life of an upload on both databases: a phone's JPEG is accepted and
// charged once, its owner alone sees it processing, the job makes it ready (the original gone), and its
// variants are served, turned and without metadata, only while visible content shows it.
func TestUploadProcessServe(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w := newWorld(t, dialect)
		ct, body := form(t, testkit.ExifJPEG(t, 2400, 1200, 6), append(billing, "ai_generated", "true")...)
		r := w.upload(t, alice, ct, body)
		if r.Status != http.StatusAccepted {
			t.Fatalf("upload: %d %s", r.Status, r.Body)
		}
		testkit.Valid(t, "media-upload-accepted", r.Body)
		var acc media.Accepted
		r.Decode(t, &acc)
		if acc.Status != port.AssetProcessing || acc.StatusURL != "/agent-api/v1/media/uploads/"+acc.AssetID || acc.Charge.Price != 3 {
			t.Fatalf("accepted %+v", acc)
		}
		calls := w.meter.Calls()
		if len(calls) != 1 || calls[0].Charge.Operation != port.OpMediaUpload || calls[0].Charge.ResourceID != acc.AssetID ||
			calls[0].Charge.Billing.MaxCreditCost != 10 || calls[0].Charge.Billing.PricingVersion != "2026-01" {
			t.Fatalf("charges %+v", calls)
		}
		if w.count(t, "testkit_jobs") != 1 {
			t.Fatal("no processing job was queued with the upload")
		}
		original := filepath.Join(w.dir, "originals", acc.AssetID)
		if _, err := os.Stat(original); err != nil {
			t.Fatalf("the original is not kept: %v", err)
		}

		r = w.status(t, alice, acc.AssetID)
		testkit.Valid(t, "media-upload-status", r.Body)
		if st := r.JSON(t); r.Status != 200 || st["status"] != "processing" || st["variants"] != nil {
			t.Fatalf("status while processing: %d %s", r.Status, r.Body)
		}
		testkit.Expect(t, w.status(t, bob, acc.AssetID), http.StatusNotFound, string(problem.UploadNotFound))
		testkit.Expect(t, w.status(t, alice, "0190a000-0000-7000-8000-000000000000"), http.StatusNotFound, string(problem.UploadNotFound))
		testkit.Expect(t, w.status(t, alice, "not-a-uuid"), http.StatusNotFound, string(problem.UploadNotFound))
		display := "/media/" + acc.AssetID + "/display"
		testkit.Expect(t, w.get(http.MethodGet, display), http.StatusNotFound, string(problem.AssetNotFound))

		for _, err := range w.process(t, 1) {
			if err != nil {
				t.Fatalf("processing: %v", err)
			}
		}
		if _, err := os.Stat(original); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the original outlives processing: %v", err)
		}
		r = w.status(t, alice, acc.AssetID)
		testkit.Valid(t, "media-upload-status", r.Body)
		var st media.Status
		r.Decode(t, &st)
		if st.Status != port.AssetReady || st.Width == nil || *st.Width != 1200 || *st.Height != 2400 || !st.AIGenerated || st.Variants == nil ||
			st.Variants.Display.URL != baseURL+display || st.Variants.Display.Width != 800 || st.Variants.Thumb.Height != 400 {
			t.Fatalf("status when ready: %s", r.Body)
		}
		// Ready, but no visible content shows it yet.
		testkit.Expect(t, w.get(http.MethodGet, display), http.StatusNotFound, string(problem.AssetNotFound))

		w.shown.set(acc.AssetID, true)
		r = w.get(http.MethodGet, display)
		if r.Status != 200 || r.Header.Get("Content-Type") != "image/jpeg" || int64(len(r.Body)) != st.Variants.Display.Bytes {
			t.Fatalf("display: %d %s, %d bytes", r.Status, r.Header.Get("Content-Type"), len(r.Body))
		}
		for h, want := range map[string]string{"Cache-Control": "public, max-age=31536000, immutable",
			"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "default-src 'none'"} {
			if got := r.Header.Get(h); got != want {
				t.Errorf("%s: %q, want %q", h, got, want)
			}
		}
		if bytes.Contains(r.Body, []byte("Exif")) || !bytes.HasPrefix(r.Body, []byte{0xFF, 0xD8, 0xFF}) {
			t.Fatal("the served bytes are not a re-encoded JPEG without Exif")
		}
		etag := r.Header.Get("ETag")
		if nm := w.get(http.MethodGet, display, "If-None-Match", etag); nm.Status != http.StatusNotModified || len(nm.Body) != 0 {
			t.Fatalf("If-None-Match: %d, %d bytes", nm.Status, len(nm.Body))
		}
		if nm := w.get(http.MethodGet, display, "If-None-Match", `"other", W/`+etag); nm.Status != http.StatusNotModified {
			t.Fatalf("If-None-Match with a list: %d", nm.Status)
		}
		if head := w.get(http.MethodHead, display); head.Status != 200 || len(head.Body) != 0 || head.Header.Get("Content-Length") == "" {
			t.Fatalf("HEAD: %d, %d bytes, length %q", head.Status, len(head.Body), head.Header.Get("Content-Length"))
		}
		if th := w.get(http.MethodGet, "/media/"+acc.AssetID+"/thumb"); th.Status != 200 || int64(len(th.Body)) != st.Variants.Thumb.Bytes {
			t.Fatalf("thumb: %d", th.Status)
		}
		testkit.Expect(t, w.get(http.MethodGet, "/media/"+acc.AssetID+"/original"), http.StatusNotFound, string(problem.AssetNotFound))

		// Tombstoned or hidden content no longer shows it: the image is gone from the public listener.
		w.shown.set(acc.AssetID, false)
		if r := w.get(http.MethodGet, display); r.Status != http.StatusNotFound || r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("after hiding: %d, Cache-Control %q", r.Status, r.Header.Get("Cache-Control"))
		}

		// A retry of the finished job changes nothing.
		for _, err := range w.process(t, 2) {
			if err != nil {
				t.Fatalf("a retried finished job: %v", err)
			}
		}
		if len(w.meter.Calls()) != 1 {
			t.Fatal("processing charged")
		}
	})
}

// TestUploadRefusals: every refused upload answers its own problem and leaves nothing behind: no row,
// no charge, no job, no stored byte (scenarios 27-31).
func TestUploadRefusals(t *testing.T) {
	t.Parallel()
	w := newWorld(t, database.SQLite)
	exact := testkit.JPEGOfSize(t, media.MaxFile)
	cases := []struct {
		name   string
		ct     string
		body   []byte
		status int
		code   problem.Code
	}{
		{"svg with prolog", "", nil, 422, problem.UnsupportedImage},
		{"svg without prolog", "", nil, 422, problem.UnsupportedImage},
		{"gif declared as png", "", nil, 422, problem.UnsupportedImage},
		{"apng", "", nil, 422, problem.UnsupportedImage},
		{"animated webp", "", nil, 422, problem.UnsupportedImage},
		{"animated webp, flag cleared", "", nil, 422, problem.UnsupportedImage},
		{"100000x100000 png", "", nil, 422, problem.ImageTooLarge},
		{"100000x100000 webp", "", nil, 422, problem.ImageTooLarge},
		{"5 MiB + 1", "", nil, 413, problem.UploadTooLarge},
		{"body over the route's limit", "", nil, 413, problem.BodyTooLarge},
		{"no file", "", nil, 422, problem.ValidationFailed},
		{"no billing", "", nil, 422, problem.ValidationFailed},
		{"negative cap", "", nil, 422, problem.ValidationFailed},
		{"NUL in the pricing version", "", nil, 422, problem.ValidationFailed},
		{"unknown part", "", nil, 422, problem.ValidationFailed},
		{"two files", "", nil, 422, problem.ValidationFailed},
		{"not multipart", "application/json", []byte(`{}`), 415, problem.UnsupportedMediaType},
		{"broken multipart", "multipart/form-data; boundary=x", []byte("--x\r\nnonsense"), 422, problem.ValidationFailed},
		{"price above the cap", "", nil, 409, problem.PriceExceedsCap},
	}
	files := map[string][]byte{
		"svg with prolog": testkit.SVG(true), "svg without prolog": testkit.SVG(false), "gif declared as png": testkit.GIF(),
		"apng": testkit.APNG(t), "animated webp": testkit.AnimatedWebP(false), "animated webp, flag cleared": testkit.AnimatedWebP(true),
		"100000x100000 png": testkit.HugePNG(100000, 100000), "100000x100000 webp": testkit.HugeWebP(100000, 100000),
		"5 MiB + 1": append(append([]byte{}, exact...), 0),
	}
	for i := range cases {
		tc := &cases[i]
		switch {
		case files[tc.name] != nil:
			tc.ct, tc.body = form(t, files[tc.name], billing...)
		case tc.name == "body over the route's limit":
			tc.ct, tc.body = form(t, exact, append(billing, "ai_generated", strings.Repeat("x", media.MaxForm))...)
		case tc.name == "no file":
			tc.ct, tc.body = form(t, nil, billing...)
		case tc.name == "no billing":
			tc.ct, tc.body = form(t, testkit.JPEG(t, 8, 8))
		case tc.name == "negative cap":
			tc.ct, tc.body = form(t, testkit.JPEG(t, 8, 8), "pricing_version", "2026-01", "max_credit_cost", "-1")
		case tc.name == "NUL in the pricing version": // which PostgreSQL cannot hold in text
			tc.ct, tc.body = form(t, testkit.JPEG(t, 8, 8), "pricing_version", "2026\x00", "max_credit_cost", "10")
		case tc.name == "unknown part":
			tc.ct, tc.body = form(t, testkit.JPEG(t, 8, 8), append(billing, "caption", "hi")...)
		case tc.name == "two files":
			ct, b := form(t, testkit.JPEG(t, 8, 8), billing...)
			boundary := ct[strings.Index(ct, "=")+1:]
			part := b[:bytes.Index(b[2:], []byte("--"+boundary))+2]
			tc.ct, tc.body = ct, append(append([]byte{}, part...), b...)
		case tc.name == "price above the cap":
			tc.ct, tc.body = form(t, testkit.JPEG(t, 8, 8), "pricing_version", "2026-01", "max_credit_cost", "2")
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := w.upload(t, alice, tc.ct, tc.body)
			testkit.Expect(t, r, tc.status, string(tc.code))
		})
	}
	if n := w.count(t, "media_assets") + w.count(t, "testkit_charges") + w.count(t, "testkit_jobs"); n != 0 {
		t.Fatalf("refused uploads left %d rows", n)
	}
	assertNoFiles(t, w.dir)

	// A form of many wrong parts gets a bounded answer.
	many := append([]string{}, billing...)
	for i := range 40 {
		many = append(many, fmt.Sprint("junk", i), "x")
	}
	ct, body := form(t, testkit.JPEG(t, 8, 8), many...)
	r := w.upload(t, alice, ct, body)
	testkit.Expect(t, r, http.StatusUnprocessableEntity, string(problem.ValidationFailed))
	if n := len(r.JSON(t)["errors"].([]any)); n > 16 {
		t.Fatalf("the answer lists %d part errors, want at most 16", n)
	}

	// Exactly the largest file is accepted.
	ct, body = form(t, exact, billing...)
	if r := w.upload(t, alice, ct, body); r.Status != http.StatusAccepted {
		t.Fatalf("a file of exactly %d bytes: %d %s", media.MaxFile, r.Status, r.Body)
	}
}

// panicJobs is port.Jobs whose insert panics, as a bug in an upload's write would.
type panicJobs struct{ testkit.Jobs }

func (panicJobs) InsertTx(context.Context, *gorm.DB, river.JobArgs, *river.InsertOpts) error {
	panic("insert")
}

func (panicJobs) InsertIn(*write.Plan, river.JobArgs, *river.InsertOpts) error { panic("insert") }

// uploadWith sends one upload (an 8x8 JPEG, key key) to w's database and storage through an upload
// endpoint whose jobs are jobs.
func uploadWith(t *testing.T, w *world, jobs port.Jobs, key string) testkit.Result {
	t.Helper()
	cfg := media.DefaultConfig()
	cfg.Dir = w.dir
	uploads := media.NewUploads(cfg, w.db, testkit.NewClock(testkit.T0), w.meter, jobs, w.storage, schema.Published(),
		&plugin.Deployment{BaseURL: baseURL}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	e := testkit.Engine(t)
	testkit.MountAgent(t, e, "edge", []gin.HandlerFunc{testkit.StandInGuard}, uploads.Routes().Agent)
	ct, body := form(t, testkit.JPEG(t, 8, 8), billing...)
	req := httptest.NewRequest(http.MethodPost, plugin.AgentPrefix+media.UploadsPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Idempotency-Key", key)
	return testkit.Serve(e, testkit.As(req, alice))
}

// TestUploadThatPanicsKeepsNothing: an upload whose write panics after its original was stored
// answers 500 and keeps no row, no charge, no job and no file.
func TestUploadThatPanicsKeepsNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t, database.SQLite)
	testkit.Expect(t, uploadWith(t, w, panicJobs{}, "k-panic"), http.StatusInternalServerError, string(problem.Internal))
	if n := w.count(t, "media_assets") + w.count(t, "testkit_charges") + w.count(t, "testkit_jobs"); n != 0 {
		t.Fatalf("the upload that panicked left %d rows", n)
	}
	assertNoFiles(t, w.dir)
}

// assertNoFiles fails when the storage directory holds any object.
func assertNoFiles(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("refused uploads left %s", p)
		}
		return nil
	})
}

// TestProcessingFailures is scenario 33: an upload whose pixels do not decode, one whose original is
// lost, and one whose processing panics each end failed with their code, never stuck processing, and
// the worker lives on.
func TestProcessingFailures(t *testing.T) {
	t.Parallel()
	w := newWorld(t, database.SQLite)
	ids := map[string]string{}
	for _, name := range []string{"truncated", "lost", "panics"} {
		file := testkit.Truncated(t)
		if name != "truncated" {
			file = testkit.JPEG(t, 16, 16)
		}
		ct, body := form(t, file, billing...)
		req := w.upload(t, alice, ct, body)
		if req.Status != http.StatusAccepted {
			t.Fatalf("%s: %d %s", name, req.Status, req.Body)
		}
		ids[name] = req.JSON(t)["asset_id"].(string)
	}
	if err := os.Remove(filepath.Join(w.dir, "originals", ids["lost"])); err != nil {
		t.Fatal(err)
	}
	var rows []testkit.JobRow
	if err := w.db.Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	panicking := media.NewProcessor(w.db, panicStorage{w.storage, ids["panics"]}, testkit.NewClock(testkit.T0), w.meter, log)
	for _, row := range rows {
		job, err := testkit.Job[media.ProcessArgs](row, 1)
		if err != nil {
			t.Fatal(err)
		}
		err = panicking.Work(context.Background(), job)
		var cancel *river.JobCancelError
		if !errors.As(err, &cancel) {
			t.Fatalf("job %s: %v, want a cancelled job (no retry mends it)", job.Args.AssetID, err)
		}
	}
	for name, code := range map[string]string{"truncated": media.FailureUndecodable, "lost": media.FailureStorage, "panics": media.FailureProcessing} {
		var st media.Status
		r := w.status(t, alice, ids[name])
		testkit.Valid(t, "media-upload-status", r.Body)
		r.Decode(t, &st)
		if st.Status != port.AssetFailed || st.FailureCode == nil || *st.FailureCode != code || st.Variants != nil {
			t.Errorf("%s: %s, want failed %s", name, r.Body, code)
		}
	}
	assertNoFiles(t, w.dir)
}

// TestProcessingRetriesStorageFailures: a storage that fails is retried by the runner until the last
// attempt, which fails the upload storage_unavailable.
func TestProcessingRetriesStorageFailures(t *testing.T) {
	t.Parallel()
	w := newWorld(t, database.SQLite)
	ct, body := form(t, testkit.JPEG(t, 16, 16), billing...)
	id := w.upload(t, alice, ct, body).JSON(t)["asset_id"].(string)
	var row testkit.JobRow
	if err := w.db.Take(&row).Error; err != nil {
		t.Fatal(err)
	}
	if row.MaxAttempts != media.DefaultConfig().Attempts {
		t.Fatalf("job max attempts %d", row.MaxAttempts)
	}
	p := media.NewProcessor(w.db, failingStorage{w.storage}, testkit.NewClock(testkit.T0), w.meter, slog.New(slog.NewTextHandler(io.Discard, nil)))
	job, _ := testkit.Job[media.ProcessArgs](row, 1)
	if err := p.Work(context.Background(), job); err == nil || errors.As(err, new(*river.JobCancelError)) {
		t.Fatalf("first attempt: %v, want an error the runner retries", err)
	}
	if st := w.status(t, alice, id).JSON(t)["status"]; st != port.AssetProcessing {
		t.Fatalf("after a failed attempt: %v", st)
	}
	job, _ = testkit.Job[media.ProcessArgs](row, row.MaxAttempts)
	if err := p.Work(context.Background(), job); !errors.As(err, new(*river.JobCancelError)) {
		t.Fatalf("last attempt: %v, want cancelled", err)
	}
	if st := w.status(t, alice, id).JSON(t); st["status"] != port.AssetFailed || st["failure_code"] != media.FailureStorage {
		t.Fatalf("after the last attempt: %v", st)
	}
	assertNoFiles(t, w.dir) // neither the original nor the display variant the last attempt stored
}

// panicStorage panics when the original of one asset is read.
type panicStorage struct {
	media.Storage
	id string
}

func (s panicStorage) Get(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	if strings.HasSuffix(key, s.id) {
		panic("decoder exploded")
	}
	return s.Storage.Get(ctx, key)
}

// failingStorage keeps no thumbnail: an attempt fails after it stored the display variant.
type failingStorage struct{ media.Storage }

func (s failingStorage) Put(ctx context.Context, key string, data []byte, contentType string) error {
	if strings.HasSuffix(key, "/"+media.VariantThumb) {
		return errors.New("storage is down")
	}
	return s.Storage.Put(ctx, key, data, contentType)
}

// TestSweepFailsStuckUploads: an upload still processing long after any attempt of its job could have
// ended (its last attempt lost with its process, which River discards without calling the worker) is
// failed processing_error by the sweeper; a recent one is left to its job.
func TestSweepFailsStuckUploads(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w := newWorld(t, dialect)
		ct, body := form(t, testkit.JPEG(t, 16, 16), billing...)
		stuck := w.upload(t, alice, ct, body).JSON(t)["asset_id"].(string)
		clock := testkit.NewClock(testkit.T0.Add(media.DefaultConfig().StuckAfter + time.Minute))
		sweeper := media.NewSweeper(media.DefaultConfig(), w.db, w.storage, clock, w.meter, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if n, err := sweeper.Sweep(context.Background()); err != nil || n != 1 {
			t.Fatalf("swept %d (%v), want the one stuck upload", n, err)
		}
		if st := w.status(t, alice, stuck).JSON(t); st["status"] != port.AssetFailed || st["failure_code"] != media.FailureProcessing {
			t.Fatalf("the stuck upload: %v", st)
		}
		// Its original is deleted (no job will), and a late run of its job stores nothing.
		assertNoFiles(t, w.dir)
		if errs := w.process(t, 1); len(errs) != 1 || errs[0] != nil {
			t.Fatalf("the swept upload's job: %v", errs)
		}
		assertNoFiles(t, w.dir)
		// A fresh upload is not stuck.
		fresh := media.NewSweeper(media.DefaultConfig(), w.db, w.storage, testkit.NewClock(testkit.T0.Add(time.Minute)), w.meter, slog.New(slog.NewTextHandler(io.Discard, nil)))
		ct, body = form(t, testkit.JPEG(t, 16, 16), billing...)
		req := httptest.NewRequest(http.MethodPost, "/agent-api/v1/media/uploads", bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Idempotency-Key", "fresh")
		id := testkit.Serve(w.engine, testkit.As(req, alice)).JSON(t)["asset_id"].(string)
		if n, err := fresh.Sweep(context.Background()); err != nil || n != 0 {
			t.Fatalf("swept %d (%v) fresh uploads", n, err)
		}
		if st := w.status(t, alice, id).JSON(t)["status"]; st != port.AssetProcessing {
			t.Fatalf("the fresh upload: %v", st)
		}
	})
}

// orphanJobs is port.Jobs whose planned job also writes a row that breaks a deferred foreign key, so
// that the database refuses the write's commit.
type orphanJobs struct{ testkit.Jobs }

func (j orphanJobs) InsertIn(p *write.Plan, args river.JobArgs, opts *river.InsertOpts) error {
	p.Exec(1, nil, "INSERT INTO commit_children (id, parent) VALUES ('c', 'none')")
	return j.Jobs.InsertIn(p, args, opts)
}

// lostJobs is port.Jobs whose planned job ends the write as one whose commit is unknown (the
// connection lost while the database committed).
type lostJobs struct{ testkit.Jobs }

func (j lostJobs) InsertIn(p *write.Plan, args river.JobArgs, opts *river.InsertOpts) error {
	if err := j.Jobs.InsertIn(p, args, opts); err != nil {
		return err
	}
	p.Append(write.Step{Rows: write.AnyRows, Run: func(*gorm.DB) (bool, error) {
		return false, fmt.Errorf("%w: the connection was lost", port.ErrMaybeCommitted)
	}})
	return nil
}

// TestUploadWhoseCommitFails: an upload whose commit the database refused keeps nothing, its original
// included; one whose commit is unknown keeps its original, which the upload's job needs if it did
// commit, and answers an error.
func TestUploadWhoseCommitFails(t *testing.T) {
	t.Parallel()
	files := func(w *world) int {
		n := 0
		_ = filepath.WalkDir(w.dir, func(_ string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return nil
		})
		return n
	}
	w := newWorld(t, database.SQLite)
	for _, s := range []string{
		"CREATE TABLE commit_parents (id TEXT PRIMARY KEY)",
		"CREATE TABLE commit_children (id TEXT PRIMARY KEY, parent TEXT REFERENCES commit_parents (id) DEFERRABLE INITIALLY DEFERRED)",
	} {
		if err := w.db.Exec(s).Error; err != nil {
			t.Fatal(err)
		}
	}
	if r := uploadWith(t, w, orphanJobs{}, "k-refused"); r.Status < 500 {
		t.Fatalf("an upload whose commit was refused: %d %s, want a 5xx", r.Status, r.Body)
	}
	if n := files(w); n != 0 || w.count(t, "media_assets")+w.count(t, "testkit_charges")+w.count(t, "testkit_jobs") != 0 {
		t.Fatalf("an upload whose commit was refused left %d objects", n)
	}
	if r := uploadWith(t, w, lostJobs{}, "k-lost"); r.Status < 500 {
		t.Fatalf("an upload whose commit is unknown: %d %s, want a 5xx", r.Status, r.Body)
	}
	if n := files(w); n != 1 {
		t.Fatalf("the storage holds %d objects, want the original of the upload whose commit is unknown", n)
	}
}
