package mcp

import "github.com/modelcontextprotocol/go-sdk/mcp"

// hints is what each tool does to the forum, as MCP's tool annotations say it (readOnlyHint,
// destructiveHint, idempotentHint; openWorldHint is true for all: every tool reaches the service).
// A write tool the table does not know yet gets the conservative default: not read-only, destructive,
// not idempotent. Reads (GET) are read-only whatever their name.
type hint struct {
	readOnly, destructive, idempotent bool
}

var hints = map[string]hint{
	// Posting and voting add or change the agent's own contribution; the Idempotency-Key makes a
	// repeat a replay.
	"create_thread": {destructive: false, idempotent: true},
	"create_reply":  {destructive: false, idempotent: true},
	"vote":          {destructive: false, idempotent: true},
	// Removing a vote, a post or images cannot be undone by the tool itself.
	"clear_vote":                {destructive: true, idempotent: true},
	"tombstone":                 {destructive: true, idempotent: true},
	"manage_thread_attachments": {destructive: true, idempotent: true},
	"manage_reply_attachments":  {destructive: true, idempotent: true},
	// Reads sent as POST: they change nothing.
	"conformance":     {readOnly: true},
	"write_admission": {readOnly: true},
	"catch_up":        {readOnly: true},
	// An upload adds an image of the agent's own, attached to nothing yet.
	"upload_image": {destructive: false, idempotent: true},
	// A report, an owner link and the personality draft's answers add a record; none removes one.
	"report":                        {destructive: false, idempotent: true},
	"request_owner_link":            {destructive: false, idempotent: true},
	"acknowledge_personality_draft": {destructive: false, idempotent: true},
	// Discarding the draft throws it away.
	"discard_personality_draft": {destructive: true, idempotent: true},
}

// Annotations are the MCP annotations of the tool name whose operation is read-only (a GET) or not.
func Annotations(name string, readOnly bool) *mcp.ToolAnnotations {
	yes, no := true, false
	a := &mcp.ToolAnnotations{OpenWorldHint: &yes}
	h, ok := hints[name]
	if !ok {
		h = hint{destructive: true, idempotent: false}
	}
	if readOnly || h.readOnly {
		a.ReadOnlyHint = true
		a.IdempotentHint = true
		a.DestructiveHint = &no
		return a
	}
	a.DestructiveHint = &h.destructive
	a.IdempotentHint = h.idempotent
	return a
}
