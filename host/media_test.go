package host

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/testkit"
)

// settings overrides some of the modules' settings of a test's service.
type settings struct {
	plugin.Settings
	values map[string]any
}

func (s settings) String(name string) string {
	if v, ok := s.values[name].(string); ok {
		return v
	}
	return s.Settings.String(name)
}

func (s settings) Int(name string) int {
	if v, ok := s.values[name].(int); ok {
		return v
	}
	return s.Settings.Int(name)
}

func (s settings) Duration(name string) time.Duration {
	if v, ok := s.values[name].(time.Duration); ok {
		return v
	}
	return s.Settings.Duration(name)
}

// mediaConfig is testConfig with the media module's directory in the test's own temporary directory
// and a runner that looks for new jobs often.
func mediaConfig(t *testing.T, dialect string) Config {
	cfg := testConfig(t, dialect)
	cfg.Settings = settings{testSettings(), map[string]any{"media-dir": t.TempDir()}}
	cfg.Jobs.PollInterval = 100 * time.Millisecond
	return cfg
}

// multipartUpload is a signed multipart upload of file as id, with key.
func multipartUpload(t *testing.T, id identity, agent, key string, file []byte, maxCost int64) response {
	t.Helper()
	ct, body := multipartBody(t, file, maxCost)
	return uploadBody(t, id, agent, key, ct, body)
}

// multipartBody is an upload's body (its boundary is random: a retry must resend these very bytes).
func multipartBody(t *testing.T, file []byte, maxCost int64) (string, []byte) {
	t.Helper()
	return multipartBodyAt(t, file, "2026-11", maxCost)
}

// multipartBodyAt is multipartBody paying with pricing version.
func multipartBodyAt(t *testing.T, file []byte, version string, maxCost int64) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("file", "IMG_0001.JPG")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(file)
	_ = mw.WriteField("pricing_version", version)
	_ = mw.WriteField("max_credit_cost", fmt.Sprint(maxCost))
	_ = mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

// uploadBody signs and sends an upload's body as id, with key.
func uploadBody(t *testing.T, id identity, agent, key, contentType string, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, agent+plugin.AgentPrefix+"/media/uploads", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Idempotency-Key", key)
	if err := id.signer.Sign(req); err != nil {
		t.Fatal(err)
	}
	return send(t, req)
}

// signedPut signs and sends a PUT of body to path (under plugin.AgentPrefix) as id.
func signedPut(t *testing.T, id identity, base, path, key, body string) response {
	t.Helper()
	return signedWrite(t, id, http.MethodPut, base, path, key, body)
}

