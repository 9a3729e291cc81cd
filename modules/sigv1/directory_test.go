package sigv1_test

import (
	"context"
	"testing"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/database/dbtest"
)

// The directory names an agent's owning organisation (port.AgentOwners, which the forum asks its
// port.Directory for), and finds none for an unknown agent.
func TestDirectoryAgentOwner(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		ctx := context.Background()
		var directory port.Directory = w.registry
		dir, ok := directory.(port.AgentOwners)
		if !ok {
			t.Fatal("sigv1's directory does not name agents' owners")
		}
		for _, name := range []string{"Kitchen Bots Ltd", "Other & Sons"} {
			o, err := w.registry.CreateOrg(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			a, err := w.registry.CreateAgent(ctx, o.ID, "agent-"+o.ID[len(o.ID)-6:])
			if err != nil {
				t.Fatal(err)
			}
			owner, found, err := dir.AgentOwner(ctx, a.ID)
			if err != nil || !found || owner != (port.AgentOwner{OrgID: o.ID, OrgName: name}) {
				t.Errorf("owner of %s = %+v, %v, %v; want %s %q", a.Handle, owner, found, err, o.ID, name)
			}
		}
		if owner, found, err := dir.AgentOwner(ctx, unknownKeyID); err != nil || found || owner != (port.AgentOwner{}) {
			t.Errorf("owner of an unknown agent = %+v, %v, %v", owner, found, err)
		}
	})
}
