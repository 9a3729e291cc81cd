package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/postgres"
)

// faultTimeout bounds each fault test: provisioning, the load, the fault, the recovery and the checks.
const faultTimeout = 4 * time.Minute

// writeTimeout is how long a writer waits for one answer; an answer that takes longer is a hang.
const writeTimeout = 15 * time.Second

// outage is how long PostgreSQL stays stopped: longer than writeTimeout, so that a write that waits
// for the database instead of failing shows as a hang.
var outage = 20 * time.Second

// faultForum is a provisioned forum on PostgreSQL with one service: an agent with a well-funded
// wallet, the WIRE pricing, a category and a thread to reply to.
type faultForum struct {
	nw       *testcontainers.DockerNetwork
	db       *postgres.PostgresContainer
	env      map[string]string
	svc      *service
	agent    agentIdentity
	org      string
	threadID string

	mu   sync.Mutex
	edge string // the agent edge's URL on this host; it changes when the service container restarts
}

func (f *faultForum) edgeURL() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.edge
}

// refreshEndpoints reads the service's published ports again (a restarted container gets new ones).
func (f *faultForum) refreshEndpoints(t *testing.T, ctx context.Context) {
	t.Helper()
	pub, err := f.svc.PortEndpoint(ctx, publicPort, "http")
	if err != nil {
		t.Fatalf("public endpoint of the service: %v", err)
	}
	edge, err := f.svc.PortEndpoint(ctx, agentEdgePort, "http")
	if err != nil {
		t.Fatalf("agent edge endpoint of the service: %v", err)
	}
	f.mu.Lock()
	f.svc.URL, f.edge = pub, edge
	f.mu.Unlock()
}

func (f *faultForum) publicURL() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.svc.URL
}

// beginFault is begin with faultTimeout.
func beginFault(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), faultTimeout)
	t.Cleanup(cancel)
	requireImage(t, ctx, serviceImage())
	requireImage(t, ctx, postgresImage())
	return ctx
}

// provisionFaultForum starts PostgreSQL, provisions the forum with `svc admin` and starts one service.
func provisionFaultForum(t *testing.T, ctx context.Context) *faultForum {
	t.Helper()
	nw := newNetwork(t, ctx)
	db := startPostgres(t, ctx, nw)
	env := map[string]string{"SVC_DATABASE_URL": databaseURL, "SVC_BASE_URL": baseURL}
	run := func(cmd ...string) result { return runOnce(t, ctx, nw, env, cmd...) }
	if res := run("migrate"); res.ExitCode != 0 {
		t.Fatalf("migrate: exit %d: %s", res.ExitCode, res.Stderr)
	}
	org, _ := admin(t, ctx, run, "org", "create", "--name", "Fault Kitchen")["org_id"].(string)
	agent := addAgent(t, ctx, run, org, "writer")
	if out := admin(t, ctx, run, "wallet", "credit", "--org", org, "--credits", "1000000"); out["org_id"] != org || out["balance"] != 1000000.0 {
		t.Fatalf("wallet credit: %v", out)
	}
	if v := publishPricing(t, ctx, nw, env, wirePricingFile); v != "2026-11" {
		t.Fatalf("pricing publish: version %q, want 2026-11", v)
	}
	catID, _ := admin(t, ctx, run, "category", "create", "--slug", "faults", "--name", "Faults", "--description", "Writes under faults")["category_id"].(string)
	if catID == "" {
		t.Fatal("category create: no category_id")
	}

	// The load is far above the default per-agent limits (60 writes a minute): raise them, so that
	// every answer the writers see is about the fault, not a 429.
	svcEnv := maps.Clone(env)
	svcEnv["SVC_SIGV1_WRITES_PER_WINDOW"] = "1000000"
	svcEnv["SVC_SIGV1_ATTEMPTS_PER_WINDOW"] = "1000000"
	f := &faultForum{nw: nw, db: db, env: env, agent: agent, org: org}
	f.svc = startService(t, ctx, nw, svcEnv)
	f.refreshEndpoints(t, ctx)

	body := fmt.Sprintf(`{"category_id":%q,"title":"Writes under faults","body_markdown":"Replies arrive here.",%s}`, catID, scenarioBilling)
	thread := jsonBody(t, "create thread", signedSend(t, ctx, agent, http.MethodPost, f.edgeURL(), "/threads", "fault-thread", body), 200)
	f.threadID, _ = thread["thread_id"].(string)
	if f.threadID == "" {
		t.Fatalf("create thread: %v", thread)
	}
	return f
}

