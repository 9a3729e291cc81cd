package sigv1_test

// Tests of the operator's list and show commands of organisations, agents and keys: filters, order,
// limits, and what they print for people and with --json.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/sigv1"
)

// directory is a registry with two organisations, three agents and three keys, made one minute apart
// in this order: kitchen, a1 (two keys, the first revoked), a2 (suspended), garden (frozen), b1
// (frozen).
type directory struct {
	kitchen, garden sigv1.Org
	a1, a2, b1      sigv1.Agent
	oldKey, newKey  sigv1.Key
	b1Key           sigv1.Key
}

func newDirectory(t *testing.T, w *world) directory {
	t.Helper()
	ctx := context.Background()
	var d directory
	var err error
	step := func() { w.clock.Add(time.Minute) }
	must := func(e error) {
		t.Helper()
		if e != nil {
			t.Fatal(e)
		}
	}
	d.kitchen, err = w.registry.CreateOrg(ctx, "Kitchen Co")
	must(err)
	step()
	d.a1, err = w.registry.CreateAgent(ctx, d.kitchen.ID, "lentil-cook")
	must(err)
	step()
	k1, _ := publicKey("a1 old")
	d.oldKey, err = w.registry.AddKey(ctx, d.a1.ID, k1)
	must(err)
	step()
	k2, _ := publicKey("a1 new")
	d.newKey, err = w.registry.AddKey(ctx, d.a1.ID, k2)
	must(err)
	d.oldKey, err = w.registry.RevokeKey(ctx, d.oldKey.ID)
	must(err)
	step()
	d.a2, err = w.registry.CreateAgent(ctx, d.kitchen.ID, "bean-baker")
	must(err)
	_, err = w.registry.SetAgentState(ctx, d.a2.ID, sigv1.AgentSuspended)
	must(err)
	step()
	d.garden, err = w.registry.CreateOrg(ctx, "Garden 100%_organic")
	must(err)
	step()
	d.b1, err = w.registry.CreateAgent(ctx, d.garden.ID, "leek-grower")
	must(err)
	k3, _ := publicKey("b1")
	d.b1Key, err = w.registry.AddKey(ctx, d.b1.ID, k3)
	must(err)
	must(w.switches.SetFrozen(ctx, sigv1.ScopeOrg, d.garden.ID, true))
	must(w.switches.SetFrozen(ctx, sigv1.ScopeAgent, d.b1.ID, true))
	return d
}

func orgIDs(orgs []sigv1.OrgView) []string {
	var out []string
	for _, o := range orgs {
		out = append(out, o.ID)
	}
	return out
}

func agentHandles(agents []sigv1.AgentView) []string {
	var out []string
	for _, a := range agents {
		out = append(out, a.Handle)
	}
	return out
}

func keyIDs(keys []sigv1.KeyView) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.ID)
	}
	return out
}

func fingerprintOf(t *testing.T, publicKey string) string {
	raw, err := base64.StdEncoding.DecodeString(publicKey)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	return "SHA256:" + strings.TrimRight(base64.StdEncoding.EncodeToString(sum[:]), "=")
}

