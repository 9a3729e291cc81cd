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

// outage is how long a fault lasts: longer than writeTimeout, so that a write that waits for the
// database instead of failing shows as a hang.
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
	svcEnv["SVC_DB_TIMEOUT"] = dbTimeout.String()
	// checkDurable reads back every reply that got a 200: far more reads than a person makes.
	svcEnv["SVC_PUBLIC_RATE"] = "100000"
	svcEnv["SVC_PUBLIC_BURST"] = "100000"
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

// dbTimeout is the services' SVC_DB_TIMEOUT in the fault tests: the longest a statement or a
// transaction may take before the request is answered 503.
const dbTimeout = 2 * time.Second

// answerBound is the longest any write may wait for its answer while the database does not answer: a
// blocked statement ends at dbTimeout (plus the second the driver gives a cancelled query before it
// closes the connection), and a write may meet one more in its clean-up (the idempotency claim's
// release), plus scheduling slack.
const answerBound = 2*(dbTimeout+time.Second) + 3*time.Second

// databaseFault is something done to PostgreSQL while agents write, and undone.
type databaseFault struct {
	name  string
	do    func(ctx context.Context, f *faultForum) error
	undo  func(ctx context.Context, f *faultForum) error
	bound time.Duration // every write sent during the fault is answered within it (0: no bound beyond writeTimeout)
}

// TestFaultDatabaseStoppedUnderWriteLoad: PostgreSQL shut down (SIGTERM: it closes its connections)
// while agents write, and started again.
func TestFaultDatabaseStoppedUnderWriteLoad(t *testing.T) {
	t.Parallel()
	runDatabaseFault(t, databaseFault{
		name: "stopped",
		do: func(ctx context.Context, f *faultForum) error {
			timeout := stopTimeout
			return f.db.Stop(ctx, &timeout)
		},
		undo: func(ctx context.Context, f *faultForum) error { return f.db.Start(ctx) },
	})
}

// TestFaultDatabaseKilledUnderWriteLoad: PostgreSQL killed (SIGKILL: connections cut mid-transaction,
// crash recovery on start) while agents write, and started again.
func TestFaultDatabaseKilledUnderWriteLoad(t *testing.T) {
	t.Parallel()
	runDatabaseFault(t, databaseFault{
		name: "killed",
		do: func(ctx context.Context, f *faultForum) error {
			_, err := docker(t).ContainerKill(ctx, f.db.GetContainerID(), client.ContainerKillOptions{Signal: "SIGKILL"})
			return err
		},
		undo: func(ctx context.Context, f *faultForum) error { return f.db.Start(ctx) },
	})
}

// TestFaultDatabaseFrozenUnderWriteLoad: PostgreSQL frozen (docker pause: its connections stay open
// and nothing answers, like a hung host or a partition) while agents write, then thawed. Every write
// is answered 503 within the bound set by the database timeout; none hangs.
func TestFaultDatabaseFrozenUnderWriteLoad(t *testing.T) {
	t.Parallel()
	runDatabaseFault(t, databaseFault{
		name: "frozen",
		do: func(ctx context.Context, f *faultForum) error {
			_, err := docker(t).ContainerPause(ctx, f.db.GetContainerID(), client.ContainerPauseOptions{})
			return err
		},
		undo: func(ctx context.Context, f *faultForum) error {
			_, err := docker(t).ContainerUnpause(ctx, f.db.GetContainerID(), client.ContainerUnpauseOptions{})
			return err
		},
		bound: answerBound,
	})
}

