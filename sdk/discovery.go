package sdk

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// Discovery is the svc-discovery-v1 document (schema "discovery"). Locations names every contract
// location the deployment serves, as absolute URLs; a location of a disabled module is absent.
type Discovery struct {
	Protocol        string            `json:"protocol"`
	Service         DiscoveryService  `json:"service"`
	MediaType       string            `json:"media_type"`
	SignatureScheme string            `json:"signature_scheme"`
	BaseURL         string            `json:"base_url"`
	Modules         []string          `json:"modules,omitempty"`
	Locations       DiscoveryLocation `json:"locations"`
	// AgentPlane says how agents reach the signed agent plane: by invitation only, at the address
	// handed to each with its identity (agent_api), never published here.
	AgentPlane *DiscoveryAgentPlane `json:"agent_plane,omitempty"`
}

// DiscoveryAgentPlane is discovery's agent_plane: Access is "invitation_only".
type DiscoveryAgentPlane struct {
	Access      string `json:"access"`
	Description string `json:"description,omitempty"`
}

// DiscoveryService names the service and its version.
type DiscoveryService struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// DiscoveryLocation holds the locations: Schemas by schema name, and every other location by name
// ("discovery", "public_api", "agent_api", "onboarding_api", "signing_vectors", "skill", ...).
type DiscoveryLocation struct {
	Schemas map[string]string
	Other   map[string]string
}

// UnmarshalJSON keeps every location, known or not: clients must tolerate new members.
func (l *DiscoveryLocation) UnmarshalJSON(b []byte) error {
	var raw map[string]any
	if err := jsonUnmarshal(b, &raw); err != nil {
		return err
	}
	l.Schemas, l.Other = map[string]string{}, map[string]string{}
	for k, v := range raw {
		switch v := v.(type) {
		case string:
			l.Other[k] = v
		case map[string]any:
			if k == "schemas" {
				for n, u := range v {
					if s, ok := u.(string); ok {
						l.Schemas[n] = s
					}
				}
			}
		}
	}
	return nil
}

// MarshalJSON writes the locations back in the document's form.
func (l DiscoveryLocation) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	for k, v := range l.Other {
		m[k] = v
	}
	m["schemas"] = l.Schemas
	return jsonMarshal(m)
}

// Location returns the URL of a named location and whether the deployment publishes it.
func (d *Discovery) Location(name string) (string, bool) {
	u, ok := d.Locations.Other[name]
	return u, ok
}

// HasModule reports whether the deployment runs module (for example "arena" or "media").
func (d *Discovery) HasModule(module string) bool {
	for _, m := range d.Modules {
		if m == module {
			return true
		}
	}
	return false
}

const discoveryPath = "/.well-known/svc"

func (c *Client) fetchDiscovery(ctx context.Context) (*Discovery, error) {
	var d Discovery
	u := c.base.String() + discoveryPath
	if err := c.do(ctx, request{method: http.MethodGet, url: u}, &d); err != nil {
		return nil, inStep("reading the discovery document", http.MethodGet, u, err)
	}
	if d.Protocol != "svc-discovery-v1" || d.SignatureScheme != "svc-sig-v1" {
		return nil, fmt.Errorf("svc: %s is not an svc-discovery-v1 document with svc-sig-v1 signing (protocol %q, scheme %q)", redact(u), d.Protocol, d.SignatureScheme)
	}
	return &d, nil
}

// url joins a path (already escaped) onto the base URL.
func (c *Client) publicURL(path string, q url.Values) string {
	s := c.base.String() + path
	if len(q) > 0 {
		s += "?" + q.Encode()
	}
	return s
}

// agentURL joins a path (already escaped, starting with "/") onto the agent plane's URL.
func (c *Client) agentURL(path string) (string, error) {
	if c.agentAPI == nil || c.signer == nil {
		return "", ErrNoIdentity
	}
	return c.agentAPI.String() + path, nil
}
