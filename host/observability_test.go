package host

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/riverqueue/river"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"google.golang.org/protobuf/proto"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
)

// migrateFirst migrates the database of env, as an operator does before the admin commands.
func migrateFirst(t *testing.T, env map[string]string) {
	t.Helper()
	if code, _, stderr := runMain(t, env, "migrate"); code != 0 {
		t.Fatalf("svc migrate: exit %d: %s", code, stderr)
	}
}

// scrape reads the admin listener's /metrics.
func scrape(t *testing.T, r running) map[string]*dto.MetricFamily {
	t.Helper()
	res := do(t, http.MethodGet, r.url(ListenerAdmin, "/metrics"), nil)
	if res.status != http.StatusOK {
		t.Fatalf("/metrics: %d %s", res.status, res.body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(res.body))
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// sample is the value of the series of name whose labels include label=value, and whether it exists.
func sample(families map[string]*dto.MetricFamily, name, label, value string) (float64, bool) {
	f, ok := families[name]
	if !ok {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				switch {
				case m.Counter != nil:
					return m.GetCounter().GetValue(), true
				case m.Gauge != nil:
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

// wantSample fails unless the series exists with want (want 0 also accepts no series).
func wantSample(t *testing.T, families map[string]*dto.MetricFamily, name, label, value string, want float64) {
	t.Helper()
	got, ok := sample(families, name, label, value)
	if got != want || (!ok && want != 0) {
		t.Fatalf("%s{%s=%q} = %v (present %v), want %v", name, label, value, got, ok, want)
	}
}

// svc_build_info says which build serves: 1, labelled with the release and the Go release.
func TestBuildInfoMetric(t *testing.T) {
	r := start(t, testConfig(t, "sqlite"), allModules(t))
	got := scrape(t, r)
	wantSample(t, got, "svc_build_info", "version", Version, 1)
	wantSample(t, got, "svc_build_info", "go_version", runtime.Version(), 1)
	if f := got["svc_build_info"]; f == nil || len(f.GetMetric()) != 1 || len(f.GetMetric()[0].GetLabel()) != 3 {
		t.Fatalf("svc_build_info: %v", f)
	}
}

// TestMetricsCountCommittedWrites: after a signed write, /metrics shows the credits charged for its
// operation, the write by kind and the signed request's outcome; a write refused by the meter, and
// the replay of a committed one, charge and write nothing more, and the refusal counts by its code.
func TestMetricsCountCommittedWrites(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		cfg := testConfig(t, dialect)
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
		migrateFirst(t, env)
		id := provision(t, env, "counted-"+dialect)
		publish(t, env, wirePricing)
		credit(t, env, id.orgID, 10)
		catID := admin(t, env, "category", "create", "--slug", "counting", "--name", "Counting", "--description", "Metrics")["category_id"].(string)
		r := start(t, cfg, allModules(t))
		agent := "http://" + r.listeners.Addr(ListenerAgentEdge)

		before := scrape(t, r)
		wantSample(t, before, "svc_credits_charged_total", "operation", "create_thread", 0)
		if _, ok := sample(before, "svc_job_queue_depth", "queue", "default"); !ok {
			t.Fatal("the default queue's depth is not shown")
		}

		thread := fmt.Sprintf(`{"category_id":%q,"title":"Counted","body_markdown":"One write.",%s}`, catID, billing10)
		created := decodeBody(t, forumPost(t, id, agent, "/threads", "m-1", thread), 200, "created-thread-response")
		threadID := created["thread_id"].(string)
		// The replay answers the stored write: no second charge, no second write.
		if res := forumPost(t, id, agent, "/threads", "m-1", thread); res.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %s", res.status, res.body)
		}
		// The wallet is empty now: a reply is refused by the meter, inside its write's transaction.
		reply := fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Refused.",%s}`, threadID, billing10)
		checkProblem(t, forumPost(t, id, agent, "/replies", "m-2", reply), 409, "insufficient_credits")

		after := scrape(t, r)
		wantSample(t, after, "svc_credits_charged_total", "operation", "create_thread", 10)
		wantSample(t, after, "svc_charges_total", "operation", "create_thread", 1)
		wantSample(t, after, "svc_writes_total", "kind", "create_thread", 1)
		wantSample(t, after, "svc_credits_charged_total", "operation", "create_reply", 0)
		wantSample(t, after, "svc_writes_total", "kind", "create_reply", 0)
		wantSample(t, after, "svc_signed_requests_total", "code", "ok", 2)
		wantSample(t, after, "svc_signed_requests_total", "code", "insufficient_credits", 1)
		// The thread's admission went with its write; the replay's and the refused reply's ran alone.
		wantSample(t, after, "svc_admissions_total", "how", "with_write", 1)
		wantSample(t, after, "svc_admissions_total", "how", "alone", 2)
	})
}

// TestPprofOnlyWhenSet: --pprof serves the profiles on the admin listener, and only there (never the
// command line); without it they are not found.
func TestPprofOnlyWhenSet(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprint(on), func(t *testing.T) {
			cfg := testConfig(t, database.SQLite)
			cfg.Pprof = on
			r := start(t, cfg, allModules(t))
			index := do(t, http.MethodGet, r.url(ListenerAdmin, "/debug/pprof/"), nil)
			goroutines := do(t, http.MethodGet, r.url(ListenerAdmin, "/debug/pprof/goroutine?debug=1"), nil)
			// The command line may hold secrets given as flags: never served.
			checkProblem(t, do(t, http.MethodGet, r.url(ListenerAdmin, "/debug/pprof/cmdline"), nil), 404, "not_found")
			if on {
				if index.status != 200 || !bytes.Contains(index.body, []byte("goroutine")) {
					t.Fatalf("index: %d %.200s", index.status, index.body)
				}
				if goroutines.status != 200 || !bytes.Contains(goroutines.body, []byte("goroutine profile:")) {
					t.Fatalf("goroutine profile: %d %.200s", goroutines.status, goroutines.body)
				}
			} else {
				checkProblem(t, index, 404, "not_found")
				checkProblem(t, goroutines, 404, "not_found")
			}
			res := do(t, http.MethodGet, r.url(ListenerPublic, "/debug/pprof/"), map[string]string{"Accept": "application/json"})
			checkProblem(t, res, 404, "not_found")
		})
	}
}

