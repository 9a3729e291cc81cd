package mcp

import (
	"encoding/json"
	"fmt"
	"slices"
)

// The arguments the server adds to the published ones.
const (
	// ArgIdempotencyKey overrides a write's derived Idempotency-Key.
	ArgIdempotencyKey = "idempotency_key"
	// ArgMaxCreditCost lowers a metered write's cap below the owner's (never above).
	ArgMaxCreditCost = "max_credit_cost"
	billingMember    = "billing"
)

// InputSchema is the tool's input: the published request body's schema without billing (the server
// fills it), the path and query parameters as properties (path ones required), and on a write the
// optional idempotency_key, on a metered one the optional max_credit_cost.
func InputSchema(o *Operation) (map[string]any, error) {
	in := map[string]any{"type": "object"}
	props := map[string]any{}
	var required []any
	if o.Body != nil {
		in = clone(o.Body).(map[string]any)
		if p, ok := in["properties"].(map[string]any); ok {
			props = p
		}
		delete(props, billingMember)
		if r, ok := in["required"].([]any); ok {
			required = slices.DeleteFunc(slices.Clone(r), func(v any) bool { return v == billingMember })
		}
	}
	add := func(name string, schema map[string]any, req bool) error {
		if _, clash := props[name]; clash {
			return fmt.Errorf("tool %s: the argument %q is both a body member and a parameter", o.Tool, name)
		}
		props[name] = schema
		if req {
			required = append(required, name)
		}
		return nil
	}
	for _, p := range o.Params {
		if err := add(p.Name, clone(p.Schema).(map[string]any), p.Required); err != nil {
			return nil, err
		}
	}
	if o.Write() {
		if err := add(ArgIdempotencyKey, map[string]any{"type": "string", "minLength": 1, "maxLength": 200,
			"pattern":     "^[\\x21-\\x7e]+$",
			"description": "Optional. The Idempotency-Key to send; by default the server derives one, the same for an identical call repeated within 10 minutes, so that a repeat is answered, not done, again."}, false); err != nil {
			return nil, err
		}
	}
	if o.Metered() {
		if err := add(ArgMaxCreditCost, map[string]any{"type": "integer", "minimum": 0,
			"description": "Optional. The most this call may cost, in credits: a lower cap than the owner's budget allows (a higher one is not taken). The server fills billing itself."}, false); err != nil {
			return nil, err
		}
	}
	// The server's own arguments do not count against a body's published maxProperties.
	if mp, ok := in["maxProperties"].(float64); ok {
		extras := 0
		for _, name := range []string{ArgIdempotencyKey, ArgMaxCreditCost} {
			if _, ok := props[name]; ok {
				extras++
			}
		}
		in["maxProperties"] = mp + float64(extras)
	}
	in["type"] = "object"
	in["properties"] = props
	if len(required) > 0 {
		in["required"] = required
	} else {
		delete(in, "required")
	}
	return in, nil
}

// OutputSchema is the tool's output: the published 2xx answer's schema with every member another
// agent wrote moved under "untrusted" (UntrustedSchema). MCP wants an object: an answer of another
// type is wrapped as {"result": ...}; nil when nothing is published.
func OutputSchema(o *Operation) map[string]any {
	if o.Response == nil {
		return nil
	}
	s := UntrustedSchema(clone(o.Response)).(map[string]any)
	if !isObjectSchema(s) {
		return map[string]any{"type": "object", "required": []any{"result"}, "additionalProperties": false,
			"properties": map[string]any{"result": s}}
	}
	return s
}

// isObjectSchema reports whether s describes only JSON objects.
func isObjectSchema(s map[string]any) bool {
	return s["type"] == "object"
}

// clone deep-copies a JSON value.
func clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, c := range v {
			out[k] = clone(c)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, c := range v {
			out[i] = clone(c)
		}
		return out
	}
	return v
}

// canonical is v as JSON with sorted keys (encoding/json sorts map keys), the form a write's
// arguments are compared in.
func canonical(v any) ([]byte, error) {
	return json.Marshal(v)
}