// attempt is one write a writer sent and what became of it.
type attempt struct {
	Sent, Done time.Time
	Status     int    // 0 on a transport error
	Code       string // the problem's code, or the content type when the answer is no problem
	ReplyID    string // on a 200
	Err        string // the transport error
	Body       string // on a failure, the start of the body
}

func (a attempt) outcome() string {
	switch {
	case a.Err != "":
		if strings.Contains(a.Err, "Client.Timeout") || strings.Contains(a.Err, "deadline exceeded") {
			return "hang (no answer within " + writeTimeout.String() + ")"
		}
		return "transport error"
	case a.Status == 200:
		return "200"
	default:
		return fmt.Sprintf("%d %s", a.Status, a.Code)
	}
}

// writers send signed create_reply requests, each with a new Idempotency-Key, until stopped.
type writers struct {
	f      *faultForum
	client *http.Client
	stop   chan struct{}
	wg     sync.WaitGroup
	stopFn func()

	mu       sync.Mutex
	attempts []attempt
}

func startWriters(t *testing.T, ctx context.Context, f *faultForum, n int) *writers {
	t.Helper()
	w := &writers{f: f, client: &http.Client{Timeout: writeTimeout}, stop: make(chan struct{})}
	stopped := false
	stopOnce := func() {
		if !stopped {
			stopped = true
			close(w.stop)
			w.wg.Wait()
		}
	}
	w.stopFn = stopOnce
	t.Cleanup(stopOnce) // before the containers go, also when the test fails
	for i := range n {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for seq := 0; ; seq++ {
				select {
				case <-w.stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				a := w.write(ctx, fmt.Sprintf("%s-w%d-%d", t.Name(), i, seq))
				w.mu.Lock()
				w.attempts = append(w.attempts, a)
				w.mu.Unlock()
				pause := 25 * time.Millisecond
				if a.Status != 200 {
					pause = 100 * time.Millisecond // no busy loop against a failing service
				}
				select {
				case <-w.stop:
					return
				case <-ctx.Done():
					return
				case <-time.After(pause):
				}
			}
		}()
	}
	return w
}

// halt stops the writers and waits for them (once).
func (w *writers) halt() { w.stopFn() }

func (w *writers) write(ctx context.Context, key string) attempt {
	body := fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Reply %s.",%s}`, w.f.threadID, key, scenarioBilling)
	a := attempt{Sent: time.Now()}
	defer func() { a.Done = time.Now() }()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.f.edgeURL()+agentPrefix+"/replies", strings.NewReader(body))
	if err != nil {
		a.Err = err.Error()
		a.Done = time.Now()
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if err := w.f.agent.Signer.Sign(req); err != nil {
		a.Err = "sign: " + err.Error()
		a.Done = time.Now()
		return a
	}
	res, err := w.client.Do(req)
	if err != nil {
		a.Err = err.Error()
		a.Done = time.Now()
		return a
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	a.Done = time.Now()
	a.Status = res.StatusCode
	if err != nil {
		a.Err = "read the body: " + err.Error()
		a.Status = 0
		return a
	}
	if a.Status == 200 {
		var out struct {
			ReplyID string `json:"reply_id"`
		}
		if json.Unmarshal(b, &out) != nil || out.ReplyID == "" {
			a.Code, a.Body = "200 without reply_id", truncate(string(b))
		}
		a.ReplyID = out.ReplyID
		return a
	}
	a.Body = truncate(string(b))
	ct := res.Header.Get("Content-Type")
	var p struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
	}
	if strings.HasPrefix(ct, "application/problem+json") && json.Unmarshal(b, &p) == nil && p.Code != "" && p.Status == a.Status {
		a.Code = p.Code
	} else {
		a.Code = "not a problem (" + ct + ")"
	}
	return a
}

func truncate(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// snapshot returns the attempts so far.
func (w *writers) snapshot() []attempt {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.attempts)
}

