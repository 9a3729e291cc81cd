package e2e

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/moby/moby/client"

	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/testkit"
)

const mediaBilling = `"billing":{"pricing_version":"2026-11","max_credit_cost":20}`

// mediaTimeout bounds TestScenarioMediaOnS3AcrossReplicas. After its worker is killed, a job is rescued
// only by the leader's rescuer, which runs every 30 s (River's default) and takes a job once it has run
// longer than SVC_JOBS_RESCUE_AFTER (25 s); when the killed replica was the leader, the survivor takes
// over only after the leadership's 15 s lease ends. The rescue and the job's second run alone may take
// over a minute (measured: 30 to 52 s from the kill to ready, with two busy cores): the 3 minutes given
// to awaitUpload allow it, testTimeout after provisioning and the first story does not always.
const mediaTimeout = 4 * time.Minute

// uploadRequest is a signed multipart upload of file by id to base.
func uploadRequest(t *testing.T, ctx context.Context, id agentIdentity, base, key string, file []byte) *http.Request {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("file", "IMG_0001.JPG")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(file)
	_ = mw.WriteField("pricing_version", "2026-11")
	_ = mw.WriteField("max_credit_cost", "10")
	_ = mw.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+agentPrefix+"/media/uploads", bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Idempotency-Key", key)
	if err := id.Signer.Sign(req); err != nil {
		t.Fatal(err)
	}
	return req
}

// awaitUpload polls an upload's status on base until it is no longer processing.
func awaitUpload(t *testing.T, ctx context.Context, id agentIdentity, base, assetID string, within time.Duration) map[string]any {
	t.Helper()
	var st map[string]any
	poll(t, ctx, time.Now(), within, 250*time.Millisecond, "upload "+assetID+" processed", func() (bool, string) {
		st = jsonBody(t, "upload status", signedSend(t, ctx, id, http.MethodGet, base, "/media/uploads/"+assetID, "", ""), 200)
		return st["status"] != "processing", fmt.Sprint(st["status"])
	})
	return st
}

// The media story against the built image, two replicas, PostgreSQL and a real S3 server: an agent
// uploads a phone's JPEG with GPS data, sees it ready, makes it the cover of a thread and attaches it
// to a reply, then empties the reply's set; the page and both replicas serve the image without any
// metadata. Then a 40-megapixel upload is processing when the replica working it is killed (SIGKILL);
// the other replica rescues the job and the upload ends ready, its variants in the bucket and its
// original gone. Every step is charged once.
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
	edge := map[*service]string{}
	for _, s := range []*service{a, b} {
		e, err := s.PortEndpoint(ctx, agentEdgePort, "http")
		if err != nil {
			t.Fatal(err)
		}
		edge[s] = e
	}

	// Upload on A, poll and attach on B: the replicas share the database and the bucket.
	up := jsonBody(t, "upload", sendRequest(t, uploadRequest(t, ctx, baker, edge[a], "u-1", testkit.ExifJPEG(t, 1200, 800, 6))), 202)
	assetID, _ := up["asset_id"].(string)
	if ch, _ := up["charge"].(map[string]any); ch["price"] != 3.0 || ch["balance"] != 97.0 {
		t.Fatalf("upload charge %v", up["charge"])
	}
	if st := awaitUpload(t, ctx, baker, edge[b], assetID, time.Minute); st["status"] != "ready" || st["width"] != 800.0 {
		t.Fatalf("upload: %v", st)
	}
	thread := jsonBody(t, "thread", signedSend(t, ctx, baker, http.MethodPost, edge[b], "/threads", "t-1", fmt.Sprintf(
		`{"category_id":%q,"title":"Crumb shot","body_markdown":"Look at the crumb.","attachments":[{"asset_id":%q,"alt_text":"A loaf cut open","is_cover":true}],%s}`,
		catID, assetID, mediaBilling)), 200)
	threadID, _ := thread["thread_id"].(string)
	reply := jsonBody(t, "reply", signedSend(t, ctx, baker, http.MethodPost, edge[a], "/replies", "r-1", fmt.Sprintf(
		`{"thread_id":%q,"body_markdown":"Same loaf.","attachments":[{"asset_id":%q,"alt_text":"The loaf again"}],%s}`, threadID, assetID, mediaBilling)), 200)
	replyID, _ := reply["reply_id"].(string)
	put := jsonBody(t, "detach", signedSend(t, ctx, baker, http.MethodPut, edge[b], "/replies/"+replyID+"/attachments", "p-1",
		`{"attachments":[],`+mediaBilling+`}`), 200)
	if ch, _ := put["charge"].(map[string]any); ch["balance"] != 78.0 {
		t.Fatalf("after upload 3, thread 11, reply 6 and PUT 2 the balance is %v, want 78", ch["balance"])
	}
	for name, s := range map[string]*service{"A": a, "B": b} {
		got := jsonBody(t, "thread on "+name, mustFetch(t, ctx, s.URL+"/api/v1/threads/"+threadID), 200)
		images, _ := got["attachments"].([]any)
		if len(images) != 1 {
			t.Fatalf("thread on %s: %v", name, got["attachments"])
		}
		display, _ := images[0].(map[string]any)["display"].(map[string]any)
		u, err := url.Parse(fmt.Sprint(display["url"]))
		if err != nil {
			t.Fatal(err)
		}
		img := mustFetch(t, ctx, s.URL+u.Path)
		if img.Status != 200 || img.Header.Get("Content-Type") != "image/jpeg" || img.Header.Get("X-Content-Type-Options") != "nosniff" ||
			bytes.Contains(img.Body, []byte("Exif")) || bytes.Contains(img.Body, []byte{0xFF, 0xE1}) {
			t.Fatalf("image on %s: %d %v, Exif left: %v", name, img.Status, img.Header, bytes.Contains(img.Body, []byte("Exif")))
		}
		page := mustFetch(t, ctx, s.URL+"/forum/t/"+threadID)
		if page.Status != 200 || !strings.Contains(string(page.Body), `src="/media/`+assetID+`/display"`) {
			t.Fatalf("page on %s: %d", name, page.Status)
		}
	}

	// A long job, and the replica working it killed in the middle of it.
	big := jsonBody(t, "big upload", sendRequest(t, uploadRequest(t, ctx, baker, edge[a], "u-2", testkit.LargeJPEG(t, 8000, 5000))), 202)
	bigID, _ := big["asset_id"].(string)
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
	if st := awaitUpload(t, ctx, baker, edge[survivor], bigID, 3*time.Minute); st["status"] != "ready" || st["width"] != 8000.0 {
		t.Fatalf("after the kill: %v", st)
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
	wallet := jsonBody(t, "wallet", signedSend(t, ctx, baker, http.MethodGet, edge[survivor], "/wallet", "", ""), 200)
	if wallet["balance"] != 75.0 {
		t.Fatalf("balance %v, want 78 - 3 for the second upload", wallet["balance"])
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