// awaitProcessed polls an upload's status until it is no longer processing, and returns it.
func awaitProcessed(t *testing.T, id identity, agent, assetID string, within time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st := decodeBody(t, signedGet(t, id, agent, "/media/uploads/"+assetID), 200, "media-upload-status")
		if st["status"] != "processing" {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("upload %s still processing after %s", assetID, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The story with signed requests alone, on both databases, with the real job runner: an agent
// uploads a phone's JPEG (GPS and orientation 6), sees it become ready, makes it the cover of a new
// thread and attaches it to a reply, then replaces the reply's set with an empty one; the thread's
// page and the read plane show it, and the served bytes are turned and carry no metadata. Each step
// is charged once.
func TestMediaFlow(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		cfg := mediaConfig(t, dialect)
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
		id := provision(t, env, "photo-"+dialect)
		publish(t, env, wirePricing)
		credit(t, env, id.orgID, 100)
		admin(t, env, "category", "create", "--slug", "soups", "--name", "Soups")
		catID := admin(t, env, "category", "create", "--slug", "bread", "--name", "Bread")["category_id"].(string)
		r := start(t, cfg, allModules(t))
		agent := "http://" + r.listeners.Addr(ListenerAgentEdge)
		public := "http://" + r.listeners.Addr(ListenerPublic)

		ct, body := multipartBody(t, testkit.ExifJPEG(t, 1200, 800, 6), 10)
		res := uploadBody(t, id, agent, "upload-1", ct, body)
		accepted := decodeBody(t, res, http.StatusAccepted, "media-upload-accepted")
		assetID := accepted["asset_id"].(string)
		if accepted["charge"].(map[string]any)["price"] != 3.0 || accepted["status_url"] != "/agent-api/v1/media/uploads/"+assetID {
			t.Fatalf("accepted %v", accepted)
		}
		// The same upload again (a retry after a lost answer) is the stored answer, not a second image.
		replay := uploadBody(t, id, agent, "upload-1", ct, body)
		if replay.status != http.StatusAccepted || replay.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(replay.body, res.body) {
			t.Fatalf("replay: %d %s", replay.status, replay.body)
		}
		// The replay stored its own original before its admission, taken with its write, answered the
		// stored response: that original is deleted again.
		originals, err := os.ReadDir(filepath.Join(cfg.Settings.String("media-dir"), "originals"))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range originals { // the first upload's may be processed and gone already
			if o.Name() != assetID {
				t.Fatalf("the original %s is stored besides the upload's %s", o.Name(), assetID)
			}
		}
		// Refused at once: never stored, never charged.
		checkProblem(t, multipartUpload(t, id, agent, "upload-2", testkit.SVG(true), 10), 422, "unsupported_image")
		checkProblem(t, multipartUpload(t, id, agent, "upload-3", testkit.APNG(t), 10), 422, "unsupported_image")

		st := awaitProcessed(t, id, agent, assetID, time.Minute)
		if st["status"] != "ready" || st["width"] != 800.0 || st["height"] != 1200.0 {
			t.Fatalf("processed: %v", st)
		}

		thread := decodeBody(t, forumPost(t, id, agent, "/threads", "t-1", fmt.Sprintf(
			`{"category_id":%q,"title":"Crumb shot","body_markdown":"Look at the crumb.","attachments":[{"asset_id":%q,"alt_text":"A loaf cut open","caption":"Day two","is_cover":true}],%s}`,
			catID, assetID, billing20)), 200, "created-thread-response")
		threadID := thread["thread_id"].(string)
		if thread["charge"].(map[string]any)["price"] != 11.0 {
			t.Fatalf("thread with one image charged %v, want 10 + 1", thread["charge"])
		}
		reply := decodeBody(t, forumPost(t, id, agent, "/replies", "r-1", fmt.Sprintf(
			`{"thread_id":%q,"body_markdown":"Same loaf.","attachments":[{"asset_id":%q,"alt_text":"The loaf again"}],%s}`,
			threadID, assetID, billing20)), 200, "created-reply-response")
		replyID := reply["reply_id"].(string)
		managed := decodeBody(t, signedPut(t, id, agent, "/replies/"+replyID+"/attachments", "p-1",
			`{"attachments":[],`+billing10+`}`), 200, "managed-attachments-response")
		if len(managed["attachments"].([]any)) != 0 || managed["charge"].(map[string]any)["price"] != 2.0 {
			t.Fatalf("managed %v", managed)
		}

		got := decodeBody(t, do(t, "GET", public+"/api/v1/threads/"+threadID, nil), 200, "thread")
		images := got["attachments"].([]any)
		if len(images) != 1 {
			t.Fatalf("thread attachments %v", images)
		}
		img := images[0].(map[string]any)
		if img["is_cover"] != true || img["alt_text"] != "A loaf cut open" || img["width"] != 800.0 {
			t.Fatalf("attachment %v", img)
		}
		replies := decodeBody(t, do(t, "GET", public+"/api/v1/threads/"+threadID+"/replies", nil), 200, "reply-list")
		if n := len(replies["replies"].([]any)[0].(map[string]any)["attachments"].([]any)); n != 0 {
			t.Fatalf("the reply still shows %d images", n)
		}
		for _, v := range []string{"display", "thumb"} {
			u, err := url.Parse(img[v].(map[string]any)["url"].(string))
			if err != nil {
				t.Fatal(err)
			}
			served := do(t, "GET", public+u.Path, nil)
			if served.status != 200 || served.header.Get("Content-Type") != "image/jpeg" ||
				served.header.Get("X-Content-Type-Options") != "nosniff" || served.header.Get("Content-Security-Policy") != "default-src 'none'" {
				t.Fatalf("%s: %d %v", v, served.status, served.header)
			}
			if bytes.Contains(served.body, []byte("Exif")) || bytes.Contains(served.body, []byte{0xFF, 0xE1}) {
				t.Fatalf("%s still carries an Exif block", v)
			}
		}
		page := do(t, "GET", public+"/forum/t/"+threadID, nil)
		if page.status != 200 || !strings.Contains(string(page.body), `src="/media/`+assetID+`/display"`) ||
			!strings.Contains(string(page.body), `alt="A loaf cut open"`) {
			t.Fatalf("thread page: %d %s", page.status, page.body)
		}

		// Charged once each: the upload 3, the thread 11, the reply 6, the PUT 2.
		usage := decodeBody(t, signedGet(t, id, agent, "/usage"), 200, "usage-response")
		if n := len(usage["events"].([]any)); n != 4 {
			t.Fatalf("%d usage events: %s", n, mustJSONText(t, usage))
		}
		if wallet := decodeBody(t, signedGet(t, id, agent, "/wallet"), 200, "wallet-response"); wallet["balance"] != 78.0 {
			t.Fatalf("balance %v, want 100 - 22", wallet["balance"])
		}
		auditClean(t, env)

		// Tombstoned, the thread no longer shows the image, and nothing serves it.
		decodeBody(t, forumPost(t, id, agent, "/content/tombstone", "x-1", fmt.Sprintf(`{"thread_id":%q,%s}`, threadID, billing10)), 200, "tombstone-response")
		checkProblem(t, do(t, "GET", public+"/media/"+assetID+"/display", nil), 404, "asset_not_found")
	})
}

const billing20 = `"billing":{"pricing_version":"2026-11","max_credit_cost":20}`

func mustJSONText(t *testing.T, v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// A deployment without media keeps the forum whole but refuses images with a problem that says why;
// one with media but without the forum takes uploads and serves no image (nothing shows one).
func TestMediaSubsetDeployments(t *testing.T) {
	mods := func(ids ...string) []plugin.Descriptor {
		m, err := Select(Catalog(), ids)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Run("forum without media", func(t *testing.T) {
		cfg := mediaConfig(t, dbtest.Dialects[0])
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
		id := provision(t, env, "nomedia")
		publish(t, env, wirePricing)
		credit(t, env, id.orgID, 100)
		catID := admin(t, env, "category", "create", "--slug", "soups", "--name", "Soups")["category_id"].(string)
		r := start(t, cfg, mods("billing", "discovery", "forum", "sigv1"))
		agent := "http://" + r.listeners.Addr(ListenerAgentEdge)
		res := forumPost(t, id, agent, "/threads", "t-1", fmt.Sprintf(
			`{"category_id":%q,"title":"Soup","body_markdown":"Soup.","attachments":[{"asset_id":"0196f3a9-5a6b-7c7d-8e8f-9a0b1c2d3e4f","alt_text":"soup"}],%s}`, catID, billing10))
		p := checkProblem(t, res, 422, "validation_failed")
		if !strings.Contains(mustJSONText(t, p), "no media module") {
			t.Fatalf("the refusal does not say why: %v", p)
		}
		checkProblem(t, multipartUpload(t, id, agent, "u-1", testkit.JPEG(t, 8, 8), 10), 404, "not_found")
		decodeBody(t, forumPost(t, id, agent, "/threads", "t-2", fmt.Sprintf(`{"category_id":%q,"title":"Soup","body_markdown":"Soup.",%s}`, catID, billing10)), 200, "created-thread-response")
	})
	t.Run("media without forum", func(t *testing.T) {
		cfg := mediaConfig(t, dbtest.Dialects[0])
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
		id := provision(t, env, "noforum")
		publish(t, env, wirePricing)
		credit(t, env, id.orgID, 100)
		r := start(t, cfg, mods("billing", "discovery", "media", "sigv1"))
		agent := "http://" + r.listeners.Addr(ListenerAgentEdge)
		public := "http://" + r.listeners.Addr(ListenerPublic)
		assetID := decodeBody(t, multipartUpload(t, id, agent, "u-1", testkit.JPEG(t, 64, 48), 10), 202, "media-upload-accepted")["asset_id"].(string)
		if st := awaitProcessed(t, id, agent, assetID, time.Minute); st["status"] != "ready" {
			t.Fatalf("processed: %v", st)
		}
		checkProblem(t, do(t, "GET", public+"/media/"+assetID+"/display", nil), 404, "asset_not_found")
	})
}

// A person's browser shows the attached image on the thread's page: Chromium loads it under the page's
// Content-Security-Policy, with its alt text.
func TestMediaPageInChromium(t *testing.T) {
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed (%v): `make tools` installs it", err)
	}
	cfg := mediaConfig(t, dbtest.Dialects[0])
	env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
	id := provision(t, env, "browser")
	publish(t, env, wirePricing)
	credit(t, env, id.orgID, 100)
	catID := admin(t, env, "category", "create", "--slug", "soups", "--name", "Soups")["category_id"].(string)
	r := start(t, cfg, allModules(t))
	agent := "http://" + r.listeners.Addr(ListenerAgentEdge)
	public := "http://" + r.listeners.Addr(ListenerPublic)
	assetID := decodeBody(t, multipartUpload(t, id, agent, "u-1", testkit.PNG(t, 640, 480, false), 10), 202, "media-upload-accepted")["asset_id"].(string)
	if st := awaitProcessed(t, id, agent, assetID, time.Minute); st["status"] != "ready" {
		t.Fatalf("processed: %v", st)
	}
	threadID := decodeBody(t, forumPost(t, id, agent, "/threads", "t-1", fmt.Sprintf(
		`{"category_id":%q,"title":"Soup","body_markdown":"Soup.","attachments":[{"asset_id":%q,"alt_text":"A red and blue test card","is_cover":true}],%s}`,
		catID, assetID, billing20)), 200, "created-thread-response")["thread_id"].(string)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancelAlloc()
	defer cancel()
	ctx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	if _, err := chromedp.Run(ctx, chromedp.Steps(chromedp.Navigate(public+"/forum/t/"+threadID), chromedp.WaitReady(chromedp.CSS("figure.cover img")))); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	// naturalWidth is 0 until the image loaded and decoded: a CSP or a wrong address would leave it so.
	type imgState struct {
		Complete bool   `json:"complete"`
		Width    int    `json:"width"`
		Alt      string `json:"alt"`
	}
	var loaded imgState
	for !loaded.Complete {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[imgState](`(() => { const i = document.querySelector("figure.cover img"); return {complete: i.complete, width: i.naturalWidth, alt: i.alt}; })()`))
		if err != nil {
			t.Fatalf("chromium: %v", err)
		}
		loaded = v
		time.Sleep(50 * time.Millisecond)
	}
	if loaded.Width != 640 || loaded.Alt != "A red and blue test card" {
		t.Fatalf("the image in the page: %+v, want loaded at 640 px wide with its alt text", loaded)
	}
}

// An upload whose body stops arriving is answered 408 once the route's receive timeout has passed
// (WIRE.md section 9), and nothing is kept or charged.
func TestMediaSlowBodyIs408(t *testing.T) {
	cfg := mediaConfig(t, dbtest.Dialects[0])
	// The receive timeout outlasts the listener's write timeout, which runs from the request's headers:
	// the 408 must still be written.
	cfg.Settings = settings{testSettings(), map[string]any{"media-dir": t.TempDir(), "media-receive-timeout": 2 * time.Second}}
	cfg.HTTP.Write = time.Second
	env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
	id := provision(t, env, "slow")
	publish(t, env, wirePricing)
	credit(t, env, id.orgID, 100)
	r := start(t, cfg, allModules(t))
	addr := r.listeners.Addr(ListenerAgentEdge)
	ct, body := multipartBody(t, testkit.JPEG(t, 64, 64), 10)
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+plugin.AgentPrefix+"/media/uploads", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Idempotency-Key", "slow-1")
	if err := id.signer.Sign(req); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var head bytes.Buffer
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", req.URL.RequestURI(), addr, len(body))
	_ = req.Header.Write(&head)
	head.WriteString("\r\n")
	head.Write(body[:len(body)/2]) // and then nothing more
	if _, err := conn.Write(head.Bytes()); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	checkProblem(t, response{res.StatusCode, res.Header, raw}, http.StatusRequestTimeout, "request_timeout")
	db := openDB(t, cfg.DatabaseURL)
	if n := countRows(t, db, "media_assets", "1 = 1"); n != 0 {
		t.Fatalf("a stalled upload left %d rows", n)
	}
}

// intSettings are settings with some integer settings overridden.
type intSettings struct {
	settings
	ints map[string]int
}

func (s intSettings) Int(name string) int {
	if v, ok := s.ints[name]; ok {
		return v
	}
	return s.settings.Int(name)
}

// The status of an upload answers what its operation in the agent plane's document declares (spec
// section 7 lists 408 for "media upload and status", and 429 for "media"): a GET whose body stops
// arriving is 408 request_timeout once the listener's read timeout has passed, even with a write
// timeout no longer than it, and an agent past its request limit gets 429 rate_limited.
func TestMediaStatusTimeoutAndRateLimitAreDeclared(t *testing.T) {
	cfg := mediaConfig(t, dbtest.Dialects[0])
	cfg.Settings = intSettings{settings{testSettings(), map[string]any{"media-dir": t.TempDir()}}, map[string]int{"sigv1-attempts-per-window": 2}}
	// As by default, the write timeout is no longer than the read timeout: both run out together.
	cfg.HTTP.Read, cfg.HTTP.Write = time.Second, time.Second
	env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
	id := provision(t, env, "poller")
	r := start(t, cfg, allModules(t))
	agentDoc := loadServed(t, "http://"+r.listeners.Addr(ListenerPublic)+"/contracts/openapi/agent.json")
	addr := r.listeners.Addr(ListenerAgentEdge)
	path := plugin.AgentPrefix + "/media/uploads/0190a000-0000-7000-8000-000000000000"

	// A body sent with the GET (it takes none) that stops half-way.
	body := []byte(`{"a GET takes no body, and this one never ends":true}`)
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := id.signer.Sign(req); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var head bytes.Buffer
	fmt.Fprintf(&head, "GET %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", path, addr, len(body))
	_ = req.Header.Write(&head)
	head.WriteString("\r\n")
	head.Write(body[:len(body)/2])
	if _, err := conn.Write(head.Bytes()); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("no answer to a GET whose body stalled: %v", err)
	}
	raw, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	timedOut := response{res.StatusCode, res.Header, raw}
	checkProblem(t, timedOut, http.StatusRequestTimeout, "request_timeout")
	agentDoc.check(t, req, body, timedOut)

	// Two polls within the limit, then 429.
	for i, want := range []int{http.StatusNotFound, http.StatusNotFound, http.StatusTooManyRequests} {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := id.signer.Sign(req); err != nil {
			t.Fatal(err)
		}
		res := send(t, req)
		if res.status != want {
			t.Fatalf("poll %d: %d, want %d: %s", i+1, res.status, want, res.body)
		}
		agentDoc.check(t, req, nil, res)
	}
}

