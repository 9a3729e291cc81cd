package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// baseURL is the public URL the tests give the service; it is not where the tests reach it.
const baseURL = "https://forum.e2e.example"

// TestServe: the service in its image, on PostgreSQL, answers its health probes and publishes its
// discovery document with the base URL it was given.
func TestServe(t *testing.T) {
	t.Parallel()
	ctx := begin(t)
	nw := newNetwork(t, ctx)
	startPostgres(t, ctx, nw)
	svc := startService(t, ctx, nw, map[string]string{"SVC_DATABASE_URL": databaseURL, "SVC_BASE_URL": baseURL})

	if r := mustGet(t, ctx, svc.URL+"/health/live"); r.Status != 200 {
		t.Errorf("GET /health/live: %d %s, want 200", r.Status, r.Body)
	}
	r := mustGet(t, ctx, svc.URL+"/health/ready")
	if r.Status != 200 {
		t.Fatalf("GET /health/ready: %d %s, want 200", r.Status, r.Body)
	}
	var ready readiness
	decode(t, r, &ready)
	if ready.Status != "ready" || !slices.Contains(ready.Checks, check{Name: "database", Status: "ok"}) {
		t.Errorf("GET /health/ready: %s, want status ready and the database check ok", r.Body)
	}

	r = mustGet(t, ctx, svc.URL+"/.well-known/svc")
	if r.Status != 200 {
		t.Fatalf("GET /.well-known/svc: %d %s, want 200", r.Status, r.Body)
	}
	var doc struct {
		BaseURL string   `json:"base_url"`
		Modules []string `json:"modules"`
	}
	decode(t, r, &doc)
	if doc.BaseURL != baseURL {
		t.Errorf("discovery base_url = %q, want %q (SVC_BASE_URL)", doc.BaseURL, baseURL)
	}
	if !slices.Contains(doc.Modules, "discovery") {
		t.Errorf("discovery modules = %q, want discovery among them", doc.Modules)
	}
}

// TestReadinessFollowsDatabase: /health/ready turns 503 within 5 seconds of the database stopping and
// 200 again after it returns, without a restart of the service.
func TestReadinessFollowsDatabase(t *testing.T) {
	t.Parallel()
	ctx := begin(t)
	nw := newNetwork(t, ctx)
	db := startPostgres(t, ctx, nw)
	svc := startService(t, ctx, nw, map[string]string{"SVC_DATABASE_URL": databaseURL, "SVC_BASE_URL": baseURL})
	before, err := svc.Inspect(ctx)
	if err != nil {
		t.Fatalf("inspect the service: %v", err)
	}

	timeout := stopTimeout
	if err := db.Stop(ctx, &timeout); err != nil {
		t.Fatalf("stop postgres: %v", err)
	}
	stopped := time.Now()
	took := poll(t, ctx, stopped, 5*time.Second, 200*time.Millisecond, "/health/ready 503 after the database stopped", func() (bool, string) {
		r, err := get(ctx, svc.URL+"/health/ready")
		if err != nil {
			return false, err.Error()
		}
		return notReadyForDatabase(r), fmt.Sprintf("%d %s %s", r.Status, r.ContentType, r.Body)
	})
	t.Logf("/health/ready answered 503 %s after the database stopped", took.Round(time.Millisecond))
	if r := mustGet(t, ctx, svc.URL+"/health/live"); r.Status != 200 {
		t.Errorf("GET /health/live without the database: %d %s, want 200", r.Status, r.Body)
	}

	starting := time.Now()
	if err := db.Start(ctx); err != nil {
		t.Fatalf("start postgres again: %v", err)
	}
	took = poll(t, ctx, starting, 30*time.Second, 200*time.Millisecond, "/health/ready 200 after the database returned", func() (bool, string) {
		r, err := get(ctx, svc.URL+"/health/ready")
		if err != nil {
			return false, err.Error()
		}
		return r.Status == 200, fmt.Sprintf("%d %s", r.Status, r.Body)
	})
	t.Logf("/health/ready answered 200 %s after the database was started again", took.Round(time.Millisecond))

	after, err := svc.Inspect(ctx)
	if err != nil {
		t.Fatalf("inspect the service: %v", err)
	}
	if after.ID != before.ID || after.State.StartedAt != before.State.StartedAt || after.RestartCount != before.RestartCount || !after.State.Running {
		t.Errorf("the service restarted: container %.12s started at %s (restarts %d) became %.12s started at %s (restarts %d, running %t)",
			before.ID, before.State.StartedAt, before.RestartCount, after.ID, after.State.StartedAt, after.RestartCount, after.State.Running)
	}
}

// notReadyForDatabase reports whether r is the problem /health/ready answers when the database check
// fails.
func notReadyForDatabase(r response) bool {
	if r.Status != 503 || !strings.HasPrefix(r.ContentType, "application/problem+json") {
		return false
	}
	var p struct {
		Code   string  `json:"code"`
		Status int     `json:"status"`
		Checks []check `json:"checks"`
	}
	if json.Unmarshal(r.Body, &p) != nil {
		return false
	}
	return p.Code == "not_ready" && p.Status == 503 && slices.ContainsFunc(p.Checks, func(c check) bool {
		return c.Name == "database" && c.Status == "failing"
	})
}

// TestCommands: the image's one-shot commands, run as one-off containers beside PostgreSQL.
func TestCommands(t *testing.T) {
	t.Parallel()
	ctx := begin(t)
	nw := newNetwork(t, ctx)
	startPostgres(t, ctx, nw)
	env := map[string]string{"SVC_DATABASE_URL": databaseURL}

	t.Run("admin modules --json", func(t *testing.T) {
		res := runOnce(t, ctx, nw, env, "admin", "modules", "--json")
		if res.ExitCode != 0 {
			t.Fatalf("exit code %d, want 0; stderr: %s", res.ExitCode, res.Stderr)
		}
		var out struct {
			Modules []struct {
				ID      string `json:"id"`
				Version string `json:"version"`
			} `json:"modules"`
		}
		dec := json.NewDecoder(strings.NewReader(res.Stdout))
		if err := dec.Decode(&out); err != nil || dec.More() {
			t.Fatalf("stdout is not one JSON object (%v): %q", err, res.Stdout)
		}
		var ids []string
		for _, m := range out.Modules {
			ids = append(ids, m.ID)
			if m.Version == "" {
				t.Errorf("module %q has no version: %s", m.ID, res.Stdout)
			}
		}
		if !slices.Contains(ids, "discovery") {
			t.Errorf("modules %q, want discovery among them: %s", ids, res.Stdout)
		}
	})

	t.Run("serve with an unknown module", func(t *testing.T) {
		res := runOnce(t, ctx, nw, map[string]string{"SVC_DATABASE_URL": databaseURL, "SVC_MODULES": "nope"}, "serve")
		if res.ExitCode == 0 {
			t.Errorf("exit code 0, want non-zero")
		}
		lines := strings.Split(strings.TrimRight(res.Stderr, "\n"), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], `svc: unknown module "nope"`) {
			t.Errorf("stderr %q, want one line starting with %q", res.Stderr, `svc: unknown module "nope"`)
		}
		if res.Stdout != "" {
			t.Errorf("stdout %q, want nothing", res.Stdout)
		}
	})
}

// readiness is the body of /health/ready when every check passes.
type readiness struct {
	Status string  `json:"status"`
	Checks []check `json:"checks"`
}

type check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// decode reads r's JSON body into v, failing the test when it is not JSON.
func decode(t *testing.T, r response, v any) {
	t.Helper()
	if err := json.NewDecoder(bytes.NewReader(r.Body)).Decode(v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}