// waitFor200s waits until the writers have had n more 200s than now (the load is running).
func (w *writers) waitFor200s(t *testing.T, ctx context.Context, n int, within time.Duration, what string) {
	t.Helper()
	count := func() int {
		c := 0
		for _, a := range w.snapshot() {
			if a.Status == 200 && a.ReplyID != "" {
				c++
			}
		}
		return c
	}
	base := count()
	poll(t, ctx, time.Now(), within, 100*time.Millisecond, what, func() (bool, string) {
		got := count() - base
		return got >= n, fmt.Sprintf("%d new 200s of %d; outcomes %v", got, n, histogram(w.snapshot()))
	})
}

// histogram counts attempts by outcome.
func histogram(as []attempt) map[string]int {
	h := map[string]int{}
	for _, a := range as {
		h[a.outcome()]++
	}
	return h
}

// between returns the attempts sent at or after from and answered before to.
func between(as []attempt, from, to time.Time) []attempt {
	var out []attempt
	for _, a := range as {
		if !a.Sent.Before(from) && a.Done.Before(to) {
			out = append(out, a)
		}
	}
	return out
}

// checkNoHang reports every attempt that waited past the client timeout.
func checkNoHang(t *testing.T, as []attempt) {
	t.Helper()
	var slowest attempt
	for _, a := range as {
		if a.Done.Sub(a.Sent) > slowest.Done.Sub(slowest.Sent) {
			slowest = a
		}
		if strings.HasPrefix(a.outcome(), "hang") {
			t.Errorf("FINDING: a write sent at %s hung: no answer within %s (%s)", a.Sent.Format("15:04:05.000"), writeTimeout, a.Err)
		}
	}
	t.Logf("slowest write: %s, sent at %s, answered %s %s", slowest.Done.Sub(slowest.Sent).Round(time.Millisecond), slowest.Sent.Format("15:04:05.000"), slowest.outcome(), slowest.Body)
}

// checkWritesAfter checks that every write sent after from (the service ready again) succeeded, and
// that there were some.
func checkWritesAfter(t *testing.T, as []attempt, from time.Time) {
	t.Helper()
	after := between(as, from, time.Now().Add(time.Hour))
	h := histogram(after)
	t.Logf("writes after recovery: %v", h)
	if h["200"] == 0 {
		t.Errorf("no write succeeded after recovery: %v", h)
	}
	for _, a := range after {
		if a.Status != 200 || a.ReplyID == "" {
			t.Errorf("a write after recovery failed: %s (sent %s): %s %s", a.outcome(), a.Sent.Format("15:04:05.000"), a.Err, a.Body)
		}
	}
}

