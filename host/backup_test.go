package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"
	"gorm.io/gorm"

	"github.com/svcforum/svc/database"
)

// backupMain runs `svc admin ARGS` with env set, as it is: the backup needs no migrated database (the
// tests' runMain migrates before an admin command).
func backupMain(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out, errOut bytes.Buffer
	code = Main(t.Context(), append([]string{"svc", "admin"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// probePayload is the content of row n of the backup test's table: long enough that the table spans
// many pages, and different for each row.
func probePayload(n int64) string {
	return strings.Repeat(fmt.Sprintf("row %d;", n), 64)
}

// TestBackupWhileWriting: while a writer commits row after row through the service's own database
// handle, `svc admin --json backup` copies the SQLite file. The copy opens, passes PRAGMA
// integrity_check, and holds one consistent snapshot: rows 1..k, each intact, k at least the last row
// committed before the backup started. The writer goes on during and after the backup. The command
// prints the file's absolute path and size; without --json it prints the same as lines.
func TestBackupWhileWriting(t *testing.T) {
	cfg := testConfig(t, database.SQLite)
	var db *gorm.DB
	start(t, cfg, discoveryOnly(t), fx.Populate(&db))
	ctx := t.Context()
	if err := db.WithContext(ctx).Exec("CREATE TABLE backup_probe (n INTEGER PRIMARY KEY, payload TEXT NOT NULL)").Error; err != nil {
		t.Fatal(err)
	}

	var committed atomic.Int64
	stop := make(chan struct{})
	var writerErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		for n := int64(1); ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := db.WithContext(ctx).Exec("INSERT INTO backup_probe (n, payload) VALUES (?, ?)", n, probePayload(n)).Error; err != nil {
				writerErr = fmt.Errorf("insert row %d: %w", n, err)
				return
			}
			committed.Store(n)
		}
	})
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(halt)
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			if writerErr != nil || ctx.Err() != nil {
				t.Fatalf("waiting for %s: %v %v", what, writerErr, ctx.Err())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("500 rows", func() bool { return committed.Load() >= 500 })

	env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
	dest := filepath.Join(t.TempDir(), "backup.db")
	before := committed.Load()
	code, stdout, stderr := backupMain(t, env, "--json", "backup", "--to", dest)
	after := committed.Load()
	if code != 0 {
		t.Fatalf("backup: exit %d: %s", code, stderr)
	}
	waitFor("a row written after the backup", func() bool { return committed.Load() > after })
	halt()
	if writerErr != nil {
		t.Fatalf("the writer failed: %v", writerErr)
	}
	t.Logf("rows committed: %d before the backup, %d when it returned", before, after)

	var out struct {
		Database, Path string
		Bytes          int64
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || strings.Count(strings.TrimSpace(stdout), "\n") != 0 {
		t.Fatalf("stdout is not one JSON object (%v): %q", err, stdout)
	}
	info, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	_, source, _ := database.Parse(cfg.DatabaseURL)
	if out.Path != dest || out.Bytes != info.Size() || out.Database != source {
		t.Fatalf("printed %+v, want path %s, bytes %d, database %s", out, dest, info.Size(), source)
	}
	if entries, _ := os.ReadDir(filepath.Dir(dest)); len(entries) != 1 {
		t.Fatalf("the backup's directory holds %d entries, want the backup alone: %v", len(entries), entries)
	}

	copyDB, err := database.Open("sqlite:"+dest, database.Options{})
	if err != nil {
		t.Fatalf("open the backup: %v", err)
	}
	t.Cleanup(func() {
		if sqlDB, err := copyDB.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	var check []string
	if err := copyDB.WithContext(ctx).Raw("PRAGMA integrity_check").Scan(&check).Error; err != nil || len(check) != 1 || check[0] != "ok" {
		t.Fatalf("integrity_check of the backup: %v %v", check, err)
	}
	type row struct {
		N       int64
		Payload string
	}
	var rows []row
	if err := copyDB.WithContext(ctx).Raw("SELECT n, payload FROM backup_probe ORDER BY n").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if int64(len(rows)) < before {
		t.Fatalf("the backup holds %d rows, want at least the %d committed before it started", len(rows), before)
	}
	for i, r := range rows {
		if r.N != int64(i+1) || r.Payload != probePayload(r.N) {
			t.Fatalf("row %d of the backup is %d %.20q...: not rows 1..%d, each intact", i, r.N, r.Payload, len(rows))
		}
	}
	// Every table came along, the service's own (its migrations' history, its jobs) with the probe.
	tables := func(db *gorm.DB) []string {
		t.Helper()
		var names []string
		if err := db.WithContext(ctx).Raw("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").Scan(&names).Error; err != nil {
			t.Fatal(err)
		}
		return names
	}
	if got, want := tables(copyDB), tables(db); !slices.Equal(got, want) || len(want) < 3 {
		t.Fatalf("the backup's tables are %v, want the database's: %v", got, want)
	}

	// Without --json: one line per member.
	second := filepath.Join(filepath.Dir(dest), "second.db")
	code, stdout, stderr = backupMain(t, env, "backup", "--to", second)
	if info, err := os.Stat(second); code != 0 || err != nil {
		t.Fatalf("second backup: exit %d %s %v", code, stderr, err)
	} else if want := fmt.Sprintf("bytes: %d\ndatabase: %s\npath: %s\n", info.Size(), source, second); stdout != want {
		t.Fatalf("second backup printed %q, want %q", stdout, want)
	}
}

// TestBackupRefuses: a backup never overwrites a file; a backup that fails leaves no file behind, its
// temporary one included; a missing SQLite database is reported, not created; PostgreSQL is pointed
// at pg_dump. Each refusal is one line on stderr and a non-zero exit.
func TestBackupRefuses(t *testing.T) {
	dir := t.TempDir()
	source := filepath.Join(dir, "svc.db")
	env := map[string]string{"SVC_DATABASE_URL": "sqlite:" + source, "SVC_MODULES": "discovery"}
	if code, _, stderr := runMain(t, env, "migrate"); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, stderr)
	}
	dest := filepath.Join(t.TempDir(), "backup.db")
	if code, _, stderr := backupMain(t, env, "backup", "--to", dest); code != 0 {
		t.Fatalf("backup: exit %d: %s", code, stderr)
	}
	first, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}

	refused := func(t *testing.T, env map[string]string, to, want string) {
		t.Helper()
		code, stdout, stderr := backupMain(t, env, "backup", "--to", to)
		if code == 0 || stdout != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.HasPrefix(stderr, "svc: ") || !strings.Contains(stderr, want) {
			t.Fatalf("exit %d, stdout %q, stderr %q: want one line saying %q", code, stdout, stderr, want)
		}
	}
	// The names in a directory, but the database's own files (its WAL comes and goes).
	names := func(t *testing.T, dir string) []string {
		t.Helper()
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), "svc.db") {
				got = append(got, e.Name())
			}
		}
		return got
	}

	t.Run("existing file", func(t *testing.T) {
		refused(t, env, dest, "exists")
		if again, err := os.ReadFile(dest); err != nil || !bytes.Equal(again, first) {
			t.Fatalf("the existing backup changed (%v)", err)
		}
		if got := names(t, filepath.Dir(dest)); len(got) != 1 {
			t.Fatalf("the directory holds %v, want the first backup alone", got)
		}
	})
	t.Run("not UTF-8", func(t *testing.T) {
		// Refused as every admin command refuses it: the path printed would not be the file made.
		to := filepath.Join(t.TempDir(), "b\xff.db")
		refused(t, env, to, "--to is not valid UTF-8")
		if _, err := os.Stat(to); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%q: %v, want no file", to, err)
		}
	})
	t.Run("missing directory", func(t *testing.T) {
		missing := filepath.Join(dir, "missing")
		refused(t, env, filepath.Join(missing, "backup.db"), "no such file or directory")
		if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the missing directory: %v, want it still missing", err)
		}
	})
	t.Run("not a directory", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		refused(t, env, filepath.Join(file, "backup.db"), "not a directory")
	})
	t.Run("fails while copying", func(t *testing.T) {
		// A file that is not a database: VACUUM INTO fails after the temporary file was made.
		bad := filepath.Join(t.TempDir(), "svc.db")
		if err := os.WriteFile(bad, bytes.Repeat([]byte("not a database "), 512), 0o600); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "backup.db")
		refused(t, map[string]string{"SVC_DATABASE_URL": "sqlite:" + bad}, out, "not a database")
		if got := names(t, filepath.Dir(out)); len(got) != 0 {
			t.Fatalf("a failed backup left %v", got)
		}
	})
	t.Run("no database", func(t *testing.T) {
		absent := filepath.Join(t.TempDir(), "absent", "svc.db")
		out := filepath.Join(t.TempDir(), "backup.db")
		refused(t, map[string]string{"SVC_DATABASE_URL": "sqlite:" + absent}, out, "no database to back up")
		for _, p := range []string{filepath.Dir(absent), out} {
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s: %v, want nothing created", p, err)
			}
		}
	})
	t.Run("postgres", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "backup.db")
		// Refused before connecting: the address answers nothing.
		refused(t, map[string]string{"SVC_DATABASE_URL": "postgres://svc:svc@127.0.0.1:1/svc?sslmode=disable"}, out, "pg_dump")
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: %v, want nothing created", out, err)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		out := filepath.Join(t.TempDir(), "backup.db")
		var stdout, stderr bytes.Buffer
		t.Setenv("SVC_DATABASE_URL", "sqlite:"+source)
		if code := Main(ctx, []string{"svc", "admin", "backup", "--to", out}, &stdout, &stderr); code == 0 {
			t.Fatalf("a backup whose context had ended: exit 0, %s", stdout.String())
		}
		if got := names(t, filepath.Dir(out)); len(got) != 0 {
			t.Fatalf("an interrupted backup left %v (%s)", got, stderr.String())
		}
	})
}

