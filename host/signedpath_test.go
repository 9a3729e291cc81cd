package host

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"

	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/modules/sigv1"
)

// TestSignedWriteCommitsOnce (issue 17): on PostgreSQL a signed create_reply (its nonce, limits and
// Idempotency-Key, its charge, the reply and its stored answer) is one round trip and one commit,
// counted by the pgx tracer. Its key sent again with a new nonce is answered from the stored response
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

	fb.rt.reset()
	first := fb.post(t, forum.RepliesPath, "once", reply(1))
	if first.Code != http.StatusOK || first.Header().Get(sigv1.HeaderReplayed) != "" {
		t.Fatalf("reply: %d (replayed %q) %s", first.Code, first.Header().Get(sigv1.HeaderReplayed), first.Body)
	}
	if trips, commits, _ := fb.rt.report(1); trips != 1 || commits != 1 {
		t.Fatalf("a signed create_reply took %v round trips and %v commits, want 1 and 1", trips, commits)
	}

	again := fb.post(t, forum.RepliesPath, "once", reply(1))
	if again.Code != first.Code || again.Header().Get(sigv1.HeaderReplayed) != "true" || !bytes.Equal(again.Body.Bytes(), first.Body.Bytes()) {
		t.Fatalf("the key again: %d (replayed %q) %s, want the stored %s", again.Code, again.Header().Get(sigv1.HeaderReplayed), again.Body, first.Body)
	}
	var replies int64
	if err := fb.db.Table("forum_replies").Where("thread_id = ?", fb.threadID).Count(&replies).Error; err != nil {
		t.Fatal(err)
	}
	if replies != 2 {
		t.Fatalf("the thread holds %d replies, want 2 (the warm-up and the one write)", replies)
	}
}