// runDatabaseFault applies fault to PostgreSQL while agents write. /health/ready turns 503, writes
// fail with a 503 problem instead of hanging or a 500, and after the fault is undone the service is
// ready again without a restart, writes succeed, every write that got a 200 is on the read plane and
// the wallet audit is clean.
func runDatabaseFault(t *testing.T, fault databaseFault) {
	ctx := beginFault(t)
	f := provisionFaultForum(t, ctx)

	w := startWriters(t, ctx, f, 4)
	w.waitFor200s(t, ctx, 20, 30*time.Second, "writes before the fault")

	faulting := time.Now()
	if err := fault.do(ctx, f); err != nil {
		t.Fatalf("%s: %v", fault.name, err)
	}
	faulted := time.Now()
	t.Logf("the database was %s from %s to %s", fault.name, faulting.Format("15:04:05.000"), faulted.Format("15:04:05.000"))
	took := poll(t, ctx, faulted, dbTimeout+5*time.Second, 200*time.Millisecond, "/health/ready 503 after the database was "+fault.name, func() (bool, string) {
		r, err := get(ctx, f.publicURL()+"/health/ready")
		if err != nil {
			return false, err.Error()
		}
		return notReadyForDatabase(r), fmt.Sprintf("%d %s %s", r.Status, r.ContentType, r.Body)
	})
	t.Logf("/health/ready answered 503 %s after the database was %s", took.Round(time.Millisecond), fault.name)

	// The fault lasts long enough for the pool's connections to be found dead and for writes to be
	// refused: several seconds of load against no database.
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(outage):
	}

	undoing := time.Now()
	if err := fault.undo(ctx, f); err != nil {
		t.Fatalf("undo %s: %v", fault.name, err)
	}
	took = readyAgain(t, ctx, f, undoing, 30*time.Second, "/health/ready 200 after the database returned")
	ready := time.Now()
	t.Logf("/health/ready answered 200 %s after the fault was undone", took.Round(time.Millisecond))

	w.waitFor200s(t, ctx, 20, 30*time.Second, "writes after the database returned")
	w.halt()
	all := w.snapshot()

	t.Logf("all writes: %v", histogram(all))
	during := between(all, faulted, undoing)
	h := histogram(during)
	t.Logf("writes sent after the database was %s and answered before the fault was undone: %v", fault.name, h)
	if len(during) == 0 {
		t.Errorf("no write was answered during the fault")
	}
	examples := map[string]attempt{}
	for _, a := range during {
		if _, seen := examples[a.outcome()]; !seen {
			examples[a.outcome()] = a
		}
	}
	for o, a := range examples {
		t.Logf("during the fault, %s, e.g. %s", o, a.Body)
	}
	for o, n := range h {
		switch {
		case o == "503 not_ready":
		case o == "200":
			t.Errorf("FINDING: %d writes answered 200 while the database was %s", n, fault.name)
		default:
			t.Errorf("FINDING: %d writes while the database was %s answered %s, want 503 not_ready: e.g. %s %s", n, fault.name, o, examples[o].Err, examples[o].Body)
		}
	}
	for _, a := range all {
		// Writes in flight when the fault began: sent before it, answered after it began.
		if a.Sent.Before(faulted) && a.Done.After(faulting) {
			t.Logf("in flight when the database was %s: sent %s, answered %s after %s: %s %s", fault.name, a.Sent.Format("15:04:05.000"),
				a.Done.Format("15:04:05.000"), a.Done.Sub(a.Sent).Round(time.Millisecond), a.outcome(), a.Body)
		}
		if a.Status >= 500 && a.Status != 503 {
			t.Errorf("FINDING: a write answered %s (sent %s, answered %s; the fault began at %s, was undone at %s), want a 503 problem: %s",
				a.outcome(), a.Sent.Format("15:04:05.000"), a.Done.Format("15:04:05.000"), faulting.Format("15:04:05.000"), undoing.Format("15:04:05.000"), a.Body)
		}
		if fault.bound > 0 && a.Done.After(faulting) && a.Sent.Before(undoing) && a.Done.Sub(a.Sent) > fault.bound {
			t.Errorf("FINDING: a write sent at %s waited %s for its answer (%s), more than %s while the database was %s",
				a.Sent.Format("15:04:05.000"), a.Done.Sub(a.Sent).Round(time.Millisecond), a.outcome(), fault.bound, fault.name)
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
