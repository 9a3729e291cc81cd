package media_test

// The harness of the media module's own tests: a fresh database of each dialect with the module's
// migrations, a directory storage in the test's temporary directory, and the module's components on
// the shared test kit: the recording doubles of port.Meter and port.Jobs, the stand-in guard (the
// signed path, with the multipart body verified byte for byte, is tested in host), and a settable
// double of the forum's port.Attachments. Processing runs the module's real worker on the recorded job.

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/media"
	"github.com/svcforum/svc/testkit"
)

func TestMain(m *testing.M) {
	dbtest.PrepareDocker()
	dbtest.Main(m)
}

// The agents of the tests.
var (
	alice = port.Principal{AgentID: "0190a000-0000-7000-8000-00000000a11c", OrgID: "0190a000-0000-7000-8000-0000000000a1", Handle: "alice"}
	bob   = port.Principal{AgentID: "0190a000-0000-7000-8000-000000000b0b", OrgID: "0190a000-0000-7000-8000-0000000000b1", Handle: "bob"}
)

const baseURL = "https://svc.test"

// shown is a settable port.Attachments: the assets that visible content shows.
type shown struct {
	mu sync.Mutex
	m  map[string]bool
}

func (s *shown) Visible(_ context.Context, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id], nil
}

func (s *shown) set(id string, v bool) { s.mu.Lock(); s.m[id] = v; s.mu.Unlock() }

// world is one test's database, storage and the module's components.
type world struct {
	db        *gorm.DB
	dir       string
	storage   media.Storage
	meter     *testkit.Meter
	processor *media.Processor
	shown     *shown
	engine    *gin.Engine
}

func newWorld(t testing.TB, dialect string) *world {
	t.Helper()
	db := dbtest.Open(t, dialect, media.Migrations())
	if err := db.AutoMigrate(&testkit.ChargeRow{}, &testkit.RefundRow{}, &testkit.JobRow{}); err != nil {
		t.Fatal(err)
	}
	cfg := media.DefaultConfig()
	cfg.Dir = t.TempDir()
	w := &world{db: db, dir: cfg.Dir, storage: media.NewDir(cfg.Dir), meter: testkit.NewMeter(3), shown: &shown{m: map[string]bool{}}}
	clock := testkit.NewClock(testkit.T0)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	uploads := media.NewUploads(cfg, db, clock, w.meter, testkit.Jobs{}, w.storage, schema.Published(),
		&plugin.Deployment{BaseURL: baseURL}, log)
	w.processor = media.NewProcessor(db, w.storage, clock, w.meter, log)
	images := media.NewImages(media.ImagesParams{DB: plugin.ReadDB{DB: db}, Storage: w.storage, Attachments: w.shown})
	w.engine = testkit.Engine(t)
	testkit.MountAgent(t, w.engine, "edge", []gin.HandlerFunc{testkit.StandInGuard}, uploads.Routes().Agent)
	testkit.MountPublic(t, w.engine, images.Routes())
	return w
}

// form is a multipart upload body and its content type.
func form(t testing.TB, file []byte, fields ...string) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if file != nil {
		fw, err := mw.CreateFormFile("file", "photo.png") // the name and declared type are ignored
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(file)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		_ = mw.WriteField(fields[i], fields[i+1])
	}
	_ = mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

// billing are the parts that pay for an upload.
var billing = []string{"pricing_version", "2026-01", "max_credit_cost", "10"}

// upload sends a multipart upload as p.
func (w *world) upload(t testing.TB, p port.Principal, contentType string, body []byte) testkit.Result {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, plugin.AgentPrefix+media.UploadsPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Idempotency-Key", "k-"+t.Name())
	return testkit.Serve(w.engine, testkit.As(req, p))
}

// status reads an upload's status as p.
func (w *world) status(t testing.TB, p port.Principal, id string) testkit.Result {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, plugin.AgentPrefix+media.UploadsPath+"/"+id, nil)
	return testkit.Serve(w.engine, testkit.As(req, p))
}

// get fetches a public path.
func (w *world) get(method, path string, header ...string) testkit.Result {
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return testkit.Serve(w.engine, req)
}

// process runs the worker on every recorded job as attempt, and returns what each returned.
func (w *world) process(t testing.TB, attempt int) []error {
	t.Helper()
	var rows []testkit.JobRow
	if err := w.db.Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	var errs []error
	for _, r := range rows {
		job, err := testkit.Job[media.ProcessArgs](r, attempt)
		if err != nil {
			t.Fatal(err)
		}
		errs = append(errs, w.processor.Work(context.Background(), job))
	}
	return errs
}

// count counts the rows of a table.
func (w *world) count(t testing.TB, table string) int64 { return testkit.CountRows(t, w.db, table, "") }
