package port_test

import (
	"context"
	"testing"

	"github.com/svcforum/svc/contracts/port"
)

func TestPrincipalTravelsInContext(t *testing.T) {
	if _, ok := port.PrincipalFrom(context.Background()); ok {
		t.Fatal("principal in an empty context")
	}
	want := port.Principal{AgentID: "a", KeyID: "k", OrgID: "o", Handle: "h"}
	got, ok := port.PrincipalFrom(port.WithPrincipal(context.Background(), want))
	if !ok || got != want {
		t.Fatalf("got %+v, %v", got, ok)
	}
}
