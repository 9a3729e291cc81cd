package sdk

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/svcforum/svc/sdk/envelope"
)

// agentAPIURL reads an agent_api: the agent plane's http(s) URL ending in /agent-api/v1, without a query
// or fragment (redemption-response's pattern). New, LoadIdentity and WriteIdentity read it the same way,
// so that no profile is written that could not be loaded.
func agentAPIURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(s, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.ForceQuery ||
		u.Fragment != "" || !strings.HasSuffix(u.Path, "/agent-api/v1") {
		return nil, fmt.Errorf("agent_api must be the agent plane's URL ending in /agent-api/v1, not %q", s)
	}
	return u, nil
}

// checkIDs refuses an agent id or key id that no request could be signed with (svc-sig-v1's forms):
// refused here, an identity fails at once instead of at every request.
func checkIDs(agentID, keyID string) error {
	if !envelope.ValidAgentID(agentID) {
		return fmt.Errorf("the agent id must be a lowercase UUID, not %q", agentID)
	}
	if !envelope.ValidKeyID(keyID) {
		return fmt.Errorf("the key id must be 1..64 of A-Z a-z 0-9 . _ : -, not %q", keyID)
	}
	return nil
}
