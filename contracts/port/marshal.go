package port

import (
	"bytes"
	"encoding/json"
)

// Marshal encodes a response value the way every svc response is written: JSON without HTML escaping
// (agent-written text round-trips byte for byte), ending in a newline.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
