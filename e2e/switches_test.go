package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestScenarioSwitchesReachEveryReplicaWithinASecond: two replicas share one PostgreSQL database and
// serve the guard's checks from memory. The operator freezes an agent's writes with `svc admin` in a
// one-off container; from the moment the command returns, both replicas refuse the agent's write
// (403 writes_frozen) within a second. Unfrozen the same way, both admit it again within a second (the
// write reaches its route, which answers as it did before the freeze). Then the same for the pause of
// every write (503 writes_unavailable).
func TestScenarioSwitchesReachEveryReplicaWithinASecond(t *testing.T) {
	t.Parallel()
	ctx := begin(t)
	nw := newNetwork(t, ctx)
	startPostgres(t, ctx, nw)
	env := map[string]string{"SVC_DATABASE_URL": databaseURL, "SVC_BASE_URL": baseURL}
	run := func(cmd ...string) result { return runOnce(t, ctx, nw, env, cmd...) }
	if res := run("migrate"); res.ExitCode != 0 {
		t.Fatalf("migrate: exit %d: %s", res.ExitCode, res.Stderr)
	}
	org, _ := admin(t, ctx, run, "org", "create", "--name", "Switches")["org_id"].(string)
	agent := addAgent(t, ctx, run, org, "switched")

	a := startService(t, ctx, nw, env)
	b := startService(t, ctx, nw, env)
	replicas := []struct{ name, edge string }{{"a", edgeOf(t, ctx, a)}, {"b", edgeOf(t, ctx, b)}}
	// Each replica serves the guard from memory and listens for changes (it says so once).
	for i, s := range []*service{a, b} {
		poll(t, ctx, time.Now(), 10*time.Second, 50*time.Millisecond, "the listener of replica "+replicas[i].name, func() (bool, string) {
			stdout, stderr := streams(t, ctx, s.GetContainerID())
			return strings.Contains(stdout+stderr, "sigv1 memory: listening for changes on svc_sigv1"), stderr
		})
	}

	// A write the route itself refuses (an empty thread): before the freeze and after it, the answer
	// is the route's, which shows the guard let the write through.
	n := 0
	write := func(edge string) exchange {
		n++
		return signedSend(t, ctx, agent, http.MethodPost, edge, "/threads", fmt.Sprintf("switch-%d", n), `{}`)
	}
	admitted := write(replicas[0].edge)
	if admitted.Status == http.StatusForbidden || admitted.Status >= 500 {
		t.Fatalf("write before the freeze: %s", admitted)
	}
	codeOf := func(x exchange) string {
		var p struct{ Code string }
		_ = json.Unmarshal(x.Body, &p)
		return p.Code
	}
	admittedCode := codeOf(admitted)
	for _, r := range replicas {
		if x := write(r.edge); x.Status != admitted.Status || codeOf(x) != admittedCode {
			t.Fatalf("replica %s before the freeze: %s, want %d %s", r.name, x, admitted.Status, admittedCode)
		}
	}

	// within polls every replica, from the return of the operator's command, until its write answers
	// status and code; it fails past a second and returns the slowest replica's time.
	within := func(what string, start time.Time, status int, code string) time.Duration {
		t.Helper()
		var slowest time.Duration
		for _, r := range replicas {
			took := poll(t, ctx, start, time.Second, 20*time.Millisecond, what+" on replica "+r.name, func() (bool, string) {
				x := write(r.edge)
				return x.Status == status && codeOf(x) == code, x.String()
			})
			t.Logf("%s on replica %s: %s after the command returned", what, r.name, took.Round(time.Millisecond))
			slowest = max(slowest, took)
		}
		return slowest
	}

	admin(t, ctx, run, "writes", "freeze", "--agent", agent.AgentID)
	within("freeze", time.Now(), http.StatusForbidden, "writes_frozen")
	admin(t, ctx, run, "writes", "unfreeze", "--agent", agent.AgentID)
	within("unfreeze", time.Now(), admitted.Status, admittedCode)

	admin(t, ctx, run, "writes", "pause")
	within("pause", time.Now(), http.StatusServiceUnavailable, "writes_unavailable")
	admin(t, ctx, run, "writes", "resume")
	within("resume", time.Now(), admitted.Status, admittedCode)
}
