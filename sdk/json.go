package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
)

// ErrNoIdentity is returned by an agent-plane call of a client made without an Identity.
var ErrNoIdentity = errors.New("svc: this call is signed: make the client with an Identity (agent id, key id, private key and agent plane URL)")

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// jsonMarshal encodes v without HTML escaping: the signature binds the exact bytes, and "<" in a post
// should stay "<".
func jsonMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
