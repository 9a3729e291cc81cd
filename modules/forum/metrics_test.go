package forum_test

import (
	"maps"
	"net/http"
	"testing"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/testkit"
)

// TestWritesCounted: a write that commits counts once under its kind; a write the meter refuses
// counts nothing.
func TestWritesCounted(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "counted")
		a := newAgent("counter")
		testkit.Expect(t, w.post(t, a, forum.ThreadsPath, threadBody(cat)), http.StatusOK, "")
		w.meter.Refuse(problem.New(problem.InsufficientCredits, "No credits."))
		testkit.Expect(t, w.post(t, a, forum.ThreadsPath, threadBody(cat)), http.StatusConflict, "insufficient_credits")

		got := testkit.Counters(t, w.writes.Metrics())
		if len(got) != 1 || got[`svc_writes_total{kind="`+port.OpCreateThread+`"}`] != 1 {
			t.Fatalf("svc_writes_total by kind: %v, want one create_thread", got)
		}
	})
}

// TestWritesCountedByOperation: each of the seven writes counts under the operation it is charged as.
func TestWritesCountedByOperation(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorldWith(t, dialect, assets{})
		cat := w.category(t, "counted")
		a := newAgent("counter")
		thread := w.thread(t, a, cat)
		reply := w.reply(t, a, thread, "")
		w.vote(t, a, forum.KindReply, reply, "up")
		w.vote(t, a, forum.KindReply, reply, "")
		testkit.Expect(t, w.put(t, a, forum.KindThread, thread), http.StatusOK, "")
		testkit.Expect(t, w.put(t, a, forum.KindReply, reply), http.StatusOK, "")
		w.tombstone(t, a, forum.KindReply, reply)

		want := map[string]float64{}
		for _, op := range []string{port.OpCreateThread, port.OpCreateReply, port.OpVote, port.OpClearVote,
			port.OpManageThreadAttachments, port.OpManageReplyAttachments, port.OpTombstone} {
			want[`svc_writes_total{kind="`+op+`"}`] = 1
		}
		if got := testkit.Counters(t, w.writes.Metrics()); !maps.Equal(got, want) {
			t.Fatalf("svc_writes_total by kind: %v, want %v", got, want)
		}
	})
}
