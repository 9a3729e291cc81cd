package host

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildServer builds the svc binary as make build and make run do, without cgo, and checks that no C
// SQLite is linked into it: gorm's SQLite dialector once pulled github.com/mattn/go-sqlite3 in, whose
// C amalgamation took most of a cold make run to compile. svc's SQLite is modernc.org/sqlite.
func buildServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "svc")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/svc")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
	out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	info := string(out)
	for _, dep := range []string{"github.com/mattn/go-sqlite3", "gorm.io/driver/sqlite"} {
		if strings.Contains(info, "\t"+dep+"\t") {
			t.Errorf("the svc binary links %s", dep)
		}
	}
	for _, want := range []string{"\tmodernc.org/sqlite\t", "\tbuild\tCGO_ENABLED=0\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("go version -m lacks %q:\n%s", strings.TrimSpace(want), info)
		}
	}
	return bin
}

// The built binary serves on the SQLite default; `svc health` says it is ready. On SIGTERM it turns
// not ready while it still answers (the lame-duck period), then drains and exits 0. With no
// SVC_AGENT_EDGE_URL, agents are handed the edge listener's own address, which it logs.
func TestBinaryServesAndStopsOnSIGTERM(t *testing.T) {
	bin := buildServer(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "serve")
	cmd.Dir = dir
	cmd.Env = []string{
		"SVC_PUBLIC_ADDR=127.0.0.1:0", "SVC_AGENT_EDGE_ADDR=127.0.0.1:0", "SVC_ADMIN_ADDR=127.0.0.1:0",
		"SVC_LOG_FORMAT=json", "SVC_CURSOR_KEY=" + testCursorKey, "SVC_ONBOARDING_DRAFT_KEY=" + testDraftKey, "SVC_SHUTDOWN_DELAY=3s",
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	lines := make(chan map[string]any, 1024)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			} else {
				lines <- map[string]any{"msg": "not json: " + sc.Text()}
			}
		}
		close(lines)
	}()
	var public, edge, handed string
	deadline := time.After(30 * time.Second)
	for public == "" || handed == "" {
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatal("svc exited before listening")
			}
			if strings.HasPrefix(m["msg"].(string), "not json") {
				t.Fatalf("log line is not JSON: %v", m["msg"])
			}
			switch {
			case m["msg"] == "listening" && m["listener"] == ListenerPublic:
				public = m["addr"].(string)
			case m["msg"] == "listening" && m["listener"] == ListenerAgentEdge:
				edge = m["addr"].(string)
			case m["msg"] == "agents are handed" && m["channel"] == "edge":
				handed, _ = m["agent_api"].(string)
			}
		case <-deadline:
			t.Fatal("svc did not start listening")
		}
	}
	if want := "http://" + edge + "/agent-api/v1"; handed != want {
		t.Fatalf("agents are handed %q, want the edge listener's %q", handed, want)
	}
	for _, path := range []string{"/health/live", "/health/ready", "/.well-known/svc"} {
		if res := do(t, "GET", "http://"+public+path, nil); res.status != 200 {
			t.Fatalf("%s: %d %s", path, res.status, res.body)
		}
	}
	// The SQLite default lives under ./var of the working directory.
	if _, err := os.Stat(filepath.Join(dir, "var", "svc.db")); err != nil {
		t.Fatalf("SQLite default: %v", err)
	}

	health := func() (string, int) {
		out, err := exec.Command(bin, "health", "--public-addr", public).CombinedOutput()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return string(out), 0
		case errors.As(err, &exit):
			return string(out), exit.ExitCode()
		}
		t.Fatalf("svc health: %v", err)
		return "", 0
	}
	if out, code := health(); code != 0 || strings.TrimSpace(out) != "ready" {
		t.Fatalf("svc health on a ready service: exit %d, %q", code, out)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The lame-duck period: not ready (as soon as the signal is handled), still live and serving.
	for res := do(t, "GET", "http://"+public+"/health/ready", nil); res.status != 503; res = do(t, "GET", "http://"+public+"/health/ready", nil) {
		if res.status != 200 {
			t.Fatalf("/health/ready after SIGTERM: %d %s", res.status, res.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if res := do(t, "GET", "http://"+public+"/.well-known/svc", nil); res.status != 200 {
		t.Fatalf("/.well-known/svc during the lame-duck period: %d", res.status)
	}
	if out, code := health(); code != 1 || !strings.Contains(out, "not ready") {
		t.Fatalf("svc health during the lame-duck period: exit %d, %q", code, out)
	}
	// Read stderr to its end (the process exiting closes it) before Wait, as os/exec requires.
	stopped := false
	timeout := time.After(30 * time.Second)
	for open := true; open; {
		select {
		case m, ok := <-lines:
			open = ok
			if ok && m["msg"] == "listeners stopped" {
				stopped = true
			}
		case <-timeout:
			t.Fatal("svc did not stop after SIGTERM")
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if !stopped {
		t.Fatal(`no "listeners stopped" log line`)
	}
}
