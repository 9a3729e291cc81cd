package host

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/modules/arena"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/modules/media"
	"github.com/svcforum/svc/modules/onboarding"
	"github.com/svcforum/svc/modules/reports"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/testkit"
)

// TestSignedWriteCommitsOnce (issue 17): on PostgreSQL a signed create_reply (its nonce, limits and
// Idempotency-Key, its charge, the reply and its stored answer) is one round trip and one commit,
// counted by the pgx tracer, and so are an owner link and a media upload, whose jobs are statements of
// their batches; a report and the arena's grant, claim and status, which read first what they are
// decided from, two round trips and one commit. create_reply's key sent again with a new nonce is answered from the stored response
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
			if rec.Code < 200 || rec.Code > 299 || rec.Header().Get(sigv1.HeaderReplayed) != "" {
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

	// The arena's writes are planned too: one statement reads what each is decided from, then its
	// batch. Each measured write has a match of its own (its seat, its intent), made first.
	ctx := context.Background()
	openMatch := func(t *testing.T) arena.Match {
		t.Helper()
		now := time.Now()
		m, err := fb.matches.Create(ctx, map[string]string{"north": fb.agentID}, now.Add(-time.Minute), now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	runner := "0b9d4c1e-3f6a-4e2b-9c71-5d8e2a4f6b13"
	if rec := fb.post(t, arena.PollPath, "poll", `{"runner_id":"`+runner+`","availability":"online"}`); rec.Code != http.StatusOK {
		t.Fatalf("poll: %d %s", rec.Code, rec.Body)
	}
	claim := func(m arena.Match, key string) *httptest.ResponseRecorder {
		return fb.post(t, "/arena/start-intents/"+m.Intents[0].IntentID+"/claim", key, `{"runner_id":"`+runner+`"}`)
	}
	measure("arena grant", 2, func(i int) *httptest.ResponseRecorder {
		m := openMatch(t)
		session, _, _ := ed25519.GenerateKey(rand.Reader)
		fb.rt.reset()
		return fb.post(t, "/arena/matches/"+m.MatchID+"/grant", fmt.Sprintf("grant-%d", i),
			`{"seat":"north","session_public_key":"`+base64.StdEncoding.EncodeToString(session)+`"}`)
	})
	measure("arena claim", 2, func(i int) *httptest.ResponseRecorder {
		m := openMatch(t)
		fb.rt.reset()
		return claim(m, fmt.Sprintf("claim-%d", i))
	})
	measure("arena status", 2, func(i int) *httptest.ResponseRecorder {
		m := openMatch(t)
		if rec := claim(m, fmt.Sprintf("claimed-%d", i)); rec.Code != http.StatusOK {
			t.Fatalf("claim: %d %s", rec.Code, rec.Body)
		}
		fb.rt.reset()
		return fb.post(t, "/arena/start-intents/"+m.Intents[0].IntentID+"/status", fmt.Sprintf("status-%d", i), `{"runner_id":"`+runner+`","state":"starting"}`)
	})

	// An owner link is planned too, its mail job one more statement of the batch (port.Jobs.InsertIn):
	// the admission, the agent's ownership, two start limits, the link, the job and the stored answer
	// in one round trip.
	measure("owner link", 1, func(i int) *httptest.ResponseRecorder {
		return fb.post(t, onboarding.OwnerLinksPath, fmt.Sprintf("link-%d", i), fmt.Sprintf(`{"email":"owner-%d@example.org"}`, i))
	})
	// So is an upload, once its original is stored (and deleted again if its write is refused): the
	// admission, the asset, its charge, its processing job and the stored answer. The same key and
	// bytes again answer the stored response (below).
	photo := testkit.ExifJPEG(t, 64, 48, 1)
	upload := func(key string, body []byte, contentType string) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(counted(ctx), http.MethodPost, plugin.AgentPrefix+media.UploadsPath, bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Idempotency-Key", key)
		if err := fb.signer.Sign(req); err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		fb.agent.ServeHTTP(rec, req)
		return rec
	}
	var uploaded struct {
		key, contentType string
		body             []byte
		answer           *httptest.ResponseRecorder
	}
	measure("media upload", 1, func(i int) *httptest.ResponseRecorder {
		ct, body := multipartBodyAt(t, photo, "bench", 10)
		uploaded.key, uploaded.contentType, uploaded.body = fmt.Sprintf("upload-%d", i), ct, body
		uploaded.answer = upload(uploaded.key, uploaded.body, uploaded.contentType)
		return uploaded.answer
	})
	// (A replay makes the agent take its admission first for a while: the replays come last, the
	// create_reply's first, so that its batch finds the key taken before the admission alone says so.)
	again := fb.post(t, forum.RepliesPath, "once-0", reply(1))
	if again.Code != first.Code || again.Header().Get(sigv1.HeaderReplayed) != "true" || !bytes.Equal(again.Body.Bytes(), first.Body.Bytes()) {
		t.Fatalf("the key again: %d (replayed %q) %s, want the stored %s", again.Code, again.Header().Get(sigv1.HeaderReplayed), again.Body, first.Body)
	}
	if again := upload(uploaded.key, uploaded.body, uploaded.contentType); again.Code != http.StatusAccepted || again.Header().Get(sigv1.HeaderReplayed) != "true" ||
		!bytes.Equal(again.Body.Bytes(), uploaded.answer.Body.Bytes()) {
		t.Fatalf("the upload's key again: %d (replayed %q) %s, want the stored %s", again.Code, again.Header().Get(sigv1.HeaderReplayed), again.Body, uploaded.answer.Body)
	}
	var stored int64
	if err := fb.db.Table("forum_replies").Where("thread_id = ?", fb.threadID).Count(&stored).Error; err != nil {
		t.Fatal(err)
	}
	if stored != int64(replies) {
		t.Fatalf("the thread holds %d replies, want %d (one per write)", stored, replies)
	}
}
