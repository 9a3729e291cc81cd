package sigv1_test

// The operator's switch commands return only once the switch is in force on every replica: two
// replicas serve one database from their memories while writes run on both in a loop, and the
// command runs as a process of its own (this test binary, re-run with adminProcessEnv), sharing
// nothing with them but the database. Nothing here measures time: each write notes whether it began
// after the command returned, and no such write may see the switch as it was before.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/testkit"
)

// adminProcessEnv, when set (to an adminSpec in JSON), makes the test binary run one of sigv1's
// `svc admin` commands on the database it names and exit, instead of running the tests.
const adminProcessEnv = "SIGV1_TEST_ADMIN_PROCESS"

// adminSpec is the command an admin process runs.
type adminSpec struct {
	URL  string   `json:"url"`
	Args []string `json:"args"`
}

// systemClock is the clock of an admin process: the machine's, as the host's.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// adminProcess runs the command of spec as `svc admin --json ...` would, with the registry and the
// switches the host's invoke hands sigv1's commands, and returns the exit code.
func adminProcess(spec string) int {
	var s adminSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, "admin process:", err)
		return 2
	}
	db, err := database.Open(s.URL, database.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "admin process:", err)
		return 1
	}
	registry, switches := sigv1.NewRegistry(db, systemClock{}), sigv1.NewSwitches(db, systemClock{})
	invoke := func(ctx context.Context, _ *cli.Command, fn any) error {
		switch fn := fn.(type) {
		case func(context.Context, *sigv1.Registry) error:
			return fn(ctx, registry)
		case func(context.Context, *sigv1.Switches) error:
			return fn(ctx, switches)
		}
		return fmt.Errorf("admin process: no services for %T", fn)
	}
	root := &cli.Command{Name: "admin", Writer: os.Stdout, Flags: []cli.Flag{&cli.BoolFlag{Name: "json"}}, Commands: sigv1.Admin(invoke)}
	if err := root.Run(context.Background(), append([]string{"admin", "--json"}, s.Args...)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// runAdmin runs `svc admin --json args...` on the database at url in a process of its own and returns
// the object it printed.
func runAdmin(url string, args ...string) (map[string]any, error) {
	spec, err := json.Marshal(adminSpec{URL: url, Args: args})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), adminProcessEnv+"="+string(spec))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("admin %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("admin %s printed %q: %w", strings.Join(args, " "), stdout.String(), err)
	}
	return out, nil
}

// replica is a node serving the guard from its own memory.
type replica struct {
	name   string
	node   *node
	memory *sigv1.Memory
}

// looped is the answer to one write of the loop.
type looped struct {
	replica       string
	afterReturn   bool // the write began after the command returned
	status        int
	code, idemKey string
}

// writeSeq numbers the Idempotency-Keys of the writes here: every write is a new one.
var writeSeq atomic.Int64

// afterReturn is how many writes each replica's loop sends once the command returned.
const afterReturn = 20

// operate runs `svc admin args...` in its own process while every replica serves writes by a in a
// loop (alternately on the plain and the planned write route), and returns what the command printed
// and every write's answer.
func operate(t *testing.T, url string, replicas []*replica, a agent, args ...string) (map[string]any, []looped) {
	t.Helper()
	var (
		returned atomic.Bool
		mu       sync.Mutex
		answers  []looped
		signErr  error
		wg       sync.WaitGroup
	)
	for _, r := range replicas {
		wg.Go(func() {
			for k, after := 0, 0; after < afterReturn; k++ {
				began := returned.Load()
				path := writePath
				if k%2 == 1 {
					path = plannedPath
				}
				idem := fmt.Sprintf("op-%d", writeSeq.Add(1))
				req := request(http.MethodPost, path, noteBody("op"), idem)
				if err := a.Signer.Sign(req); err != nil {
					mu.Lock()
					signErr = err
					mu.Unlock()
					return
				}
				res := r.node.serve(req)
				mu.Lock()
				answers = append(answers, looped{replica: r.name, afterReturn: began, status: res.Status, code: res.Code, idemKey: idem})
				mu.Unlock()
				if began {
					after++
				}
			}
		})
	}
	out, err := runAdmin(url, args...)
	returned.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if signErr != nil {
		t.Fatal(signErr)
	}
	return out, answers
}

// settle waits until every replica serves from a fresh memory and a write by a answers status and code
// there.
func settle(t *testing.T, replicas []*replica, a agent, status int, code string) {
	t.Helper()
	for _, r := range replicas {
		eventually(t, 10*time.Second, "replica "+r.name+" serves from memory, answering "+fmt.Sprint(status, " ", code), func() bool {
			res := r.node.send(t, a, http.MethodPost, writePath, noteBody("settle"), fmt.Sprintf("settle-%d", writeSeq.Add(1)))
			return res.Status == status && res.Code == code && r.memory.Fresh()
		})
	}
}

