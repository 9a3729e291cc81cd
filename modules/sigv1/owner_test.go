package sigv1_test

import (
	"context"
	"testing"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/testkit"
)

// TestOwnerPause: an owner's pause (port.AgentControl) refuses the agent's writes with 403
// agent_paused, and nothing else: its reads go on, and another agent of its organisation writes on.
// It is the owner's own: the operator's unfreeze and resume leave it on, and the owner's resume lifts
// neither an operator's freeze nor a suspension. On both databases.
func TestOwnerPause(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "paused-a")
		sibling := w.agentIn(t, a.OrgID, "paused-sibling")
		ctl := sigv1.NewOwnerControl(w.registry, w.switches)
		ctx := context.Background()
		n := 0
		key := func() string { n++; return "op" + itoa(n) }
		pause := func(on bool) {
			t.Helper()
			if err := ctl.SetOwnerPause(ctx, a.AgentID, on); err != nil {
				t.Fatal(err)
			}
		}

		st, found, err := ctl.AgentStatus(ctx, a.AgentID)
		if err != nil || !found || st.PausedAt != nil || st.Suspended || st.OrgID != a.OrgID || st.Handle != "paused-a" ||
			len(st.Keys) != 1 || st.Keys[0].KeyID != a.KeyID || st.Keys[0].State != sigv1.KeyActive {
			t.Fatalf("status before: %+v %v %v", st, found, err)
		}
		pause(true)
		pause(true) // again: nothing changes
		if st, _, err := ctl.AgentStatus(ctx, a.AgentID); err != nil || st.PausedAt == nil {
			t.Fatalf("status paused: %+v %v", st, err)
		}
		r := w.send(t, a, "POST", writePath, noteBody("paused"), key())
		testkit.Expect(t, r, 403, "agent_paused")
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, key()), 200, "")
		testkit.Expect(t, w.send(t, sibling, "POST", writePath, noteBody("sibling"), key()), 201, "")
		rowsOf(t, w, 1)
		adm := w.send(t, a, "POST", "/write-admission", []byte(`{}`), key())
		testkit.Expect(t, adm, 200, "")
		if b, _ := adm.JSON(t)["blocked_by"].(map[string]any); b["code"] != "agent_paused" || b["status"] != float64(403) {
			t.Fatalf("write-admission: %s", adm.Body)
		}

		// The operator's unfreeze and resume do not lift the owner's pause.
		if err := w.switches.SetFrozen(ctx, sigv1.ScopeAgent, a.AgentID, false); err != nil {
			t.Fatal(err)
		}
		if _, err := w.registry.SetAgentState(ctx, a.AgentID, sigv1.AgentActive); err != nil {
			t.Fatal(err)
		}
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("still paused"), key()), 403, "agent_paused")
		if v, err := w.registry.ShowAgent(ctx, a.AgentID, ""); err != nil || !v.PausedByOwner || v.WritesFrozen {
			t.Fatalf("agent show: %+v %v", v, err)
		}

		// An operator's freeze comes first, and the owner's resume leaves it.
		if err := w.switches.SetFrozen(ctx, sigv1.ScopeAgent, a.AgentID, true); err != nil {
			t.Fatal(err)
		}
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("frozen and paused"), key()), 403, "writes_frozen")
		pause(false)
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("frozen"), key()), 403, "writes_frozen")
		if err := w.switches.SetFrozen(ctx, sigv1.ScopeAgent, a.AgentID, false); err != nil {
			t.Fatal(err)
		}
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("resumed"), key()), 201, "")
		rowsOf(t, w, 2)

		// The owner's resume does not lift a suspension.
		if _, err := w.registry.SetAgentState(ctx, a.AgentID, sigv1.AgentSuspended); err != nil {
			t.Fatal(err)
		}
		pause(true)
		pause(false)
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("suspended"), key()), 403, "agent_suspended")
		if st, _, err := ctl.AgentStatus(ctx, a.AgentID); err != nil || !st.Suspended || st.PausedAt != nil {
			t.Fatalf("status suspended: %+v %v", st, err)
		}

		expectProblem(t, ctl.SetOwnerPause(ctx, unknownKeyID, true), problem.NotFound)
		if _, found, err := ctl.AgentStatus(ctx, unknownKeyID); found || err != nil {
			t.Fatalf("status of an unknown agent: %v %v", found, err)
		}
	})
}

// TestOwnerRevokesKey: the owner revokes a key of its agent only (another agent's key id is not
// found and stays active); a write signed with the revoked key is 403 key_revoked, one signed with the
// agent's other key goes through. On both databases.
func TestOwnerRevokesKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "revoker")
		b := secondKey(t, w, a, "revoker second key")
		other := w.newAgent(t, "bystander")
		ctl := sigv1.NewOwnerControl(w.registry, w.switches)
		ctx := context.Background()

		if found, err := ctl.RevokeAgentKey(ctx, a.AgentID, other.KeyID); found || err != nil {
			t.Fatalf("revoking another agent's key: %v %v", found, err)
		}
		testkit.Expect(t, w.send(t, other, "POST", writePath, noteBody("bystander"), "r1"), 201, "")
		for range 2 { // the second time changes nothing
			if found, err := ctl.RevokeAgentKey(ctx, a.AgentID, a.KeyID); !found || err != nil {
				t.Fatalf("revoking: %v %v", found, err)
			}
		}
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("old key"), "r2"), 403, "key_revoked")
		testkit.Expect(t, w.send(t, b, "POST", writePath, noteBody("new key"), "r3"), 201, "")
		st, _, err := ctl.AgentStatus(ctx, a.AgentID)
		if err != nil || len(st.Keys) != 2 {
			t.Fatalf("status: %+v %v", st, err)
		}
		for _, k := range st.Keys {
			if want := k.KeyID == a.KeyID; (k.State == sigv1.KeyRevoked) != want || (k.RevokedAt != nil) != want {
				t.Fatalf("key %+v", k)
			}
		}
	})
}
