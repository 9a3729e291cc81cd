package forum_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/testkit"
)

// assets is a test double of the media module's port.Assets: the uploads it knows, by id. The real
// module, with its own table read on the write's transaction, is attached in host's tests.
type assets map[string]port.Asset

func (a assets) Resolve(_ context.Context, _ *gorm.DB, ids []string) (map[string]port.Asset, error) {
	out := map[string]port.Asset{}
	for _, id := range ids {
		if as, ok := a[id]; ok {
			out[id] = as
		}
	}
	return out, nil
}

func (assets) URL(id, variant string) string { return "https://svc.test/media/" + id + "/" + variant }

// add registers an upload of owner in status and returns its id.
func (a assets) add(owner, status string) string {
	id := newID()
	as := port.Asset{ID: id, OwnerID: owner, Status: status}
	if status == port.AssetReady {
		as.Format, as.Width, as.Height = "jpeg", 1200, 2400
		as.Display, as.Thumb = port.Variant{Width: 800, Height: 1600}, port.Variant{Width: 200, Height: 400}
	}
	a[id] = as
	return id
}

func image(asset string, mods ...func(map[string]any)) map[string]any {
	m := map[string]any{"asset_id": asset, "alt_text": "a bowl of soup"}
	for _, f := range mods {
		f(m)
	}
	return m
}

func asCover(m map[string]any) { m["is_cover"] = true }

// put replaces a post's images as a.
func (w *world) put(t testing.TB, a agent, kind, id string, images ...any) testkit.Result {
	t.Helper()
	path := strings.Replace(forum.ThreadAttachmentsPath, ":thread_id", id, 1)
	if kind == forum.KindReply {
		path = strings.Replace(forum.ReplyAttachmentsPath, ":reply_id", id, 1)
	}
	req := request(a, path, marshal(t, map[string]any{"billing": billing(), "attachments": append([]any{}, images...)}))
	req.Method = http.MethodPut
	return w.serve(req)
}