func TestSwitchCommandsReturnOnceInForceOnEveryReplica(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		url := dbtest.URL(t, dialect)
		db, err := database.Open(url, database.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if sqlDB, err := db.DB(); err == nil {
				_ = sqlDB.Close()
			}
		})
		if err := database.Migrate(context.Background(), db, []plugin.Migrations{sigv1.Migrations()}); err != nil {
			t.Fatal(err)
		}
		if err := db.AutoMigrate(&testWrite{}); err != nil {
			t.Fatal(err)
		}
		clock := testkit.NewClock(testkit.T0)
		// The loops write far more than the default limits allow in one window of the test's clock.
		unlimited := func(c *sigv1.Config) { c.AttemptsPerWindow, c.WritesPerWindow = 1<<30, 1<<30 }
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		var replicas []*replica
		for _, name := range []string{"a", "b"} {
			r := &replica{name: name, node: newNode(t, db, clock, unlimited), memory: sigv1.NewMemory(db, log)}
			if err := r.memory.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = r.memory.Stop(context.Background()) })
			r.node.guard.UseMemory(r.memory)
			replicas = append(replicas, r)
		}
		// Replica b lags: while the test says so, its reloads fail, so that a change reaches it only
		// when its snapshot expires; replica a learns changes as a replica does (listener, poll).
		lagging := replicas[1].memory
		a := (&world{node: replicas[0].node}).newAgent(t, "operated")

		for _, c := range []struct {
			name    string
			on, off []string // off is nil when the change cannot be undone
			status  int
			code    string
		}{
			{"pause", []string{"writes", "pause"}, []string{"writes", "resume"}, http.StatusServiceUnavailable, "writes_unavailable"},
			{"freeze", []string{"writes", "freeze", "--agent", a.AgentID}, []string{"writes", "unfreeze", "--agent", a.AgentID}, http.StatusForbidden, "writes_frozen"},
			{"freeze all", []string{"writes", "freeze"}, []string{"writes", "unfreeze"}, http.StatusForbidden, "writes_frozen"},
			{"suspend", []string{"agent", "suspend", "--agent", a.AgentID}, []string{"agent", "resume", "--agent", a.AgentID}, http.StatusForbidden, "agent_suspended"},
			{"gate", []string{"gate", "close", plugin.ChannelEdge}, []string{"gate", "open", plugin.ChannelEdge}, http.StatusServiceUnavailable, "channel_closed"},
			{"revoke", []string{"key", "revoke", "--key", a.KeyID}, nil, http.StatusForbidden, "key_revoked"},
		} {
			// check fails the test unless every write answered admitted (201) or refused (c's
			// status and code), and every one that began after the command returned as want says.
			check := func(what string, out map[string]any, answers []looped, wantRefused bool) {
				t.Helper()
				if at, _ := out["in_force_at"].(string); at == "" {
					t.Errorf("%s printed %v: no in_force_at", what, out)
				} else if _, err := time.Parse(time.RFC3339Nano, at); err != nil {
					t.Errorf("%s printed in_force_at %q: %v", what, at, err)
				}
				late := 0
				for _, x := range answers {
					refused := x.status == c.status && x.code == c.code
					if !refused && x.status != http.StatusCreated {
						t.Errorf("%s: write %s on replica %s answered %d %s", what, x.idemKey, x.replica, x.status, x.code)
						continue
					}
					if !x.afterReturn {
						continue
					}
					late++
					if refused != wantRefused {
						t.Errorf("%s: write %s on replica %s began after the command returned and answered %d %s", what, x.idemKey, x.replica, x.status, x.code)
					}
				}
				if late != afterReturn*len(replicas) {
					t.Errorf("%s: %d writes began after the command returned, want %d", what, late, afterReturn*len(replicas))
				}
			}

			settle(t, replicas, a, http.StatusCreated, "")
			lagging.FailReloads(true)
			out, answers := operate(t, url, replicas, a, c.on...)
			check(strings.Join(c.on, " "), out, answers, true)
			lagging.FailReloads(false)
			if c.off == nil {
				continue
			}
			// Both replicas now hold the switch in their snapshots; b lags again when it is undone.
			settle(t, replicas, a, c.status, c.code)
			lagging.FailReloads(true)
			out, answers = operate(t, url, replicas, a, c.off...)
			check(strings.Join(c.off, " "), out, answers, false)
			lagging.FailReloads(false)
		}
	})
}
