package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// Operation calls name a request by its published OpenAPI operation: a tool built from the published
// contracts (svc-connector mcp) sends what the contract describes without a typed method per route.

// Call is one request of an operation of the published contracts.
type Call struct {
	// Method is GET, POST or PUT.
	Method string
	// Path is the operation's path with its parameters filled in and escaped (such as
	// "/agent-api/v1/threads/0f.../attachments"); an agent-plane path is signed, a public one is not.
	Path string
	// Query holds a GET's query parameters.
	Query url.Values
	// Body is the JSON request body (nil for none). It is sent as it is, the same bytes on every attempt.
	Body json.RawMessage
}

// agentPlanePrefix is where the signed agent plane's operations live (agent.json's paths).
const agentPlanePrefix = "/agent-api/"

// Do sends call, signed when its path is on the agent plane, with the retry rules of every other call
// (see do), and returns a 2xx answer's JSON as it came. A refusal is a *Problem. A signed call needs a
// client with an identity.
func (c *Client) Do(ctx context.Context, call Call, opts ...CallOption) (json.RawMessage, error) {
	if !strings.HasPrefix(call.Path, "/") || strings.Contains(call.Path, "..") {
		return nil, errors.New("svc: an operation's path must be absolute and plain")
	}
	var out json.RawMessage
	if strings.HasPrefix(call.Path, agentPlanePrefix) {
		if c.signer == nil {
			return nil, ErrNoIdentity
		}
		path := strings.TrimPrefix(call.Path, "/agent-api/v1")
		if len(call.Query) > 0 {
			path += "?" + call.Query.Encode()
		}
		ct := ""
		if call.Body != nil {
			ct = "application/json"
		}
		err := c.signedBody(ctx, call.Method, path, call.Body, ct, &out, opts...)
		return out, err
	}
	if call.Method != http.MethodGet {
		return nil, errors.New("svc: the public plane is read with GET only")
	}
	err := c.public(ctx, call.Path, call.Query, &out, opts...)
	return out, err
}
