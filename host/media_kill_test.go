package host

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/testkit"
)

var svcBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "svc-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "svc")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/svc").CombinedOutput(); err != nil {
		return "", &exec.Error{Name: "go build: " + string(out), Err: err}
	}
	return bin, nil
})

// serveBinary starts the svc binary with env, and returns its process and its listeners' addresses.
func serveBinary(t *testing.T, env []string) (*exec.Cmd, map[string]string) {
	t.Helper()
	bin, err := svcBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Dir = t.TempDir()
	cmd.Env = append([]string{"SVC_PUBLIC_ADDR=127.0.0.1:0", "SVC_AGENT_EDGE_ADDR=127.0.0.1:0", "SVC_ADMIN_ADDR=127.0.0.1:0",
		"SVC_LOG_FORMAT=json", "SVC_CURSOR_KEY=" + testCursorKey, "SVC_ONBOARDING_DRAFT_KEY=" + testDraftKey, "SVC_SHUTDOWN_DELAY=0s", "SVC_PUBLIC_RATE=100000",
		"SVC_PUBLIC_BURST=100000", "HOME=" + os.Getenv("HOME"), "PATH=" + os.Getenv("PATH")}, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addrs := map[string]string{}
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "listening" {
				addrs[m["listener"].(string)] = m["addr"].(string)
				if len(addrs) == 3 {
					close(found)
				}
			} else if !strings.Contains(sc.Text(), `"level":"INFO"`) {
				t.Log(sc.Text())
			}
		}
	}()
	select {
	case <-found:
	case <-time.After(time.Minute):
		t.Fatal("svc did not start listening")
	}
	return cmd, addrs
}

// Scenario 34 with a real kill: the process working an upload's job is killed (SIGKILL) in the middle
// of it; a new process rescues the job once it is older than --jobs-rescue-after, works it again, and
// the upload ends ready with exactly its two variants.
func TestMediaJobSurvivesAKilledWorker(t *testing.T) {
	url := dbtest.URL(t, database.Postgres)
	env := map[string]string{"SVC_DATABASE_URL": url}
	id := provision(t, env, "killed")
	publish(t, env, wirePricing)
	credit(t, env, id.orgID, 100)
	mediaDir := t.TempDir()
	base := []string{"SVC_DATABASE_URL=" + url, "SVC_MEDIA_DIR=" + mediaDir, "SVC_JOBS_POLL_INTERVAL=100ms"}

	first, addrs := serveBinary(t, base)
	agent := "http://" + addrs[ListenerAgentEdge]
	photo := testkit.LargeJPEG(t, 8000, 5000) // 40 megapixels: seconds of work
	assetID := decodeBody(t, multipartUpload(t, id, agent, "u-1", photo, 10), 202, "media-upload-accepted")["asset_id"].(string)

	db := openDB(t, url)
	deadline := time.Now().Add(time.Minute)
	for {
		var state string
		if err := db.Raw(`SELECT state FROM river_job WHERE kind = 'media_process'`).Scan(&state).Error; err != nil {
			t.Fatal(err)
		}
		if state == "running" {
			break
		}
		if state != "available" && state != "" {
			t.Fatalf("the job is %s before the worker could be killed", state)
		}
		if time.Now().After(deadline) {
			t.Fatal("the job never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	var status string
	if err := db.Raw(`SELECT status FROM media_assets WHERE id = ?`, assetID).Scan(&status).Error; err != nil || status != "processing" {
		t.Fatalf("after the kill the upload is %q (%v), want processing", status, err)
	}

	_, addrs = serveBinary(t, append(base, "SVC_JOBS_TIMEOUT=20s", "SVC_JOBS_RESCUE_AFTER=25s"))
	agent = "http://" + addrs[ListenerAgentEdge]
	// River's rescuer looks every 30 s for jobs running longer than --jobs-rescue-after.
	st := awaitProcessed(t, id, agent, assetID, 2*time.Minute)
	if st["status"] != "ready" || st["width"] != 8000.0 {
		t.Fatalf("after the rescue: %v", st)
	}
	// River records a job's completion a moment after its work returned.
	var job struct {
		State   string
		Attempt int
	}
	for deadline := time.Now().Add(30 * time.Second); job.State != "completed"; time.Sleep(50 * time.Millisecond) {
		if err := db.Raw(`SELECT state, attempt FROM river_job WHERE kind = 'media_process'`).Scan(&job).Error; err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job is %+v, want completed", job)
		}
	}
	if job.Attempt != 2 {
		t.Fatalf("the completed job made %d attempts, want 2: the killed one and the rescue", job.Attempt)
	}
	files, err := filepath.Glob(filepath.Join(mediaDir, "*", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	originals, _ := filepath.Glob(filepath.Join(mediaDir, "originals", "*"))
	if len(files) != 2 || len(originals) != 0 {
		t.Fatalf("stored %v and originals %v, want the two variants alone", files, originals)
	}
}
