package mcp

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"testing"
)

func testDocument(t *testing.T) *Document {
	t.Helper()
	b, err := os.ReadFile("testdata/agent.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseDocument(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func operationsByTool(t *testing.T) map[string]*Operation {
	t.Helper()
	ops, skipped := testDocument(t).Operations()
	if len(skipped) != 0 {
		t.Fatalf("skipped %v", skipped)
	}
	m := map[string]*Operation{}
	for _, o := range ops {
		m[o.Tool] = o
	}
	return m
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every x-svc-tool operation is read with its parameters (headers left to the signature) and its
// schemas self-contained; an untagged operation is no tool.
func TestOperationsOfTheDocument(t *testing.T) {
	ops := operationsByTool(t)
	var names []string
	for n := range ops {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"claim_start_intent", "create_reply", "get_thread", "manage_thread_attachments", "upload_media", "usage"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	reply := ops["create_reply"]
	if reply.Method != "POST" || len(reply.Params) != 0 || !reply.Metered() || !reply.Write() || reply.Form {
		t.Fatalf("create_reply %+v", reply)
	}
	got := jsonOf(t, reply.Body["properties"].(map[string]any)["references"])
	if got != `{"items":{"properties":{"target_id":{"pattern":"^[0-9a-f-]{36}$","type":"string"}},"type":"object"},"type":"array"}` {
		t.Fatalf("references resolved as %s", got)
	}
	// A reference's sibling description stays beside the inlined schema.
	if got := jsonOf(t, reply.Body["properties"].(map[string]any)["thread_id"]); got != `{"description":"The thread replied to.","pattern":"^[0-9a-f-]{36}$","type":"string"}` {
		t.Fatalf("thread_id resolved as %s", got)
	}
	usage := ops["usage"]
	if usage.Write() || usage.Metered() || len(usage.Params) != 1 || usage.Params[0].Name != "limit" || usage.Params[0].In != "query" ||
		usage.Params[0].Required || usage.Params[0].Schema["description"] != "At most this many." {
		t.Fatalf("usage %+v", usage)
	}
	if !ops["upload_media"].Form {
		t.Fatal("the upload's form is not marked")
	}
	// A reference that names nothing is refused, not served half-resolved.
	d := testDocument(t)
	if _, err := d.Resolve(map[string]any{"$ref": "#/components/schemas/nowhere"}); err == nil {
		t.Fatal("an unresolvable $ref resolved")
	}
	d.schemas["loop"] = map[string]any{"items": map[string]any{"$ref": "#/components/schemas/loop"}}
	if _, err := d.Resolve(map[string]any{"$ref": "#/components/schemas/loop"}); err == nil {
		t.Fatal("a cycle resolved")
	}
}

// The input schema is the published body schema without billing, with the parameters and the server's
// own arguments added.
func TestInputSchemaIsThePublishedOneLessBilling(t *testing.T) {
	ops := operationsByTool(t)
	in, err := InputSchema(ops["create_reply"])
	if err != nil {
		t.Fatal(err)
	}
	want := clone(ops["create_reply"].Body).(map[string]any)
	props := want["properties"].(map[string]any)
	delete(props, "billing")
	want["required"] = []any{"thread_id", "body_markdown"}
	got := clone(in).(map[string]any)
	gotProps := got["properties"].(map[string]any)
	for _, extra := range []string{ArgIdempotencyKey, ArgMaxCreditCost} {
		if _, ok := gotProps[extra]; !ok {
			t.Fatalf("no %s in %v", extra, gotProps)
		}
		delete(gotProps, extra)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("input schema\n%s\nwant\n%s", jsonOf(t, got), jsonOf(t, want))
	}
	// The published operation is left as it was.
	if _, ok := ops["create_reply"].Body["properties"].(map[string]any)["billing"]; !ok {
		t.Fatal("InputSchema changed the operation's body schema")
	}

	put, err := InputSchema(ops["manage_thread_attachments"])
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonOf(t, put["required"]); got != `["thread_id"]` {
		t.Fatalf("manage_thread_attachments requires %s", got)
	}
	get, err := InputSchema(ops["usage"])
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonOf(t, get); got != `{"properties":{"limit":{"description":"At most this many.","maximum":100,"minimum":1,"type":"integer"}},"type":"object"}` {
		t.Fatalf("usage's input %s", got)
	}
	// A parameter named like a body member is refused rather than guessed.
	clash := *ops["manage_thread_attachments"]
	clash.Params = append(slices.Clone(clash.Params), Param{Name: "attachments", In: "query", Schema: map[string]any{}})
	if _, err := InputSchema(&clash); err == nil {
		t.Fatal("a clashing parameter was accepted")
	}
	// An answer that is not an object is wrapped.
	if got := jsonOf(t, OutputSchema(ops["usage"])); got != `{"additionalProperties":false,"properties":{"result":{"items":{"type":"integer"},"type":"array"}},"required":["result"],"type":"object"}` {
		t.Fatalf("usage's output %s", got)
	}
}