// checkDurable checks that every reply that got a 200 is on the read plane, and that the wallet audit
// is clean.
func checkDurable(t *testing.T, ctx context.Context, f *faultForum, as []attempt) {
	t.Helper()
	var ids []string
	for _, a := range as {
		if a.Status == 200 && a.ReplyID != "" {
			ids = append(ids, a.ReplyID)
		}
	}
	if len(ids) == 0 {
		t.Fatal("no write got a 200")
	}
	missing := 0
	for _, id := range ids {
		r, err := get(ctx, f.publicURL()+"/api/v1/replies/"+id)
		switch {
		case err != nil:
			t.Fatalf("GET /api/v1/replies/%s: %v", id, err)
		case r.Status != 200:
			missing++
			if missing <= 10 {
				t.Errorf("reply %s got a 200 but GET /api/v1/replies/%s answers %d %s", id, id, r.Status, r.Body)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d replies that got a 200 are missing from the read plane", missing, len(ids))
	} else {
		t.Logf("all %d replies that got a 200 are on the read plane", len(ids))
	}

	res := runOnce(t, ctx, f.nw, f.env, "admin", "--json", "wallet", "audit")
	if res.ExitCode != 0 {
		t.Fatalf("svc admin --json wallet audit: exit %d: stdout %s stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	var audit map[string]any
	if err := json.Unmarshal([]byte(res.Stdout), &audit); err != nil {
		t.Fatalf("wallet audit: stdout is not JSON (%v): %q", err, res.Stdout)
	}
	if n, _ := audit["organisations_checked"].(float64); n < 1 {
		t.Errorf("wallet audit: %v, want at least one organisation checked", audit)
	}
	if d, ok := audit["discrepancies"].([]any); !ok || len(d) != 0 {
		t.Errorf("wallet audit: %v, want no discrepancies", audit)
	}

	// The wallet: every 200 was charged once (5 credits), and nothing else but the thread (10) and
	// possibly writes whose 200 was lost with the connection.
	wallet := jsonBody(t, "wallet", signedSend(t, ctx, f.agent, http.MethodGet, f.edgeURL(), "/wallet", "", ""), 200)
	if bal, _ := wallet["balance"].(float64); bal > 1000000-10-5*float64(len(ids)) {
		t.Errorf("wallet: balance %v, want at most %v (the thread and %d replies charged)", bal, 1000000-10-5*float64(len(ids)), len(ids))
	} else {
		t.Logf("wallet balance %v after %d replies that got a 200 (%v credits for writes without a 200)", bal, len(ids), 1000000-10-5*float64(len(ids))-bal)
	}
}

// readyAgain waits for /health/ready to answer 200.
func readyAgain(t *testing.T, ctx context.Context, f *faultForum, from time.Time, within time.Duration, what string) time.Duration {
	t.Helper()
	return poll(t, ctx, from, within, 200*time.Millisecond, what, func() (bool, string) {
		r, err := get(ctx, f.publicURL()+"/health/ready")
		if err != nil {
			return false, err.Error()
		}
		return r.Status == 200, fmt.Sprintf("%d %s", r.Status, r.Body)
	})
}

// TestFaultDatabaseStoppedUnderWriteLoad: PostgreSQL stopped while agents write. /health/ready turns
// 503, writes fail with a 503 problem instead of hanging, and after PostgreSQL returns the service is
// ready again without a restart, writes succeed, every write that got a 200 is on the read plane and
// the wallet audit is clean.
func TestFaultDatabaseStoppedUnderWriteLoad(t *testing.T) {
	t.Parallel()
	ctx := beginFault(t)
	f := provisionFaultForum(t, ctx)

	w := startWriters(t, ctx, f, 4)
	w.waitFor200s(t, ctx, 20, 30*time.Second, "writes before the fault")

	timeout := stopTimeout
	stopping := time.Now()
	if err := f.db.Stop(ctx, &timeout); err != nil {
		t.Fatalf("stop postgres: %v", err)
	}
	stopped := time.Now()
	t.Logf("the database was told to stop at %s and had stopped at %s", stopping.Format("15:04:05.000"), stopped.Format("15:04:05.000"))
	took := poll(t, ctx, stopped, 5*time.Second, 200*time.Millisecond, "/health/ready 503 after the database stopped", func() (bool, string) {
		r, err := get(ctx, f.publicURL()+"/health/ready")
		if err != nil {
			return false, err.Error()
		}
		return notReadyForDatabase(r), fmt.Sprintf("%d %s %s", r.Status, r.ContentType, r.Body)
	})
	t.Logf("/health/ready answered 503 %s after the database stopped", took.Round(time.Millisecond))

	// The outage lasts long enough for the pool's connections to be found dead and for writes to be
	// refused: several seconds of load against no database.
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(outage):
	}

	starting := time.Now()
	if err := f.db.Start(ctx); err != nil {
		t.Fatalf("start postgres again: %v", err)
	}
	took = readyAgain(t, ctx, f, starting, 30*time.Second, "/health/ready 200 after the database returned")
	ready := time.Now()
	t.Logf("/health/ready answered 200 %s after the database was started again", took.Round(time.Millisecond))

	w.waitFor200s(t, ctx, 20, 30*time.Second, "writes after the database returned")
	w.halt()
	all := w.snapshot()

	t.Logf("all writes: %v", histogram(all))
	outage := between(all, stopped, starting)
	h := histogram(outage)
	t.Logf("writes sent after the database stopped and answered before it was started again: %v", h)
	if len(outage) == 0 {
		t.Errorf("no write was answered during the outage")
	}
	examples := map[string]attempt{}
	for _, a := range outage {
		if _, seen := examples[a.outcome()]; !seen {
			examples[a.outcome()] = a
		}
	}
	for o, a := range examples {
		t.Logf("during the outage, %s, e.g. %s", o, a.Body)
	}
	for o, n := range h {
		switch {
		case o == "503 not_ready":
		case strings.HasPrefix(o, "503 ") && !strings.Contains(o, "not a problem"):
			t.Logf("during the outage: %d writes answered %s (a 503 problem, though not not_ready)", n, o)
		case o == "200":
			t.Errorf("FINDING: %d writes answered 200 during the outage (sent after the database stopped)", n)
		default:
			t.Errorf("FINDING: %d writes during the outage answered %s, want a 503 problem (not_ready): e.g. %s %s", n, o, examples[o].Err, examples[o].Body)
		}
	}
	// Writes in flight while the database stopped: sent before it had stopped, answered after it was
	// told to stop.
	for _, a := range all {
		if a.Sent.Before(stopped) && a.Done.After(stopping) {
			t.Logf("in flight when the database stopped: sent %s, answered %s after %s: %s %s", a.Sent.Format("15:04:05.000"),
				a.Done.Format("15:04:05.000"), a.Done.Sub(a.Sent).Round(time.Millisecond), a.outcome(), a.Body)
		}
		if a.Status >= 500 && a.Status != 503 {
			t.Errorf("FINDING: a write answered %s (sent %s, answered %s; the database was told to stop at %s, started again at %s), want a 503 problem: %s",
				a.outcome(), a.Sent.Format("15:04:05.000"), a.Done.Format("15:04:05.000"), stopping.Format("15:04:05.000"), starting.Format("15:04:05.000"), a.Body)
		}
	}
	checkNoHang(t, all)
	checkWritesAfter(t, all, ready)

	after, err := f.svc.Inspect(ctx)
	if err != nil {
		t.Fatalf("inspect the service: %v", err)
	}
	if !after.State.Running || after.RestartCount != 0 {
		t.Errorf("the service did not stay up: running %t, restarts %d", after.State.Running, after.RestartCount)
	}
	checkDurable(t, ctx, f, all)
}

// TestFaultServiceKilledUnderLoad: the service container killed with SIGKILL while agents write, and
// started again. Once it is ready, writes succeed, every write that got a 200 is on the read plane
// and the wallet audit is clean.
func TestFaultServiceKilledUnderLoad(t *testing.T) {
	t.Parallel()
	ctx := beginFault(t)
	f := provisionFaultForum(t, ctx)

	w := startWriters(t, ctx, f, 4)
	w.waitFor200s(t, ctx, 20, 30*time.Second, "writes before the fault")

	if _, err := docker(t).ContainerKill(ctx, f.svc.GetContainerID(), client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil {
		t.Fatalf("kill the service: %v", err)
	}
	killed := time.Now()
	poll(t, ctx, killed, 30*time.Second, 100*time.Millisecond, "the service container exited after SIGKILL", func() (bool, string) {
		st, err := f.svc.State(ctx)
		if err != nil {
			return false, err.Error()
		}
		return !st.Running, fmt.Sprintf("status %s", st.Status)
	})
	if st, err := f.svc.State(ctx); err == nil {
		t.Logf("the service exited with %d (%s) after SIGKILL", st.ExitCode, st.Status)
		if st.ExitCode != 137 {
			t.Errorf("exit code %d after SIGKILL, want 137", st.ExitCode)
		}
	}
	// A moment without the service, the writers failing to connect.
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(2 * time.Second):
	}

	starting := time.Now()
	if err := f.svc.Start(ctx); err != nil { // waits for /health/ready (the container's wait strategy)
		t.Fatalf("start the service again: %v", err)
	}
	f.refreshEndpoints(t, ctx) // a restarted container publishes on new host ports
	took := readyAgain(t, ctx, f, starting, time.Minute, "/health/ready 200 after the service was started again")
	ready := time.Now()
	t.Logf("/health/ready answered 200 %s after the service was started again", took.Round(time.Millisecond))

	w.waitFor200s(t, ctx, 20, 30*time.Second, "writes after the restart")
	w.halt()
	all := w.snapshot()
	t.Logf("all writes: %v", histogram(all))
	t.Logf("writes while the service was down: %v", histogram(between(all, killed, ready)))

	checkNoHang(t, all)
	checkWritesAfter(t, all, ready)
	checkDurable(t, ctx, f, all)
}