func TestAdminListOrganisations(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		d := newDirectory(t, w)
		ctx := context.Background()
		list := func(f sigv1.ListFilter) ([]sigv1.OrgView, bool) {
			t.Helper()
			if f.Limit == 0 {
				f.Limit = 50
			}
			orgs, more, err := w.registry.ListOrgs(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			return orgs, more
		}
		orgs, more := list(sigv1.ListFilter{})
		if !slices.Equal(orgIDs(orgs), []string{d.garden.ID, d.kitchen.ID}) || more {
			t.Fatalf("newest first: %+v, more %v", orgs, more)
		}
		g, k := orgs[0], orgs[1]
		if g.Name != "Garden 100%_organic" || g.State != sigv1.OrgFrozen || g.Agents != 1 || !g.CreatedAt.Equal(d.garden.CreatedAt) || g.CreatedAt.Location() != time.UTC {
			t.Fatalf("garden %+v", g)
		}
		if k.State != sigv1.OrgActive || k.Agents != 2 {
			t.Fatalf("kitchen %+v", k)
		}
		for filter, want := range map[sigv1.ListFilter][]string{
			{Name: "KITCHEN"}:                 {d.kitchen.ID},
			{Name: "0%_o"}:                    {d.garden.ID}, // LIKE's wildcards are matched literally
			{Name: "n%"}:                      nil,
			{Name: "_"}:                       {d.garden.ID},
			{State: sigv1.OrgFrozen}:          {d.garden.ID},
			{State: sigv1.OrgActive}:          {d.kitchen.ID},
			{Name: "co", State: "frozen"}:     nil,
			{Name: "garden", State: "frozen"}: {d.garden.ID},
		} {
			if got, _ := list(filter); !slices.Equal(orgIDs(got), want) {
				t.Errorf("%+v: %v, want %v", filter, orgIDs(got), want)
			}
		}
		if got, more := list(sigv1.ListFilter{Limit: 1}); !slices.Equal(orgIDs(got), []string{d.garden.ID}) || !more {
			t.Fatalf("limit 1: %v, more %v", orgIDs(got), more)
		}
		if _, more := list(sigv1.ListFilter{Limit: 2}); more {
			t.Fatal("limit 2 of 2: more")
		}
		for _, bad := range []sigv1.ListFilter{{Limit: 50, State: "suspended"}, {Limit: 0}, {Limit: 1001}} {
			_, _, err := w.registry.ListOrgs(ctx, bad)
			expectProblem(t, err, problem.ValidationFailed)
		}

		show, err := w.registry.ShowOrg(ctx, d.kitchen.ID)
		if err != nil {
			t.Fatal(err)
		}
		if show.ID != d.kitchen.ID || show.Agents != 2 || !slices.Equal(agentHandles(show.AgentList), []string{"bean-baker", "lentil-cook"}) {
			t.Fatalf("show %+v", show)
		}
		_, err = w.registry.ShowOrg(ctx, unknownKeyID)
		expectProblem(t, err, problem.NotFound)
	})
}

