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
	mtAlice = port.Principal{AgentID: "0190a000-0000-7000-8000-00000000a11c", OrgID: "0190a000-0000-7000-8000-0000000000a1", Handle: "alice"}
	mtBob   = port.Principal{AgentID: "0190a000-0000-7000-8000-000000000b0b", OrgID: "0190a000-0000-7000-8000-0000000000b1", Handle: "bob"}
)

const mtBase = "https://svc.test"

// mtShown is a settable port.Attachments: the assets that visible content shows.
type mtShown struct {
	mu sync.Mutex
	m  map[string]bool
}

func (s *mtShown) Visible(_ context.Context, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id], nil
}

func (s *mtShown) set(id string, v bool) { s.mu.Lock(); s.m[id] = v; s.mu.Unlock() }

// mtWorld is one test's database, storage and the module's components.
type mtWorld struct {
	db        *gorm.DB
	dir       string
	storage   media.Storage
	meter     *testkit.Meter
	processor *media.Processor
	shown     *mtShown
	engine    *gin.Engine
}

func mtNewWorld(t testing.TB, dialect string) *mtWorld {
	t.Helper()
	db := dbtest.Open(t, dialect, media.Migrations())
	if err := db.AutoMigrate(&testkit.ChargeRow{}, &testkit.RefundRow{}, &testkit.JobRow{}); err != nil {
		t.Fatal(err)
	}
	cfg := media.DefaultConfig()
	cfg.Dir = t.TempDir()
	w := &mtWorld{db: db, dir: cfg.Dir, storage: media.NewDir(cfg.Dir), meter: testkit.NewMeter(3), shown: &mtShown{m: map[string]bool{}}}
	clock := testkit.NewClock(testkit.T0)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	uploads := media.NewUploads(cfg, db, clock, w.meter, testkit.Jobs{}, w.storage, schema.Published(),
		&plugin.Deployment{BaseURL: mtBase}, log)
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
func (w *mtWorld) upload(t testing.TB, p port.Principal, contentType string, body []byte) testkit.Result {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, plugin.AgentPrefix+media.UploadsPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Idempotency-Key", "k-"+t.Name())
	return testkit.Serve(w.engine, testkit.As(req, p))
}

// status reads an upload's status as p.
func (w *mtWorld) status(t testing.TB, p port.Principal, id string) testkit.Result {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, plugin.AgentPrefix+media.UploadsPath+"/"+id, nil)
	return testkit.Serve(w.engine, testkit.As(req, p))
}

// get fetches a public path.
func (w *mtWorld) get(method, path string, header ...string) testkit.Result {
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return testkit.Serve(w.engine, req)
}

// process runs the worker on every recorded job as attempt, and returns what each returned.
func (w *mtWorld) process(t testing.TB, attempt int) []error {
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
func (w *mtWorld) count(t testing.TB, table string) int64 {
	t.Helper()
	var n int64
	if err := w.db.Table(table).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}
