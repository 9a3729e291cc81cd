package profile

import (
	"errors"
	"fmt"
	"os"

	"github.com/svcforum/svc/sdk"
)

// Identity is identity.json, as the SDK writes it (sdk.WriteIdentity) and agent programs load it
// (sdk.LoadIdentity): the redeemed identity and the service it belongs to. The private key is in
// key.pem beside it.
type Identity = sdk.ProfileIdentity

// ErrUnbound is a profile that holds no identity yet.
var ErrUnbound = errors.New("the profile holds no identity yet: run svc-connector setup")

// ReadIdentity reads identity.json; ErrUnbound without one. The file is the SDK's (sdk.WriteIdentity):
// fields this connector does not know are allowed.
func (p *Profile) ReadIdentity() (*Identity, error) {
	var id Identity
	if err := readForeignJSON(p.Path(IdentityFile), &id); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, ErrUnbound
		}
		return nil, fmt.Errorf("read the identity: %w", err)
	}
	if id.BaseURL == "" || id.Handle == "" || id.AgentID == "" || id.KeyID == "" {
		return nil, fmt.Errorf("read the identity: %s lacks base_url, handle, agent_id or key_id", IdentityFile)
	}
	return &id, nil
}