// otlpReceiver is an OTLP/HTTP trace receiver (protobuf, optionally gzipped), on the protocol's own
// message types.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []receivedSpan
}

type receivedSpan struct {
	scope string
	span  *tracepb.Span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.NotFound(w, r)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				o.spans = append(o.spans, receivedSpan{scope: ss.GetScope().GetName(), span: s})
			}
		}
	}
	o.mu.Unlock()
	out, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (o *otlpReceiver) received() []receivedSpan {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]receivedSpan(nil), o.spans...)
}

// TestTraceReachesAnOTLPReceiver: with OTEL_EXPORTER_OTLP_ENDPOINT set, a signed write's trace
// reaches an OTLP receiver when the service stops (the provider's flush): the HTTP server span, the
// guard's span under it with the guard's statements under that, and the write's own statements under
// the server span, all of one trace.
func TestTraceReachesAnOTLPReceiver(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) { traceReachesAnOTLPReceiver(t, dialect) })
}

func traceReachesAnOTLPReceiver(t *testing.T, dialect string) {
	recv := &otlpReceiver{}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "svc-trace-test")

	cfg := testConfig(t, dialect)
	env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
	migrateFirst(t, env)
	id := provision(t, env, "traced")
	publish(t, env, wirePricing)
	credit(t, env, id.orgID, 10)
	catID := admin(t, env, "category", "create", "--slug", "traced", "--name", "Traced", "--description", "Traces")["category_id"].(string)
	var ls *Listeners
	app := fxtest.New(t, Serve(cfg, testLogger(t), allModules(t)), fx.Populate(&ls))
	app.RequireStart()
	agent := "http://" + ls.Addr(ListenerAgentEdge)
	thread := fmt.Sprintf(`{"category_id":%q,"title":"Traced","body_markdown":"One trace.",%s}`, catID, billing10)
	decodeBody(t, forumPost(t, id, agent, "/threads", "tr-1", thread), 200, "created-thread-response")
	// A secret in the address (an application's status token) never reaches a span.
	secret := strings.Repeat("S", 43)
	res, err := http.Get("http://" + ls.Addr(ListenerPublic) + "/onboarding/status/" + secret)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	app.RequireStop() // flushes the spans still buffered

	spans := recv.received()
	var server *tracepb.Span
	for _, s := range spans {
		if s.span.GetKind() == tracepb.Span_SPAN_KIND_SERVER && s.span.GetName() == "POST /agent-api/v1/threads" {
			server = s.span
		}
	}
	if server == nil {
		t.Fatalf("no server span of the write among %d spans: %v", len(spans), names(spans))
	}
	var guard *tracepb.Span
	var guardStatements, writeStatements int
	for _, s := range spans {
		if !bytes.Equal(s.span.GetTraceId(), server.GetTraceId()) {
			continue
		}
		if s.span.GetName() == "sigv1.guard" && bytes.Equal(s.span.GetParentSpanId(), server.GetSpanId()) {
			guard = s.span
		}
	}
	if guard == nil {
		t.Fatalf("no guard span under the server span in trace %s: %v", hex.EncodeToString(server.GetTraceId()), names(spans))
	}
	for _, s := range spans {
		if !bytes.Equal(s.span.GetTraceId(), server.GetTraceId()) || s.scope != "gorm.io/plugin/opentelemetry" ||
			s.span.GetKind() != tracepb.Span_SPAN_KIND_CLIENT {
			continue
		}
		switch {
		case bytes.Equal(s.span.GetParentSpanId(), guard.GetSpanId()):
			guardStatements++
		case bytes.Equal(s.span.GetParentSpanId(), server.GetSpanId()) && dialect == database.SQLite:
			writeStatements++ // the planned write runs its steps through gorm in one transaction
		}
	}
	// On PostgreSQL the planned write is one batch, past gorm: its span is the database package's.
	for _, s := range spans {
		if dialect == database.Postgres && bytes.Equal(s.span.GetTraceId(), server.GetTraceId()) &&
			s.span.GetName() == "database.write" && bytes.Equal(s.span.GetParentSpanId(), server.GetSpanId()) {
			writeStatements++
		}
	}
	// The guard leaves the admission of a planned write to the write: no statement runs under it.
	if writeStatements == 0 || guardStatements != 0 {
		t.Fatalf("database spans on %s: %d under the guard, %d under the write: %v", dialect, guardStatements, writeStatements, names(spans))
	}
	statusPath := ""
	for _, s := range spans {
		for _, a := range s.span.GetAttributes() {
			if a.GetKey() == "db.query.text" && strings.Contains(a.GetValue().GetStringValue(), "One trace.") {
				t.Fatalf("a statement's span carries its values: %s", a.GetValue().GetStringValue())
			}
			if strings.Contains(a.GetValue().GetStringValue(), secret) {
				t.Fatalf("span %q carries the status token in %s", s.span.GetName(), a.GetKey())
			}
			if s.span.GetName() == "GET /onboarding/status/:token" && a.GetKey() == "url.path" {
				statusPath = a.GetValue().GetStringValue()
			}
		}
	}
	if statusPath != "/onboarding/status/(secret)" {
		t.Fatalf("the status page's span has url.path %q: %v", statusPath, names(spans))
	}
}

