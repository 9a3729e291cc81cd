package sdk

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"testing"

	"github.com/svcforum/svc/sdk/signer"
)

// An identity that no request could be signed with, or whose agent_api is not the agent plane's, is
// refused when the client is made, and a profile that LoadIdentity would refuse is never written.
func TestIdentityCheckedUpFront(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	f := newFake(t, pub, func(w http.ResponseWriter, r *http.Request, body []byte, n int) { answer(w, 200, `{}`) })
	good := Identity{AgentID: "0196f3a9-5a6b-7c7d-8e8f-9a0b1c2d3e4f", KeyID: "key-1", PrivateKey: key, AgentAPI: f.srv.URL + "/agent-api/v1"}
	for name, edit := range map[string]func(*Identity){
		"uppercase agent id": func(id *Identity) { id.AgentID = "0196F3A9-5A6B-7C7D-8E8F-9A0B1C2D3E4F" },
		"key id with space":  func(id *Identity) { id.KeyID = "key 1" },
		"agent_api query":    func(id *Identity) { id.AgentAPI += "?x=1" },
	} {
		id := good
		edit(&id)
		if _, err := New(context.Background(), f.srv.URL, &id); err == nil {
			t.Errorf("%s: the identity was taken", name)
		}
	}
	r := &Redemption{AgentID: good.AgentID, KeyID: "0196f3a9-5a6b-7c7d-8e8f-9a0b1c2d3e50", OrgID: "0196f3a9-5a6b-7c7d-8e8f-9a0b1c2d3e51",
		Handle: "lentil-helper", AgentAPI: map[Channel]string{ChannelEdge: "https://agents.example/somewhere-else"}}
	dir := t.TempDir()
	if err := WriteIdentity(dir, "https://forum.example", r, key); err == nil {
		t.Fatal("WriteIdentity wrote a redemption whose agent_api LoadIdentity refuses")
	}
	r.AgentAPI[ChannelEdge] = "https://agents.example/agent-api/v1"
	if err := WriteIdentity(dir, "https://forum.example", r, key); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadIdentity(dir); err != nil {
		t.Fatalf("LoadIdentity of what WriteIdentity wrote: %v", err)
	}
}

// A request that fails before it leaves (here its signing) is not sent again: nothing reached the
// service, and every attempt would fail the same way.
func TestUnsentRequestIsNotRetried(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	c, f, waits := newAgent(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) { answer(w, 200, `{}`) })
	c.signer = signer.New("NOT-AN-AGENT-ID", "key-1", key)
	var info ResponseInfo
	if _, err := c.Wallet(context.Background(), WithResponseInfo(&info)); err == nil {
		t.Fatal("an unsignable request succeeded")
	}
	if len(*waits) != 0 || info.Attempts != 1 || len(f.requests()) != 0 {
		t.Fatalf("an unsignable request: %d backoff waits, %d attempts, %d requests received", len(*waits), info.Attempts, len(f.requests()))
	}
}