// TestBackupRestoreDrillSQLite is host/README.md's SQLite backup and restore ("Backups") as a drill: an
// agent writes two threads and a reply through signed requests; while it keeps replying to one of the
// threads, `svc admin backup` copies the database; the backup is put in place of a new database as the
// README says, and a second service started on it shows the quiet thread and its reply byte for byte
// on the public read plane, every reply committed before the backup began, and a wallet whose audit is
// clean.
func TestBackupRestoreDrillSQLite(t *testing.T) {
	cfg := testConfig(t, database.SQLite)
	cfg.Settings = benchSettings{cfg.Settings} // the writer goes faster than an agent may
	env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
	if code, _, stderr := runMain(t, env, "migrate"); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, stderr)
	}
	id := provision(t, env, "backup-cook")
	publish(t, env, wirePricing)
	credit(t, env, id.orgID, 1_000_000)
	catID := admin(t, env, "category", "create", "--slug", "pantry", "--name", "Pantry")["category_id"].(string)
	r := start(t, cfg, allModules(t))
	agent, public := r.url(ListenerAgentEdge, ""), r.url(ListenerPublic, "")

	quiet := decodeBody(t, forumPost(t, id, agent, "/threads", "t-quiet", fmt.Sprintf(`{"category_id":%q,"title":"Weeknight dal","body_markdown":"Red lentils, cumin, garlic.","recipe":%s,%s}`,
		catID, recipeJSON, billing10)), 200, "created-thread-response")["thread_id"].(string)
	decodeBody(t, forumPost(t, id, agent, "/replies", "r-quiet", fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Add lemon at the end.",%s}`, quiet, billing10)), 200, "created-reply-response")
	busy := decodeBody(t, forumPost(t, id, agent, "/threads", "t-busy", fmt.Sprintf(`{"category_id":%q,"title":"Storing flour","body_markdown":"Airtight, cool and dark.",%s}`,
		catID, billing10)), 200, "created-thread-response")["thread_id"].(string)
	reads := []string{"/api/v1/threads/" + quiet, "/api/v1/threads/" + quiet + "/replies"}
	before := map[string][]byte{}
	for _, path := range reads {
		res := do(t, http.MethodGet, public+path, nil)
		if res.status != 200 {
			t.Fatalf("GET %s: %d %s", path, res.status, res.body)
		}
		before[path] = res.body
	}

	// The writer: replies to the busy thread, one after another, each one's ID kept once it is answered.
	var (
		mu      sync.Mutex
		replies []string
	)
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(replies) }
	stop := make(chan struct{})
	var writerErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			req, err := http.NewRequest(http.MethodPost, agent+"/agent-api/v1/replies", strings.NewReader(fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Reply %d.",%s}`, busy, n, billing10)))
			if err != nil {
				writerErr = err
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", fmt.Sprintf("r-busy-%d", n))
			if err := id.signer.Sign(req); err != nil {
				writerErr = err
				return
			}
			res, err := sendErr(req)
			var created struct {
				ReplyID string `json:"reply_id"`
			}
			if err == nil && (res.status != 200 || json.Unmarshal(res.body, &created) != nil || created.ReplyID == "") {
				err = fmt.Errorf("reply %d: %d %s", n, res.status, res.body)
			}
			if err != nil {
				writerErr = err
				return
			}
			mu.Lock()
			replies = append(replies, created.ReplyID)
			mu.Unlock()
		}
	})
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(halt)
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			if writerErr != nil || t.Context().Err() != nil {
				t.Fatalf("waiting for %s: %v %v", what, writerErr, t.Context().Err())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("10 replies", func() bool { return count() >= 10 })

	backup := filepath.Join(t.TempDir(), "svc-backup.db")
	mu.Lock()
	committed := slices.Clone(replies)
	mu.Unlock()
	if code, _, stderr := backupMain(t, env, "backup", "--to", backup); code != 0 {
		t.Fatalf("backup: exit %d: %s", code, stderr)
	}
	after := count()
	waitFor("a reply after the backup", func() bool { return count() > after })
	halt()
	if writerErr != nil {
		t.Fatalf("the writer failed: %v", writerErr)
	}
	t.Logf("replies: %d before the backup began, %d when it ended", len(committed), after)

	// The restore of the README: the backup copied beside the database, moved in its place.
	restored := filepath.Join(t.TempDir(), "svc.db")
	raw, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(restored+".restore", raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(restored+".restore", restored); err != nil {
		t.Fatal(err)
	}
	cfg2 := testConfig(t, database.SQLite)
	cfg2.DatabaseURL = "sqlite:" + restored
	r2 := start(t, cfg2, allModules(t))
	public2 := r2.url(ListenerPublic, "")

	for _, path := range reads {
		if res := do(t, http.MethodGet, public2+path, nil); res.status != 200 || !bytes.Equal(res.body, before[path]) {
			t.Errorf("GET %s on the restored service: %d %s\nwant %s", path, res.status, res.body, before[path])
		}
	}
	for _, reply := range committed {
		if res := do(t, http.MethodGet, public2+"/api/v1/replies/"+reply, nil); res.status != 200 {
			t.Errorf("reply %s, committed before the backup began: %d %s on the restored service", reply, res.status, res.body)
		}
	}
	audit := admin(t, map[string]string{"SVC_DATABASE_URL": cfg2.DatabaseURL}, "wallet", "audit")
	if n, _ := audit["organisations_checked"].(float64); n < 1 {
		t.Errorf("wallet audit of the restored database: %v, want at least one organisation checked", audit)
	}
	if d, ok := audit["discrepancies"].([]any); !ok || len(d) != 0 {
		t.Errorf("wallet audit of the restored database: %v, want no discrepancies", audit)
	}
}

// nameBackup never replaces a file that appeared under the backup's name after it was checked.
func TestBackupNeverReplacesAFileThatAppeared(t *testing.T) {
	dir := t.TempDir()
	tmp, dest := filepath.Join(dir, ".b.db.1.partial"), filepath.Join(dir, "b.db")
	if err := os.WriteFile(tmp, []byte("the backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dest, []byte("another file"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := nameBackup(tmp, dest); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("nameBackup onto an existing file: %v, want it refused", err)
	}
	if got, err := os.ReadFile(dest); err != nil || string(got) != "another file" {
		t.Fatalf("the existing file now holds %q (%v)", got, err)
	}
	if err := os.Remove(dest); err != nil {
		t.Fatal(err)
	}
	if err := nameBackup(tmp, dest); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(dest); err != nil || string(got) != "the backup" {
		t.Fatalf("the backup holds %q (%v)", got, err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the temporary name: %v, want it gone", err)
	}
}
