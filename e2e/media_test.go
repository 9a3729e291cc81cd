package e2e

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/moby/moby/client"

	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/sdk"
	"github.com/svcforum/svc/testkit"
)

// mediaTimeout bounds TestScenarioMediaOnS3AcrossReplicas. After its worker is killed, a job is rescued
// only by the leader's rescuer, which runs every 30 s (River's default) and takes a job once it has run
// longer than SVC_JOBS_RESCUE_AFTER (25 s); when the killed replica was the leader, the survivor takes
// over only after the leadership's 15 s lease ends. The rescue and the job's second run alone may take
// over a minute (measured: 30 to 52 s from the kill to ready, with two busy cores): the 3 minutes given
// to that upload's processing allow it, testTimeout after provisioning and the first story does not
// always.
const mediaTimeout = 4 * time.Minute

// The media story against the built image, two replicas, PostgreSQL and a real S3 server: an agent,
// through the Go SDK, uploads a phone's JPEG with GPS data, sees it ready, makes it the cover of a
// thread and attaches it to a reply, then empties the reply's set; the page and both replicas serve
// the image without any metadata. Then a 40-megapixel upload is processing when the replica working it
// is killed (SIGKILL); the other replica rescues the job and the upload ends ready, its variants in the
// bucket and its original gone. Every step is charged once.
func TestScenarioMediaOnS3AcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := beginWithin(t, mediaTimeout)
	nw := newNetwork(t, ctx)
	pg := startPostgres(t, ctx, nw)
	s3 := startS3(t, nw.Name)
	env := map[string]string{"SVC_DATABASE_URL": databaseURL, "SVC_BASE_URL": baseURL,
		"SVC_MEDIA_STORAGE": "s3", "SVC_MEDIA_S3_ENDPOINT": s3.NetworkEndpoint, "SVC_MEDIA_S3_BUCKET": s3.Bucket,
		"SVC_MEDIA_S3_ACCESS_KEY": s3.AccessKey, "SVC_MEDIA_S3_SECRET_KEY": s3.SecretKey, "SVC_MEDIA_S3_INSECURE": "true",
		"SVC_JOBS_POLL_INTERVAL": "200ms", "SVC_JOBS_TIMEOUT": "20s", "SVC_JOBS_RESCUE_AFTER": "25s"}
	run := func(cmd ...string) result { return runOnce(t, ctx, nw, env, cmd...) }
	if res := run("migrate"); res.ExitCode != 0 {
		t.Fatalf("migrate: exit %d: %s", res.ExitCode, res.Stderr)
	}
	org, _ := admin(t, ctx, run, "org", "create", "--name", "Bakery")["org_id"].(string)
	baker := addAgent(t, ctx, run, org, "baker")
	admin(t, ctx, run, "wallet", "credit", "--org", org, "--credits", "100")
	publishPricing(t, ctx, nw, env, wirePricingFile)
	catID, _ := admin(t, ctx, run, "category", "create", "--slug", "bread", "--name", "Bread")["category_id"].(string)

	a := startService(t, ctx, nw, env)
	b := startService(t, ctx, nw, env)
	bakerOn := map[*service]*sdk.Client{a: sdkClient(t, ctx, a, baker), b: sdkClient(t, ctx, b, baker)}
	billing := sdk.BillingDeclaration{PricingVersion: "2026-11", MaxCreditCost: 20}
	upload := func(s *service, key string, image []byte) *sdk.MediaUploadAccepted {
		t.Helper()
		var info sdk.ResponseInfo
		up, err := bakerOn[s].UploadMedia(ctx, sdk.MediaUploadRequest{Image: image, PricingVersion: "2026-11", MaxCreditCost: 10},
			sdk.WithIdempotencyKey(key), sdk.WithResponseInfo(&info))
		if err != nil || info.Status != http.StatusAccepted {
			t.Fatalf("upload %s: %d %v", key, info.Status, err)
		}
		return up
	}
	// processed polls an upload's status on s until it is no longer processing.
	processed := func(s *service, assetID string, within time.Duration) *sdk.MediaUploadStatus {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, within)
		defer cancel()
		st, err := bakerOn[s].AwaitMediaUpload(wctx, assetID, 250*time.Millisecond)
		if err != nil {
			t.Fatalf("upload %s processed within %s: %v", assetID, within, err)
		}
		return st
	}

	// Upload on A, poll and attach on B: the replicas share the database and the bucket.
	up := upload(a, "u-1", testkit.ExifJPEG(t, 1200, 800, 6))
	assetID := up.AssetID
	if up.Charge.Price != 3 || up.Charge.Balance != 97 {
		t.Fatalf("upload charge %+v", up.Charge)
	}
	if st := processed(b, assetID, time.Minute); st.Status != sdk.UploadReady || st.Width == nil || *st.Width != 800 {
		t.Fatalf("upload: %+v", st)
	}
	thread, err := bakerOn[b].CreateThread(ctx, sdk.CreateThreadRequest{CategoryID: catID, Title: "Crumb shot", BodyMarkdown: "Look at the crumb.",
		Attachments: []sdk.ThreadAttachmentInput{{AssetID: assetID, AltText: "A loaf cut open", IsCover: true}}, Billing: billing}, sdk.WithIdempotencyKey("t-1"))
	if err != nil {
		t.Fatalf("thread: %v", err)
	}
	threadID := thread.ThreadID
	reply, err := bakerOn[a].CreateReply(ctx, sdk.CreateReplyRequest{ThreadID: threadID, BodyMarkdown: "Same loaf.",
		Attachments: []sdk.ReplyAttachmentInput{{AssetID: assetID, AltText: "The loaf again"}}, Billing: billing}, sdk.WithIdempotencyKey("r-1"))
	if err != nil {
		t.Fatalf("reply: %v", err)
	}
	put, err := bakerOn[b].ManageReplyAttachments(ctx, reply.ReplyID, sdk.ManageReplyAttachmentsRequest{Billing: billing}, sdk.WithIdempotencyKey("p-1"))
	if err != nil || put.Charge.Balance != 78 {
		t.Fatalf("detach: %+v %v; after upload 3, thread 11, reply 6 and PUT 2 the balance must be 78", put, err)
	}
	for name, s := range map[string]*service{"A": a, "B": b} {
		got, err := bakerOn[s].Thread(ctx, threadID)
		if err != nil || len(got.Attachments) != 1 || got.Attachments[0].Display.URL != baseURL+"/media/"+assetID+"/display" {
			t.Fatalf("thread on %s: %+v %v", name, got, err)
		}
		var info sdk.ResponseInfo
		img, contentType, err := bakerOn[s].MediaVariant(ctx, assetID, sdk.VariantDisplay, sdk.WithResponseInfo(&info))
		if err != nil || contentType != "image/jpeg" || info.Header.Get("X-Content-Type-Options") != "nosniff" ||
			bytes.Contains(img, []byte("Exif")) || bytes.Contains(img, []byte{0xFF, 0xE1}) {
			t.Fatalf("image on %s: %v %s %v, Exif left: %v", name, err, contentType, info.Header, bytes.Contains(img, []byte("Exif")))
		}
		page := mustFetch(t, ctx, s.URL+"/forum/t/"+threadID)
		if page.Status != 200 || !strings.Contains(string(page.Body), `src="/media/`+assetID+`/display"`) {
			t.Fatalf("page on %s: %d", name, page.Status)
		}
	}

	// A long job, and the replica working it killed in the middle of it.
	bigID := upload(a, "u-2", testkit.LargeJPEG(t, 8000, 5000)).AssetID
	host, err := pg.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	db, err := database.Open(host, database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var worker string
	poll(t, ctx, time.Now(), time.Minute, 10*time.Millisecond, "the big upload's job running", func() (bool, string) {
		var job struct {
			State       string
			AttemptedBy string
		}
		if err := db.Raw(`SELECT state, coalesce(attempted_by[array_length(attempted_by, 1)], '') AS attempted_by FROM river_job WHERE args->>'asset_id' = ?`, bigID).Scan(&job).Error; err != nil {
			t.Fatal(err)
		}
		if job.State == "completed" {
			t.Fatal("the job completed before its worker could be killed")
		}
		worker = job.AttemptedBy
		return job.State == "running", job.State
	})
	victim, survivor := a, b
	if info, err := b.Inspect(ctx); err == nil && strings.HasPrefix(worker, info.Config.Hostname) {
		victim, survivor = b, a
	}
	if _, err := docker(t).ContainerKill(ctx, victim.GetContainerID(), client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil {
		t.Fatalf("kill the working replica: %v", err)
	}
	if st := processed(survivor, bigID, 3*time.Minute); st.Status != sdk.UploadReady || st.Width == nil || *st.Width != 8000 {
		t.Fatalf("after the kill: %+v", st)
	}
	var objects []string
	for o := range s3.client(t).ListObjects(ctx, s3.Bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		objects = append(objects, o.Key)
	}
	want := []string{"variants/" + assetID + "/display", "variants/" + assetID + "/thumb", "variants/" + bigID + "/display", "variants/" + bigID + "/thumb"}
	if strings.Join(objects, " ") != strings.Join(sortedCopy(want), " ") {
		t.Fatalf("bucket holds %v, want %v (the variants alone, no original)", objects, want)
	}
	if wallet, err := bakerOn[survivor].Wallet(ctx); err != nil || wallet.Balance != 75 {
		t.Fatalf("wallet %+v %v, want 78 - 3 for the second upload", wallet, err)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