// An upload that fails through the service's fault is refunded, and one the agent's file broke is not
// (WIRE.md section 9), through the assembled service with its job runner: with storage that keeps
// originals but no variants and one attempt per upload, a good JPEG fails storage_unavailable and its
// charge comes back once, as a refund in the agent's usage and credits in its wallet; a truncated one
// fails undecodable and keeps its charge.
func TestMediaFailedUploadIsRefunded(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		cfg := mediaConfig(t, dialect)
		dir := t.TempDir()
		// A file where the variants' directory would be: every variant fails to be stored.
		if err := os.WriteFile(filepath.Join(dir, "variants"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg.Settings = intSettings{settings{testSettings(), map[string]any{"media-dir": dir}}, map[string]int{"media-attempts": 1}}
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
		id := provision(t, env, "refunded")
		publish(t, env, wirePricing)
		credit(t, env, id.orgID, 100)
		r := start(t, cfg, allModules(t))
		agent := "http://" + r.listeners.Addr(ListenerAgentEdge)

		accepted := decodeBody(t, multipartUpload(t, id, agent, "up-good", testkit.JPEG(t, 64, 64), 10), http.StatusAccepted, "media-upload-accepted")
		charge := accepted["charge"].(map[string]any)
		if charge["balance"] != float64(97) {
			t.Fatalf("charge %v", charge)
		}
		st := awaitProcessed(t, id, agent, accepted["asset_id"].(string), time.Minute)
		if st["status"] != "failed" || st["failure_code"] != "storage_unavailable" {
			t.Fatalf("the upload: %v", st)
		}
		usage := decodeBody(t, signedGet(t, id, agent, "/usage"), 200, "usage-response")
		events := usage["events"].([]any)
		refund := events[0].(map[string]any)
		if len(events) != 2 || refund["kind"] != "refund" || refund["refund_of"] != charge["usage_event_id"] ||
			refund["price"] != float64(3) || refund["resource_id"] != accepted["asset_id"] || refund["operation"] != "media_upload" {
			t.Fatalf("usage after the failed upload: %v", usage)
		}
		if w := decodeBody(t, signedGet(t, id, agent, "/wallet"), 200, "wallet-response"); w["balance"] != float64(100) {
			t.Fatalf("wallet after the refund: %v", w)
		}

		broken := decodeBody(t, multipartUpload(t, id, agent, "up-broken", testkit.Truncated(t), 10), http.StatusAccepted, "media-upload-accepted")
		st = awaitProcessed(t, id, agent, broken["asset_id"].(string), time.Minute)
		if st["status"] != "failed" || st["failure_code"] != "undecodable" {
			t.Fatalf("the broken upload: %v", st)
		}
		if w := decodeBody(t, signedGet(t, id, agent, "/wallet"), 200, "wallet-response"); w["balance"] != float64(97) {
			t.Fatalf("wallet after the undecodable upload: %v", w)
		}
		db := openDB(t, cfg.DatabaseURL)
		if n := countRows(t, db, "billing_usage_events", "kind = ?", "refund"); n != 1 {
			t.Fatalf("%d refunds, want 1", n)
		}
		if n := countRows(t, db, "billing_ledger", "kind = ?", "refund"); n != 1 {
			t.Fatalf("%d refunds in the ledger, want 1", n)
		}
	})
}
