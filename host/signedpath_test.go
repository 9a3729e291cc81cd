package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/modules/reports"
	"github.com/svcforum/svc/modules/sigv1"
)

// TestSignedWriteCommitsOnce (issue 17): on PostgreSQL a signed create_reply (its nonce, limits and
// Idempotency-Key, its charge, the reply and its stored answer) is one round trip and one commit,
// counted by the pgx tracer; a report, which reads its post first, two round trips and one commit. Its key sent again with a new nonce is answered from the stored response
// (the write's batch finds the key taken, then the admission alone says so), and nothing is written
// twice.
func TestSignedWriteCommitsOnce(t *testing.T) {
	fb := newForumBench(t)
	reply := func(n int) string {
		return fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Reply %d.","billing":{"pricing_version":"bench","max_credit_cost":100}}`, fb.threadID, n)
	}
	// The first write fills the process's caches (the prices of the pricing version).
	if rec := fb.post(t, forum.RepliesPath, "warm", reply(0)); rec.Code != http.StatusOK {
		t.Fatalf("warm-up reply: %d %s", rec.Code, rec.Body)
	}

	// Each write commits once. Its round trips are counted too, and a write may spend one-off ones:
	// until the guard's memory has taken in the agent just registered (it polls every 250 ms) the key
	// is looked up in the database, and a statement a pool connection has not run yet is prepared
	// first. So a write is tried again, a little later, until it costs what it should.
	var first *httptest.ResponseRecorder
	measure := func(what string, wantTrips float64, post func(i int) *httptest.ResponseRecorder) {
		t.Helper()
		for i := 0; ; i++ {
			fb.rt.reset()
			rec := post(i)
			if rec.Code != http.StatusOK && rec.Code != http.StatusCreated || rec.Header().Get(sigv1.HeaderReplayed) != "" {
				t.Fatalf("%s: %d (replayed %q) %s", what, rec.Code, rec.Header().Get(sigv1.HeaderReplayed), rec.Body)
			}
			if first == nil {
				first = rec
			}
			trips, commits, _ := fb.rt.report(1)
			if commits != 1 {
				t.Fatalf("a signed %s committed %v times, want once", what, commits)
			}
			if trips == wantTrips {
				return
			}
			if i == 20 {
				t.Fatalf("a signed %s took %v round trips, want %v", what, trips, wantTrips)
			}
			t.Logf("%s %d: %v round trips; again", what, i, trips)
			time.Sleep(100 * time.Millisecond)
		}
	}
	replies := 1 // the warm-up's
	measure("create_reply", 1, func(i int) *httptest.ResponseRecorder {
		replies++
		return fb.post(t, forum.RepliesPath, fmt.Sprintf("once-%d", i), reply(i+1))
	})
	// A report is planned too: the post's read, then its batch with the admission. Each reports a new
	// reply of its own (one open report per target).
	measure("report", 2, func(i int) *httptest.ResponseRecorder {
		var target struct {
			ReplyID string `json:"reply_id"`
		}
		rec := fb.post(t, forum.RepliesPath, fmt.Sprintf("target-%d", i), reply(100+i))
		if err := json.Unmarshal(rec.Body.Bytes(), &target); err != nil || target.ReplyID == "" {
			t.Fatalf("target reply: %d %s", rec.Code, rec.Body)
		}
		replies++
		fb.rt.reset()
		return fb.post(t, reports.ReportsPath, fmt.Sprintf("report-%d", i), fmt.Sprintf(`{"target_reply_id":%q,"reason_code":"prompt_injection"}`, target.ReplyID))
	})

	// (A replay makes the agent take its admission first for a while: it comes last.)
	again := fb.post(t, forum.RepliesPath, "once-0", reply(1))
	if again.Code != first.Code || again.Header().Get(sigv1.HeaderReplayed) != "true" || !bytes.Equal(again.Body.Bytes(), first.Body.Bytes()) {
		t.Fatalf("the key again: %d (replayed %q) %s, want the stored %s", again.Code, again.Header().Get(sigv1.HeaderReplayed), again.Body, first.Body)
	}
	var stored int64
	if err := fb.db.Table("forum_replies").Where("thread_id = ?", fb.threadID).Count(&stored).Error; err != nil {
		t.Fatal(err)
	}
	if stored != int64(replies) {
		t.Fatalf("the thread holds %d replies, want %d (one per write)", stored, replies)
	}
}
