package host

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/modules/forum"
)

// TestAbandonedWritesReleaseTheirKeys (issue 30, defect 1): on PostgreSQL, 300 signed create_reply
// requests whose clients hang up 0-20 ms after sending them, 16 at a time, while the same agent's
// other writes run to the end. No other write is answered 503 (nothing an abandoned request left
// holds a lock long enough to make one wait out its deadline), and once every handler has returned
// no Idempotency-Key is still held: each abandoned write either committed its answer or let its key go
// at once, not when its lease ran out.
func TestAbandonedWritesReleaseTheirKeys(t *testing.T) {
	fb := newForumBench(t)
	addr := fb.ls.Addr(ListenerAgentEdge)
	body := func(n string) []byte {
		return fmt.Appendf(nil, `{"thread_id":%q,"body_markdown":"Reply %s.","billing":{"pricing_version":"bench","max_credit_cost":100}}`, fb.threadID, n)
	}
	signed := func(key string) *http.Request {
		b := body(key)
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+plugin.AgentPrefix+forum.RepliesPath, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		if err := fb.signer.Sign(req); err != nil {
			t.Fatal(err)
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		return req
	}
	if res := sendSigned(t, signed("warm")); res.status != http.StatusOK {
		t.Fatalf("warm-up reply: %d %s", res.status, res.body)
	}

	// The others: the same agent's writes, sent one after another to the end while the burst runs.
	stop := make(chan struct{})
	others := make(chan response, 1024)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(others)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			others <- sendSigned(t, signed(fmt.Sprintf("other-%d", i)))
		}
	}()

	// The burst: 300 writes, 16 at a time, each client gone 0-20 ms after sending, then sending the
	// same bytes again (refused: the nonce is used, or its first request still runs) and a retry
	// signed anew with the same Idempotency-Key, as clients whose connection dropped do.
	const writes, together = 300, 16
	sem := make(chan struct{}, together)
	var burst sync.WaitGroup
	abandon := func(raw []byte) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := c.Write(raw); err != nil {
			t.Error(err)
		}
		time.Sleep(time.Duration(rand.IntN(21)) * time.Millisecond)
		_ = c.Close()
	}
	for i := range writes {
		key := fmt.Sprintf("abandoned-%d", i)
		var raw bytes.Buffer
		if err := signed(key).Write(&raw); err != nil {
			t.Fatal(err)
		}
		sem <- struct{}{}
		burst.Add(1)
		go func() {
			defer burst.Done()
			defer func() { <-sem }()
			abandon(raw.Bytes())
			abandon(raw.Bytes())
			if res := sendSigned(t, signed(key)); res.status == http.StatusServiceUnavailable {
				t.Errorf("a retry during the burst: %d %s", res.status, res.body)
			}
		}()
	}
	burst.Wait()
	close(stop)
	wg.Wait()
	n := 0
	for res := range others {
		n++
		if res.status != http.StatusOK {
			t.Errorf("another write of the agent during the burst: %d %s", res.status, res.body)
		}
	}
	if n == 0 {
		t.Fatal("no other write was sent during the burst")
	}

	// Stopping the service waits for every handler to return.
	if err := fb.app.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	db, err := database.Open(fb.url, database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	if err := db.Raw(`SELECT idem_key FROM sigv1_idempotency WHERE state = 'running'`).Scan(&held).Error; err != nil {
		t.Fatal(err)
	}
	if len(held) > 0 {
		t.Errorf("%d Idempotency-Keys still held after every request ended (they would answer 409 until their lease ends): %v", len(held), held)
	}
}