func names(spans []receivedSpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.scope+": "+s.span.GetName())
	}
	return out
}

// TestTracingOffUnlessAnEndpointIsSet: no OTLP endpoint (or OTEL_SDK_DISABLED) leaves tracing off.
func TestTracingOffUnlessAnEndpointIsSet(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false},
	} {
		for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"} {
			t.Setenv(k, c.env[k])
		}
		lc := fxtest.NewLifecycle(t)
		tr, err := newTracing(lc, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		if tr.on != c.want {
			t.Fatalf("%v: tracing on %v, want %v", c.env, tr.on, c.want)
		}
		lc.RequireStart().RequireStop()
	}
}

// failArgs is a test job whose every attempt fails.
type failArgs struct{}

func (failArgs) Kind() string { return "host_test_fail" }

type failWorker struct{ river.WorkerDefaults[failArgs] }

func (failWorker) Work(context.Context, *river.Job[failArgs]) error {
	return errors.New("this job always fails")
}

// TestJobMetrics: /metrics shows a job waiting in the queue by its state, and a job's failed last
// attempt as discarded, by kind.
func TestJobMetrics(t *testing.T) {
	cfg := testConfig(t, database.SQLite)
	cfg.Jobs.PollInterval = 50 * time.Millisecond
	var once sync.Once
	worker := fx.Provide(plugin.AsWorkers(func() plugin.Workers {
		return plugin.Workers{Module: "jobtest", Register: func(w *river.Workers) error {
			var err error
			once.Do(func() { err = river.AddWorkerSafely(w, failWorker{}) })
			return err
		}}
	}))
	var jobs port.Jobs
	var db *gorm.DB
	r := start(t, cfg, discoveryOnly(t), worker, fx.Populate(&jobs, &db))
	insert := func(opts *river.InsertOpts) {
		t.Helper()
		if err := db.Transaction(func(tx *gorm.DB) error { return jobs.InsertTx(context.Background(), tx, failArgs{}, opts) }); err != nil {
			t.Fatal(err)
		}
	}
	insert(&river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
	insert(&river.InsertOpts{MaxAttempts: 1})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		families := scrape(t, r)
		failed, _ := sample(families, "svc_job_failures_total", "outcome", "discarded")
		if failed == 1 {
			wantSample(t, families, "svc_job_failures_total", "kind", failArgs{}.Kind(), 1)
			if n := depth(families, "default", "scheduled"); n != 1 {
				t.Fatalf("scheduled jobs in the default queue: %v, want 1", n)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no discarded job counted: %v", families["svc_job_failures_total"])
		}
	}
}

// depth is svc_job_queue_depth of queue in state.
func depth(families map[string]*dto.MetricFamily, queue, state string) float64 {
	for _, m := range families["svc_job_queue_depth"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["queue"] == queue && labels["state"] == state {
			return m.GetGauge().GetValue()
		}
	}
	return -1
}