func TestAdminListAgentsAndKeys(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		d := newDirectory(t, w)
		ctx := context.Background()
		agents := func(f sigv1.ListFilter) []string {
			t.Helper()
			f.Limit = max(f.Limit, 50)
			got, _, err := w.registry.ListAgents(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			return agentHandles(got)
		}
		all, _, err := w.registry.ListAgents(ctx, sigv1.ListFilter{Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(agentHandles(all), []string{"leek-grower", "bean-baker", "lentil-cook"}) {
			t.Fatalf("newest first: %v", agentHandles(all))
		}
		leek, bean, lentil := all[0], all[1], all[2]
		if !leek.WritesFrozen || leek.OrgID != d.garden.ID || leek.OrgName != d.garden.Name || leek.ActiveKeys != 1 || leek.State != sigv1.AgentActive {
			t.Fatalf("leek %+v", leek)
		}
		if bean.WritesFrozen || bean.State != sigv1.AgentSuspended || bean.ActiveKeys != 0 {
			t.Fatalf("bean %+v", bean)
		}
		if lentil.ActiveKeys != 1 || !lentil.CreatedAt.Equal(d.a1.CreatedAt) {
			t.Fatalf("lentil %+v", lentil)
		}
		for name, c := range map[string]struct {
			f    sigv1.ListFilter
			want []string
		}{
			"org":          {sigv1.ListFilter{Org: d.kitchen.ID}, []string{"bean-baker", "lentil-cook"}},
			"handle":       {sigv1.ListFilter{Handle: "LE"}, []string{"leek-grower", "lentil-cook"}},
			"suspended":    {sigv1.ListFilter{State: sigv1.AgentSuspended}, []string{"bean-baker"}},
			"active":       {sigv1.ListFilter{State: sigv1.AgentActive, Org: d.kitchen.ID}, []string{"lentil-cook"}},
			"unknown org":  {sigv1.ListFilter{Org: unknownKeyID}, nil},
			"handle and _": {sigv1.ListFilter{Handle: "_"}, nil},
		} {
			if got := agents(c.f); !slices.Equal(got, c.want) {
				t.Errorf("%s: %v, want %v", name, got, c.want)
			}
		}
		if got, more, _ := w.registry.ListAgents(ctx, sigv1.ListFilter{Limit: 2}); len(got) != 2 || !more {
			t.Fatalf("limit 2 of 3: %d, more %v", len(got), more)
		}
		_, _, err = w.registry.ListAgents(ctx, sigv1.ListFilter{Limit: 5, State: "frozen"})
		expectProblem(t, err, problem.ValidationFailed)

		show, err := w.registry.ShowAgent(ctx, "", "lentil-cook")
		if err != nil {
			t.Fatal(err)
		}
		if show.ID != d.a1.ID || !slices.Equal(keyIDs(show.Keys), []string{d.newKey.ID, d.oldKey.ID}) {
			t.Fatalf("show %+v", show)
		}
		if k := show.Keys[1]; k.State != sigv1.KeyRevoked || k.RevokedAt == nil || k.Fingerprint != fingerprintOf(t, d.oldKey.PublicKey) {
			t.Fatalf("revoked key %+v", k)
		}
		byID, err := w.registry.ShowAgent(ctx, d.a1.ID, "")
		if err != nil || byID.Handle != "lentil-cook" {
			t.Fatalf("by id: %+v %v", byID, err)
		}
		_, err = w.registry.ShowAgent(ctx, "", "nobody")
		expectProblem(t, err, problem.NotFound)
		_, err = w.registry.ShowAgent(ctx, unknownKeyID, "")
		expectProblem(t, err, problem.NotFound)

		keys, _, err := w.registry.ListKeys(ctx, sigv1.ListFilter{Limit: 50})
		if err != nil || !slices.Equal(keyIDs(keys), []string{d.b1Key.ID, d.newKey.ID, d.oldKey.ID}) {
			t.Fatalf("keys newest first: %v %v", keyIDs(keys), err)
		}
		if keys[0].Handle != "leek-grower" || keys[0].AgentID != d.b1.ID || keys[0].RevokedAt != nil {
			t.Fatalf("key %+v", keys[0])
		}
		revoked, _, _ := w.registry.ListKeys(ctx, sigv1.ListFilter{Limit: 50, State: sigv1.KeyRevoked})
		active, _, _ := w.registry.ListKeys(ctx, sigv1.ListFilter{Limit: 50, State: sigv1.KeyActive, Agent: d.a1.ID})
		if !slices.Equal(keyIDs(revoked), []string{d.oldKey.ID}) || !slices.Equal(keyIDs(active), []string{d.newKey.ID}) {
			t.Fatalf("revoked %v, active of a1 %v", keyIDs(revoked), keyIDs(active))
		}
		key, err := w.registry.ShowKey(ctx, d.newKey.ID)
		if err != nil || key.PublicKey != d.newKey.PublicKey || key.Fingerprint != fingerprintOf(t, d.newKey.PublicKey) || key.Handle != "lentil-cook" {
			t.Fatalf("show key %+v %v", key, err)
		}
		_, err = w.registry.ShowKey(ctx, unknownKeyID)
		expectProblem(t, err, problem.NotFound)
	})
}

// adminRun runs `svc admin args...` on w's registry (the host's invoke, reduced to the registry) and
// returns what it printed.
func adminRun(t *testing.T, w *world, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	invoke := func(ctx context.Context, _ *cli.Command, fn any) error {
		return fn.(func(context.Context, *sigv1.Registry) error)(ctx, w.registry)
	}
	root := &cli.Command{Name: "admin", Writer: &out, Flags: []cli.Flag{&cli.BoolFlag{Name: "json"}}, Commands: sigv1.Admin(invoke)}
	err := root.Run(context.Background(), append([]string{"admin"}, args...))
	return out.String(), err
}

func TestAdminListAndShowCommands(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		d := newDirectory(t, w)

		// For people: a table, a header row and one row per organisation, newest first.
		out, err := adminRun(t, w, "org", "list")
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "ORG_ID NAME STATE AGENTS CREATED" ||
			!strings.HasPrefix(lines[1], d.garden.ID) || !strings.Contains(lines[1], "frozen") || !strings.HasPrefix(lines[2], d.kitchen.ID) {
			t.Fatalf("org list:\n%s", out)
		}
		// Columns line up: every row's second column starts where the header's does.
		col := strings.Index(lines[0], "NAME")
		if lines[1][col:col+6] != "Garden" || lines[2][col:col+7] != "Kitchen" {
			t.Fatalf("columns do not line up:\n%s", out)
		}
		out, _ = adminRun(t, w, "org", "list", "--limit", "1")
		if !strings.Contains(out, "(more orgs match") {
			t.Fatalf("limit 1 says nothing of the others:\n%s", out)
		}

		// With --json: one object.
		out, err = adminRun(t, w, "--json", "agent", "list", "--org", d.kitchen.ID, "--state", "suspended")
		if err != nil {
			t.Fatal(err)
		}
		var agents struct {
			Agents []map[string]any `json:"agents"`
			More   *bool            `json:"more"`
		}
		if err := json.Unmarshal([]byte(out), &agents); err != nil || strings.Count(out, "\n") != 1 || agents.More == nil || *agents.More ||
			len(agents.Agents) != 1 || agents.Agents[0]["agent_id"] != d.a2.ID || agents.Agents[0]["state"] != "suspended" || agents.Agents[0]["org_name"] != "Kitchen Co" {
			t.Fatalf("agent list --json: %s %v", out, err)
		}

		out, err = adminRun(t, w, "agent", "show", "--handle", "lentil-cook")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"agent_id: " + d.a1.ID, "org_name: Kitchen Co", "keys (2):", fingerprintOf(t, d.oldKey.PublicKey), "revoked"} {
			if !strings.Contains(out, want) {
				t.Errorf("agent show lacks %q:\n%s", want, out)
			}
		}
		if _, err := adminRun(t, w, "agent", "show"); err == nil {
			t.Fatal("agent show without --agent or --handle ran")
		}

		out, err = adminRun(t, w, "--json", "key", "show", "--key", d.newKey.ID)
		var key map[string]any
		if err != nil || json.Unmarshal([]byte(out), &key) != nil || key["public_key"] != d.newKey.PublicKey || key["revoked_at"] != nil ||
			key["fingerprint"] != fingerprintOf(t, d.newKey.PublicKey) {
			t.Fatalf("key show --json: %s %v", out, err)
		}
		out, _ = adminRun(t, w, "key", "list", "--agent", d.b1.ID)
		if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "leek-grower") {
			t.Fatalf("key list --agent:\n%s", out)
		}

		// A name that is not plainly printable is shown quoted, so that it cannot fake a row.
		if _, err := w.registry.CreateOrg(context.Background(), "Evil\u202eoc"); err != nil {
			t.Fatal(err)
		}
		out, _ = adminRun(t, w, "org", "list", "--name", "evil")
		if !strings.Contains(out, `"Evil\u202eoc"`) {
			t.Fatalf("an override character printed raw:\n%q", out)
		}
	})
}

// The name filter folds case in every script, on both databases: SQLite's own lower() folded ASCII
// letters only.
func TestAdminListOrganisationsFoldsUnicode(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		ctx := context.Background()
		org, err := w.registry.CreateOrg(ctx, "Ärzte Küche Ωmega")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"ärzte", "ÄRZTE KÜCHE", "ωMEGA", "Ärzte"} {
			got, _, err := w.registry.ListOrgs(ctx, sigv1.ListFilter{Name: name, Limit: 10})
			if err != nil || !slices.Equal(orgIDs(got), []string{org.ID}) {
				t.Errorf("--name %q: %v %v, want %s", name, orgIDs(got), err, org.ID)
			}
		}
	})
}