// sendSigned sends req on a connection of its own and reads the whole answer.
func sendSigned(t *testing.T, req *http.Request) response {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := c.Do(req)
	if err != nil {
		t.Error(err)
		return response{}
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{res.StatusCode, res.Header, b}
}

// TestStuckDatabaseIsWaitedForOnce (issue 30, defect 2): while PostgreSQL cannot take the admission's
// nonce (the table is locked, as a database frozen mid-commit holds it), a signed write is answered
// 503 once its one database deadline has passed: its batch waits that deadline out, and the answer is
// sent before the clean-up that follows it (the admission on its own, the nonce's record), each of
// which used to wait a deadline of its own first (15 s with the default).
func TestStuckDatabaseIsWaitedForOnce(t *testing.T) {
	fb := newForumBench(t, func(c *Config) { c.DB.Timeout = 3 * time.Second })
	reply := func(n int) string {
		return fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Reply %d.","billing":{"pricing_version":"bench","max_credit_cost":100}}`, fb.threadID, n)
	}
	if rec := fb.post(t, forum.RepliesPath, "warm", reply(0)); rec.Code != http.StatusOK {
		t.Fatalf("warm-up reply: %d %s", rec.Code, rec.Body)
	}
	db, err := database.Open(fb.url, database.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	defer sqlDB.Close()
	ctx := context.Background()
	lock, err := sqlDB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, "LOCK TABLE sigv1_nonces IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	fb.rt.reset()
	rec := &flushCount{ResponseRecorder: httptest.NewRecorder(), rt: fb.rt}
	fb.agent.ServeHTTP(rec, fb.request(t, forum.RepliesPath, "stuck", reply(1)))
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("a write while the database is stuck: %d %s, want 503", rec.Code, rec.Body)
	}
	trips := fb.rt.trips.Load() // the answer was sent when the handler returned
	if rec.flushed {
		trips = rec.trips // the answer was sent before the clean-up that followed it
	}
	if trips != 1 {
		t.Errorf("the request sent %d exchanges to the stuck database before its answer, each waiting a deadline of its own; want 1 (one deadline for the request)", trips)
	}
	// The database is back: the same request, sent again, is written.
	if rec := fb.post(t, forum.RepliesPath, "stuck", reply(1)); rec.Code != http.StatusOK {
		t.Fatalf("the write once the database is back: %d %s", rec.Code, rec.Body)
	}
}

// TestOneNonceBlastedAtTwoReplicas (issue 30, defect 1): the same signed bytes sent 50 times at once,
// half to each of two replicas on one PostgreSQL, are written once and refused 49 times with 409;
// none waits out its deadline behind the others (503).
func TestOneNonceBlastedAtTwoReplicas(t *testing.T) {
	fb := newForumBench(t)
	cfg := DefaultConfig()
	cfg.DatabaseURL = fb.url
	cfg.LogLevel = "error"
	cfg.Settings = benchSettings{settings{testSettings(), map[string]any{"media-dir": t.TempDir()}}}
	cfg.CursorKeys = testCursorKey
	cfg.PublicAddr, cfg.AgentEdgeAddr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	var ls *Listeners
	other := fx.New(Serve(cfg, NewLogger(cfg, discard{}), allModules(t)), fx.NopLogger, fx.Populate(&ls))
	if err := other.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Stop(context.Background()) })
	addrs := []string{fb.ls.Addr(ListenerAgentEdge), ls.Addr(ListenerAgentEdge)}

	b := fmt.Appendf(nil, `{"thread_id":%q,"body_markdown":"Blasted.","billing":{"pricing_version":"bench","max_credit_cost":100}}`, fb.threadID)
	req, err := http.NewRequest(http.MethodPost, "http://"+addrs[0]+plugin.AgentPrefix+forum.RepliesPath, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "blasted")
	if err := fb.signer.Sign(req); err != nil {
		t.Fatal(err)
	}
	const copies = 50
	results := make([]response, copies)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range copies {
		r := req.Clone(context.Background())
		r.URL.Host, r.Host = addrs[i%2], addrs[i%2]
		r.Body = io.NopCloser(bytes.NewReader(b))
		wg.Go(func() {
			<-start
			results[i] = sendSigned(t, r)
		})
	}
	close(start)
	wg.Wait()
	counts := map[int]int{}
	for _, res := range results {
		counts[res.status]++
		if res.status != http.StatusOK && res.status != http.StatusConflict {
			t.Errorf("a copy answered %d %s", res.status, res.body)
		}
	}
	if counts[http.StatusOK] != 1 || counts[http.StatusConflict] != copies-1 {
		t.Errorf("answers %v, want one 200 and %d x 409", counts, copies-1)
	}
}

// flushCount is a recorder that notes how many exchanges with PostgreSQL the request had sent when it
// first flushed its answer to the client.
type flushCount struct {
	*httptest.ResponseRecorder
	rt      *roundTrips
	flushed bool
	trips   int64
}

func (f *flushCount) Flush() {
	if !f.flushed {
		f.flushed, f.trips = true, f.rt.trips.Load()
	}
	f.ResponseRecorder.Flush()
}