// TestAttachments is the life of a post's images on both databases: attached when the post is made
// (the cover shown first, each charged), replaced and detached by the author alone, shown by the read
// plane with alt text and URLs, and no longer shown (nor served, through port.Attachments) once the
// post is tombstoned.
func TestAttachments(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		assets := assets{}
		w := newWorldWith(t, dialect, assets)
		shown := forum.NewShown(plugin.ReadDB{DB: w.db})
		alice, bob := newAgent("alice"), newAgent("bob")
		cat := w.category(t, "soups")
		first, cover := assets.add(alice.ID, port.AssetReady), assets.add(alice.ID, port.AssetReady)
		caption := "day two"
		thread := w.thread(t, alice, cat, set("attachments", []any{image(first), image(cover, asCover, func(m map[string]any) { m["caption"] = caption })}))
		calls := w.meter.Calls()
		if last := calls[len(calls)-1]; last.Charge.Operation != port.OpCreateThread || last.Charge.Attachments != 2 {
			t.Fatalf("thread charge %+v, want create_thread with 2 attachments", last.Charge)
		}
		th := w.getThread(t, thread)
		if len(th.Attachments) != 2 || th.Attachments[0].AssetID != cover || !th.Attachments[0].IsCover || th.Attachments[1].AssetID != first {
			t.Fatalf("thread attachments %+v, want the cover first", th.Attachments)
		}
		if a := th.Attachments[0]; a.Caption == nil || *a.Caption != caption || a.Display.URL != "https://svc.test/media/"+cover+"/display" ||
			a.Width != 1200 || a.Thumb.Height != 400 || a.ContentType != "image/jpeg" || a.AltText != "a bowl of soup" {
			t.Fatalf("attachment %+v", a)
		}
		if ok, err := shown.Visible(context.Background(), cover); err != nil || !ok {
			t.Fatalf("Visible(cover) = %v, %v", ok, err)
		}

		// A reply with one image, then its set replaced with an empty one.
		reply := w.reply(t, alice, thread, "", set("attachments", []any{image(first)}))
		if rp := w.getReply(t, reply); len(rp.Attachments) != 1 || rp.Attachments[0].IsCover {
			t.Fatalf("reply attachments %+v", rp.Attachments)
		}
		r := w.put(t, alice, forum.KindReply, reply)
		testkit.Expect(t, r, http.StatusOK, "")
		testkit.Valid(t, "managed-attachments-response", r.Body)
		var managed forum.ManagedAttachmentsResponse
		r.Decode(t, &managed)
		if managed.TargetKind != forum.KindReply || managed.TargetID != reply || len(managed.Attachments) != 0 {
			t.Fatalf("managed %+v", managed)
		}
		if last := w.meter.Calls()[len(w.meter.Calls())-1]; last.Charge.Operation != port.OpManageReplyAttachments || last.Charge.Attachments != 0 || last.Charge.ResourceID != reply {
			t.Fatalf("manage charge %+v", last.Charge)
		}
		if rp := w.getReply(t, reply); len(rp.Attachments) != 0 {
			t.Fatalf("after detaching: %+v", rp.Attachments)
		}

		// The thread's set reordered, the cover moved: answered as the read plane shows it.
		r = w.put(t, alice, forum.KindThread, thread, image(cover), image(first, asCover))
		testkit.Expect(t, r, http.StatusOK, "")
		testkit.Valid(t, "managed-attachments-response", r.Body)
		r.Decode(t, &managed)
		if len(managed.Attachments) != 2 || managed.Attachments[0].AssetID != first || managed.Attachments[1].Caption != nil {
			t.Fatalf("managed %+v", managed.Attachments)
		}
		if last := w.meter.Calls()[len(w.meter.Calls())-1]; last.Charge.Operation != port.OpManageThreadAttachments || last.Charge.Attachments != 2 {
			t.Fatalf("manage charge %+v", last.Charge)
		}

		// Refusals, each charging nothing and changing nothing.
		before := len(w.meter.Calls())
		processing, failed, bobs := assets.add(alice.ID, port.AssetProcessing), assets.add(alice.ID, port.AssetFailed), assets.add(bob.ID, port.AssetReady)
		testkit.Expect(t, w.put(t, bob, forum.KindThread, thread, image(bobs)), http.StatusForbidden, string(problem.NotAuthor))
		expectAt(t, w.put(t, alice, forum.KindThread, thread, image(bobs)), http.StatusNotFound, string(problem.AssetNotFound), "/attachments/0/asset_id")
		expectAt(t, w.put(t, alice, forum.KindThread, thread, image(first), image(newID())), http.StatusNotFound, string(problem.AssetNotFound), "/attachments/1/asset_id")
		expectAt(t, w.put(t, alice, forum.KindThread, thread, image(processing)), http.StatusConflict, string(problem.AssetNotReady), "/attachments/0/asset_id")
		expectAt(t, w.put(t, alice, forum.KindThread, thread, image(failed)), http.StatusConflict, string(problem.AssetNotReady), "/attachments/0/asset_id")
		expect422(t, w.put(t, alice, forum.KindThread, thread, image(first), image(first)), "/attachments/1/asset_id", "duplicate")
		expect422(t, w.put(t, alice, forum.KindThread, thread, image(first, asCover), image(cover, asCover)), "/attachments/1/is_cover", "cover")
		expect422(t, w.put(t, alice, forum.KindReply, reply, image(first, asCover)), "/attachments/0/is_cover", "unknown_member")
		testkit.Expect(t, w.put(t, alice, forum.KindThread, newID(), image(first)), http.StatusNotFound, string(problem.NotFound))
		testkit.Expect(t, w.put(t, alice, forum.KindThread, "not-a-uuid", image(first)), http.StatusNotFound, string(problem.NotFound))
		testkit.Expect(t, w.put(t, alice, forum.KindThread, thread, image(first, func(m map[string]any) { m["alt_text"] = " " })),
			http.StatusBadRequest, string(problem.ContentPolicyViolation))
		r = w.post(t, alice, forum.RepliesPath, replyBody(thread, "", set("attachments", []any{image(processing)})))
		expectAt(t, r, http.StatusConflict, string(problem.AssetNotReady), "/attachments/0/asset_id")
		for _, c := range w.meter.Calls()[before:] {
			if !c.Refused {
				// The meter is reached only by a write that passed every check; none of these did.
				t.Fatalf("a refused attachment change was charged: %+v", c.Charge)
			}
		}
		if th := w.getThread(t, thread); len(th.Attachments) != 2 || th.Attachments[0].AssetID != first {
			t.Fatalf("refusals changed the thread's images: %+v", th.Attachments)
		}

		// Tombstoned: the images are neither shown nor served.
		w.tombstone(t, alice, forum.KindThread, thread)
		if th := w.getThread(t, thread); len(th.Attachments) != 0 {
			t.Fatalf("a tombstone shows images: %+v", th.Attachments)
		}
		for _, id := range []string{first, cover} {
			if ok, err := shown.Visible(context.Background(), id); err != nil || ok {
				t.Fatalf("Visible(%s) after the tombstone = %v, %v", id, ok, err)
			}
		}
		testkit.Expect(t, w.put(t, alice, forum.KindThread, thread), http.StatusForbidden, string(problem.ContentTombstoned))
	})
}

// TestAttachmentsWithoutMedia: a deployment without the media module refuses any image with a problem
// that says so, and still lets an author detach (an empty set).
func TestAttachmentsWithoutMedia(t *testing.T) {
	t.Parallel()
	w := newWorld(t, dbtest.Dialects[0])
	alice := newAgent("alice")
	thread := w.thread(t, alice, w.category(t, "soups"))
	r := w.put(t, alice, forum.KindThread, thread, image(newID()))
	expectAt(t, r, http.StatusUnprocessableEntity, string(problem.ValidationFailed), "/attachments")
	if !strings.Contains(string(r.Body), "no media module") {
		t.Fatalf("the refusal does not say why: %s", r.Body)
	}
	testkit.Expect(t, w.put(t, alice, forum.KindThread, thread), http.StatusOK, "")
}
