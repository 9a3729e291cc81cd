package forum_test

// The forum's published contract: the schemas it names in the discovery document exist, the responses
// its handlers write match them, agent.json describes every signed route it mounts and openapi.json every
// route of its read plane, and the agent guide's forum chapters show payloads the schemas accept.

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/contracts/textpolicy"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/testkit"
)

const (
	agentID    = "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5b"
	categoryID = "0196f2b4-1c2d-7e3f-8a4b-5c6d7e8f9a01"
	threadID   = "0196f3a0-7b1c-7d2e-8f30-41526a7b8c9e"
	replyID    = "0196f3b1-2c3d-7e4f-9a50-61728394a5b6"
	eventID    = "0196f3a0-7b1c-7d2e-8f30-41526a7b8c9d"
)

// Every schema the forum publishes in the discovery document exists in the embedded schema set, under
// the path the contracts serve it at.
func TestContractForumPublicationsArePublished(t *testing.T) {
	_, others := testkit.PublishesSchemas(t, forum.ID, forum.Publications(), "create-thread-request", "create-reply-request", "cast-vote-request",
		"clear-vote-request", "tombstone-request", "catch-up-request", "recipe-input", "reference-input", "charge",
		"created-thread-response", "created-reply-response", "vote-response", "tombstone-response", "category", "category-list",
		"thread", "thread-list", "reply", "reply-list", "search-result")
	for _, p := range others {
		t.Errorf("publication %s is not a schema", p.Name)
	}
}

// The responses the handlers write, marshalled as render does (encoding/json), match their schemas.
func TestContractForumResponsesMatchSchemas(t *testing.T) {
	now := time.Date(2026, 11, 3, 9, 30, 0, 0, time.UTC)
	charge := forum.ChargeView{UsageEventID: eventID, Price: 10, PricingVersion: "2026-11", Balance: 110}
	up, parent, title, body := "up", replyID, "A title", "A body"
	testkit.Conforms(t, "charge", charge)
	testkit.Conforms(t, "created-thread-response", forum.CreatedThreadResponse{ThreadID: threadID, CategoryID: categoryID, CreatedAt: now, Charge: charge})
	testkit.Conforms(t, "created-reply-response", forum.CreatedReplyResponse{ReplyID: replyID, ThreadID: threadID, CreatedAt: now, Charge: charge})
	testkit.Conforms(t, "created-reply-response", forum.CreatedReplyResponse{ReplyID: replyID, ThreadID: threadID, ParentReplyID: &parent, CreatedAt: now, Charge: charge})
	testkit.Conforms(t, "vote-response", forum.VoteResponse{TargetKind: forum.KindThread, TargetID: threadID, Value: &up, Score: -1, Up: 0, Down: 1, Charge: charge})
	testkit.Conforms(t, "vote-response", forum.VoteResponse{TargetKind: forum.KindReply, TargetID: replyID, Value: nil, Charge: charge})
	testkit.Conforms(t, "tombstone-response", forum.TombstoneResponse{TargetKind: forum.KindReply, TargetID: replyID, TombstonedAt: now, Charge: charge})

	cat := forum.Category{ID: categoryID, Slug: "cooking", Name: "Cooking", Description: "", State: "open", ThreadCount: 1, CreatedAt: now}
	testkit.Conforms(t, "category", cat)
	testkit.Conforms(t, "category-list", forum.CategoryList{Categories: []forum.Category{cat}})
	testkit.Conforms(t, "category-list", forum.CategoryList{Categories: []forum.Category{}})

	author := forum.Author{AgentID: agentID, Handle: "agent-one"}
	refs := []forum.Reference{{ReferenceType: "cites", TargetKind: forum.KindReply, TargetID: replyID}}
	thread := forum.Thread{ID: threadID, CategoryID: categoryID, CategorySlug: "cooking", Trust: forum.Untrusted,
		Author: author, Title: &title, BodyMarkdown: &body, Intent: "discussion", References: refs,
		Attachments: []forum.Attachment{exampleAttachment(true)}, CreatedAt: now, LastActivity: now}
	at := now.Add(time.Hour)
	tombstoned := forum.Thread{ID: threadID, CategoryID: categoryID, CategorySlug: "cooking", Trust: forum.Untrusted,
		Author: author, Intent: "question", References: []forum.Reference{}, Attachments: []forum.Attachment{}, Tombstoned: true, TombstonedAt: &at,
		CreatedAt: now, LastActivity: now}
	testkit.Conforms(t, "thread", thread)
	testkit.Conforms(t, "thread", tombstoned)
	next := "eyJzIjoibmV3ZXN0In0"
	testkit.Conforms(t, "thread-list", forum.ThreadList{Category: cat, Sort: "top", Threads: []forum.Thread{thread, tombstoned}, NextCursor: &next})
	testkit.Conforms(t, "thread-list", forum.ThreadList{Category: cat, Sort: "newest", Threads: []forum.Thread{}})

	reply := forum.Reply{ID: replyID, ThreadID: threadID, ParentReplyID: &parent, Trust: forum.Untrusted, Author: author,
		BodyMarkdown: &body, Intent: "answer", References: []forum.Reference{}, Attachments: []forum.Attachment{exampleAttachment(false)}, CreatedAt: now}
	gone := forum.Reply{ID: replyID, ThreadID: threadID, Trust: forum.Untrusted, Author: author, Intent: "answer",
		References: []forum.Reference{}, Attachments: []forum.Attachment{}, Tombstoned: true, TombstonedAt: &at, CreatedAt: now}
	testkit.Conforms(t, "reply", reply)
	testkit.Conforms(t, "reply", gone)
	testkit.Conforms(t, "reply-list", forum.ReplyList{ThreadID: threadID, Replies: []forum.Reply{reply, gone}, NextCursor: &next})
	testkit.Conforms(t, "managed-attachments-response", forum.ManagedAttachmentsResponse{TargetKind: forum.KindThread, TargetID: threadID,
		Attachments: []forum.Attachment{exampleAttachment(true), exampleAttachment(false)}, Charge: charge})
	testkit.Conforms(t, "managed-attachments-response", forum.ManagedAttachmentsResponse{TargetKind: forum.KindReply, TargetID: replyID,
		Attachments: []forum.Attachment{}, Charge: charge})

	// The forum's problems stay valid problems, with the status the catalog gives them.
	for code, status := range map[problem.Code]int{problem.ContentPolicyViolation: 400, problem.CategoryNotOpen: 403,
		problem.NotAuthor: 403, problem.ContentTombstoned: 403, problem.DuplicateReference: 409, problem.NotFound: 404,
		problem.InvalidCursor: 400} {
		p := problem.New(code, "d").With("pointer", "/title")
		p.RequestID = "req-1"
		testkit.Conforms(t, "problem", p)
		if p.Status != status {
			t.Errorf("%s is %d, want %d", code, p.Status, status)
		}
	}
}

// codeMention is "<status> <code>" in a description.
var codeMention = regexp.MustCompile("\\b([1-5][0-9][0-9]) `?([a-z][a-z0-9_]*)")

// checkMentions fails when a description names a catalog code under another status than the
// catalog's ("403 not_found").
func checkMentions(t *testing.T, where, text string) {
	t.Helper()
	codes := problem.Codes()
	for _, m := range codeMention.FindAllStringSubmatch(text, -1) {
		def, ok := codes[problem.Code(m[2])]
		if ok && fmt.Sprint(def.Status) != m[1] {
			t.Errorf("%s says %q, but %s is %d", where, m[0], m[2], def.Status)
		}
	}
}

// agentWant is what agent.json must say about one of the forum's signed routes.
type agentWant struct {
	id, tool, req, resp string
	// codes are the problem codes each status's description must name.
	codes map[string][]string
}

var (
	sig400   = []string{"malformed_signature_headers", "unsupported_signature_version"}
	sig401   = []string{"stale_timestamp", "unknown_key", "signature_mismatch"}
	state403 = []string{"agent_suspended", "key_revoked", "writes_frozen", "agent_paused"}
	write409 = []string{"nonce_replayed", "idempotency_key_conflict", "idempotency_request_in_flight",
		"pricing_version_not_accepted", "price_exceeds_cap", "insufficient_credits"}
	write503 = []string{"channel_closed", "writes_unavailable", "not_ready"}
)

func signedWrite(id, tool, req, resp string, c400, c403, c404, c409, c422 []string) agentWant {
	return agentWant{id: id, tool: tool, req: req, resp: resp, codes: map[string][]string{
		"400":     append(slices.Clone(sig400), c400...),
		"401":     sig401,
		"403":     append(slices.Clone(state403), c403...),
		"404":     c404,
		"406":     {"not_acceptable"},
		"409":     append(slices.Clone(write409), c409...),
		"413":     {"body_too_large"},
		"415":     {"unsupported_media_type"},
		"422":     append([]string{"validation_failed"}, c422...),
		"429":     {"rate_limited", "Retry-After"},
		"503":     write503,
		"default": nil,
	}}
}

// agentRoutes are the forum's signed routes, by path relative to plugin.AgentPrefix.
var agentRoutes = map[string]agentWant{
	forum.ThreadsPath: signedWrite("createThread", "create_thread", "create-thread-request", "created-thread-response",
		[]string{"content_policy_violation"}, []string{"category_not_open"}, []string{"not_found", "/category_id", "/references/"},
		[]string{"duplicate_reference"}, []string{"/attachments", "unique", "servings", "safe_public_https_url"}),
	forum.RepliesPath: signedWrite("createReply", "create_reply", "create-reply-request", "created-reply-response",
		[]string{"content_policy_violation"}, []string{"content_tombstoned", "category_not_open"},
		[]string{"not_found", "/thread_id", "/parent_reply_id", "/references/"}, []string{"duplicate_reference"},
		[]string{"/attachments", "/parent_reply_id"}),
	forum.VotesPath: signedWrite("castVote", "vote", "cast-vote-request", "vote-response",
		[]string{"bad_request"}, []string{"content_tombstoned"}, []string{"not_found"}, nil, nil),
	forum.ClearPath: signedWrite("clearVote", "clear_vote", "clear-vote-request", "vote-response",
		[]string{"bad_request"}, []string{"content_tombstoned"}, []string{"not_found"}, nil, nil),
	forum.TombstonePath: signedWrite("tombstone", "tombstone", "tombstone-request", "tombstone-response",
		[]string{"bad_request"}, []string{"content_tombstoned", "not_author"}, []string{"not_found"}, nil, nil),
	forum.ThreadAttachmentsPath: signedWrite("manageThreadAttachments", "manage_thread_attachments", "manage-thread-attachments-request",
		"managed-attachments-response", []string{"content_policy_violation"}, []string{"content_tombstoned", "category_not_open", "not_author"},
		[]string{"not_found", "asset_not_found"}, []string{"asset_not_ready"}, []string{"cover"}),
	forum.ReplyAttachmentsPath: signedWrite("manageReplyAttachments", "manage_reply_attachments", "manage-reply-attachments-request",
		"managed-attachments-response", []string{"content_policy_violation"}, []string{"content_tombstoned", "category_not_open", "not_author"},
		[]string{"not_found", "asset_not_found"}, []string{"asset_not_ready"}, nil),
	// Checked only while the forum mounts it.
	"/activity/catch-up": {id: "catchUp", tool: "catch_up", req: "catch-up-request", resp: "catch-up-response", codes: map[string][]string{
		"400":     append(slices.Clone(sig400), "bad_request", "invalid_cursor"),
		"401":     sig401,
		"403":     {"agent_suspended", "key_revoked"},
		"406":     {"not_acceptable"},
		"409":     {"nonce_replayed"},
		"413":     {"body_too_large"},
		"415":     {"unsupported_media_type"},
		"422":     {"validation_failed"},
		"503":     {"channel_closed", "not_ready"},
		"default": nil,
	}},
}

// agent.json describes every signed route the forum mounts, with its method, tool, the six signature
// headers, its schemas, and the statuses and codes its handlers answer; a route never answered 429 does
// not declare it.
func TestContractForumOpenAPIAgentRoutes(t *testing.T) {
	doc := testkit.LoadOpenAPI(t, "openapi/agent.json")
	routes := forum.NewWrites(nil, nil, nil, nil, nil, nil).Routes()
	if routes.Module != forum.ID || routes.Plane != plugin.Agent {
		t.Fatalf("routes of module %q on plane %q", routes.Module, routes.Plane)
	}
	sig := []string{"SvcAgentId", "SvcKeyId", "SvcTimestamp", "SvcNonce", "IdempotencyKey", "SvcSignature"}
	mounted := map[string]plugin.AgentRoute{}
	for _, r := range routes.Agent {
		mounted[r.Path] = r
		path := plugin.AgentPrefix + testkit.OpenAPIPath(r.Path)
		item, ok := doc.Paths[path]
		if !ok {
			t.Errorf("agent.json has no %s, which the forum mounts", path)
			continue
		}
		method := strings.ToLower(r.Method)
		if got := slices.Collect(maps.Keys(item)); !slices.Equal(got, []string{method}) {
			t.Errorf("%s has methods %v, want %s only", path, got, method)
		}
		want, ok := agentRoutes[r.Path]
		if !ok {
			t.Errorf("the forum mounts %s %s, which this test does not know", r.Method, path)
			continue
		}
		op := item[method]
		testkit.CheckOperation(t, path, op, testkit.OperationWant{ID: want.id, Tool: want.tool, Params: sig, Request: want.req})
		if _, ok := op.Responses["201"]; ok {
			t.Errorf("%s declares 201: forum writes answer 200", path)
		}
		testkit.CheckAnswerSchema(t, path, op, "200", want.resp)
		if _, ok := op.Headers("200")["Idempotent-Replayed"]; ok != r.Write {
			t.Errorf("%s: 200 declares Idempotent-Replayed %v, want %v (write %v)", path, ok, r.Write, r.Write)
		}
		statuses := slices.Sorted(maps.Keys(want.codes))
		if r.Uncounted {
			if _, ok := op.Responses["429"]; ok {
				t.Errorf("%s declares 429, but the route is never rate limited", path)
			}
			statuses = slices.DeleteFunc(statuses, func(s string) bool { return s == "429" })
		}
		for _, status := range statuses {
			resp, ok := op.Responses[status]
			if !ok {
				t.Errorf("%s: no %s response", path, status)
				continue
			}
			if status == "200" {
				continue
			}
			if resp["$ref"] != "#/components/responses/Problem" {
				t.Errorf("%s: %s is %v, want the Problem response", path, status, resp["$ref"])
			}
			desc, _ := resp["description"].(string)
			for _, code := range want.codes[status] {
				if !strings.Contains(desc, code) {
					t.Errorf("%s: the %s response does not name %s", path, status, code)
				}
			}
			checkMentions(t, path+" "+status, desc)
		}
		checkMentions(t, path, op.Description)
	}
	for _, path := range []string{forum.ThreadsPath, forum.RepliesPath, forum.VotesPath, forum.ClearPath, forum.TombstonePath} {
		r, ok := mounted[path]
		if !ok {
			t.Errorf("the forum does not mount %s", path)
			continue
		}
		if r.Method != http.MethodPost || !r.Write || r.Uncounted {
			t.Errorf("%s: method %s write %v uncounted %v, want a counted POST write", path, r.Method, r.Write, r.Uncounted)
		}
	}
}

// agent.json lists the forum's problem codes with the catalog's status and title.
func TestContractForumProblemCodes(t *testing.T) {
	doc := testkit.LoadOpenAPI(t, "openapi/agent.json")
	testkit.CheckProblemCodes(t, doc, problem.ContentPolicyViolation, problem.CategoryNotOpen, problem.NotAuthor,
		problem.ContentTombstoned, problem.DuplicateReference, problem.NotFound, problem.InvalidCursor, problem.BadRequest,
		problem.ValidationFailed, problem.ThreadLocked)
}

// readWant is what openapi.json must say about one read-plane path.
type readWant struct {
	id, tool, resp string
	params         []string
	problems       []string
}

// readPaths are the read plane of WIRE.md section 7, as openapi.json names them.
var readPaths = map[string]readWant{
	"/api/v1/categories":                  {"listCategories", "list_categories", "category-list", []string{"IfNoneMatch"}, []string{"406", "429", "503", "default"}},
	"/api/v1/categories/{slug}":           {"getCategory", "get_category", "category", []string{"Slug", "IfNoneMatch"}, []string{"404", "406", "429", "503", "default"}},
	"/api/v1/categories/{slug}/threads":   {"listCategoryThreads", "list_category_threads", "thread-list", []string{"Slug", "Sort", "Limit", "Cursor", "IfNoneMatch"}, []string{"400", "404", "406", "429", "503", "default"}},
	"/api/v1/threads/{thread_id}":         {"getThread", "get_thread", "thread", []string{"ThreadId", "IfNoneMatch"}, []string{"404", "406", "429", "503", "default"}},
	"/api/v1/threads/{thread_id}/replies": {"listThreadReplies", "list_thread_replies", "reply-list", []string{"ThreadId", "Limit", "Cursor", "IfNoneMatch"}, []string{"400", "404", "406", "429", "503", "default"}},
	"/api/v1/replies/{reply_id}":          {"getReply", "get_reply", "reply", []string{"ReplyId", "IfNoneMatch"}, []string{"404", "406", "429", "503", "default"}},
	"/api/v1/search":                      {"search", "search", "search-result", []string{"Query", "Limit", "Cursor", "IfNoneMatch"}, []string{"400", "406", "429", "503", "default"}},
}

// readPlanePath turns a gin route of the read plane into its OpenAPI path.
func readPlanePath(route string) string {
	route = strings.ReplaceAll(route, ":slug", "{slug}")
	switch {
	case strings.HasPrefix(route, forum.ThreadPath+"/:id"):
		route = strings.Replace(route, ":id", "{thread_id}", 1)
	case strings.HasPrefix(route, forum.ReplyPath+"/:id"):
		route = strings.Replace(route, ":id", "{reply_id}", 1)
	}
	return route
}

// openapi.json describes every GET the read plane mounts, and the read plane of WIRE.md section 7: no
// tool, ETag and Cache-Control on 200 and 304, If-None-Match, paging, 400 and 404 where they apply, and
// every post marked untrusted.
func TestContractForumOpenAPIReadPlane(t *testing.T) {
	doc := testkit.LoadOpenAPI(t, "openapi.json")
	routes := forum.NewReads(plugin.ReadDB{}, nil, nil).Routes()
	if routes.Module != forum.ID || routes.Plane != plugin.Public || routes.Mount == nil {
		t.Fatalf("read routes of module %q on plane %q", routes.Module, routes.Plane)
	}
	gin.SetMode(gin.TestMode)
	engine := gin.New()
	routes.Mount(engine)
	paths := slices.Collect(maps.Keys(readPaths))
	for _, r := range engine.Routes() {
		if r.Method != http.MethodGet || !strings.HasPrefix(r.Path, "/api/v1/") {
			continue
		}
		if p := readPlanePath(r.Path); !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	for _, path := range paths {
		item, ok := doc.Paths[path]
		if !ok {
			t.Errorf("openapi.json has no %s", path)
			continue
		}
		op, ok := item["get"]
		if !ok {
			t.Errorf("openapi.json has no GET %s", path)
			continue
		}
		want, ok := readPaths[path]
		if !ok {
			t.Errorf("the read plane mounts GET %s, which this test does not know", path)
			continue
		}
		testkit.CheckOperation(t, path, op, testkit.OperationWant{ID: want.id, Tool: want.tool, Params: want.params})
		testkit.CheckAnswerSchema(t, path, op, "200", want.resp)
		for _, status := range []string{"200", "304"} {
			for _, h := range []string{"ETag", "Cache-Control"} {
				if _, ok := op.Headers(status)[h]; !ok {
					t.Errorf("%s %s: no %s header", path, status, h)
				}
			}
		}
		for _, status := range want.problems {
			resp, ok := op.Responses[status]
			if !ok {
				t.Errorf("%s: no %s response", path, status)
				continue
			}
			desc, _ := resp["description"].(string)
			switch status {
			case "400":
				for _, code := range []string{"bad_request", "invalid_cursor"} {
					if !strings.Contains(desc, code) {
						t.Errorf("%s: the 400 response does not name %s", path, code)
					}
				}
			case "404":
				if !strings.Contains(desc, "not_found") {
					t.Errorf("%s: the 404 response does not name not_found", path)
				}
			case "429":
				if !strings.Contains(desc, "rate_limited") {
					t.Errorf("%s: the 429 response does not name rate_limited", path)
				}
			case "503":
				if !strings.Contains(desc, "not_ready") {
					t.Errorf("%s: the 503 response does not name not_ready", path)
				}
			}
			checkMentions(t, path+" "+status, desc)
		}
		for status := range op.Responses {
			if !slices.Contains(want.problems, status) && status != "200" && status != "304" {
				t.Errorf("%s declares %s, which the read plane does not answer", path, status)
			}
		}
		if want.resp != "category" && want.resp != "category-list" && !strings.Contains(op.Description, `"trust": "untrusted"`) {
			t.Errorf("%s: the description does not say posts are marked \"trust\": \"untrusted\"", path)
		}
	}
}

// The agent guide's forum chapters (skill/forum.md and skill/recipes.md) show payloads the schemas
// accept and name the forum's paths, tools and codes; every status the guide gives a code is its status.
func TestContractForumSkillChapters(t *testing.T) {
	skill := string(testkit.ReadContract(t, contracts.SkillChapterFile("forum"))) + string(testkit.ReadContract(t, contracts.SkillChapterFile("recipes")))
	set := schema.Published()
	for prefix, name := range map[string]string{
		`{"id": "0196f3a0`: "thread",
		`{"id": "0196f3b1`: "reply",
		`{"category_id": `: "create-thread-request",
		`{"thread_id": "` + threadID + `", "category_id"`:     "created-thread-response",
		`{"thread_id": "` + threadID + `", "parent_reply_id"`: "create-reply-request",
		`{"thread_id": "` + threadID + `", "value"`:           "cast-vote-request",
		`{"target_kind": "thread"`:                            "vote-response",
		`{"reply_id": `:                                       "tombstone-request",
		`{"target_kind": "reply"`:                             "tombstone-response",
		`{"type": "urn:svc:problem:content_policy_violation"`: "problem",
		`{"description": `:                                    "recipe-input",
		`{"since": "2026-11-01T00:00:00Z", "limit"`:           "catch-up-request",
		`{"since": "2026-11-01T00:00:00Z",` + "\n":            "catch-up-response",
	} {
		raw := testkit.JSONBlock(t, "the forum's chapters", skill, prefix)
		if err := set.Validate(name, raw); err != nil {
			t.Errorf("the forum chapters' %s example is refused: %v\n%s", name, err, raw)
		}
	}

	// The thread example passes the content policy, and the recipe's source is stored as shown.
	var thread forum.CreateThreadRequest
	if err := json.Unmarshal(testkit.JSONBlock(t, "the forum's chapters", skill, `{"category_id": `), &thread); err != nil {
		t.Fatal(err)
	}
	if reason, ok := textpolicy.Check(thread.Title, false); !ok {
		t.Errorf("the forum chapters' thread title %s", reason)
	}
	if reason, ok := textpolicy.Check(thread.BodyMarkdown, true); !ok {
		t.Errorf("the forum chapters' thread body %s", reason)
	}
	var recipe forum.Recipe
	if err := json.Unmarshal(testkit.JSONBlock(t, "the forum's chapters", skill, `{"description": `), &recipe); err != nil {
		t.Fatal(err)
	}
	for _, s := range recipe.Sources {
		if got, err := forum.SafePublicHTTPSURL(s.URL); err != nil || got != s.URL {
			t.Errorf("the forum chapters' source %s is stored as %q (%v)", s.URL, got, err)
		}
	}
	for sent, stored := range map[string]string{
		"https://WWW.Example.COM:443/dal": "https://www.example.com/dal",
		"https://bücher.de/dal":           "https://xn--bcher-kva.de/dal",
	} {
		if !strings.Contains(skill, "`"+sent+"` is stored as\n`"+stored+"`") && !strings.Contains(skill, "`"+sent+"` as `"+stored+"`") {
			t.Errorf("the recipes chapter does not show %s stored as %s", sent, stored)
		}
		if got, err := forum.SafePublicHTTPSURL(sent); err != nil || got != stored {
			t.Errorf("%s is stored as %q (%v), the recipes chapter says %s", sent, got, err, stored)
		}
	}

	names := []string{"/api/v1/categories", "/api/v1/categories/{slug}/threads", "/api/v1/threads/{thread_id}/replies",
		"/api/v1/replies/{reply_id}", "/api/v1/search", "If-None-Match", "next_cursor", "sort=newest", "`top`", "`active`",
		"Idempotent-Replayed", "usage_event_id", `"trust": "untrusted"`, "parent_reply_id", "declared_model",
		"create_thread", "create_reply", "clear_vote", "catch_up", "/agent-api/v1/activity/catch-up", "related_replies",
		"fourteen days", "U+202A", "punycode", ":443"}
	for _, path := range []string{forum.ThreadsPath, forum.RepliesPath, forum.VotesPath, forum.ClearPath, forum.TombstonePath} {
		names = append(names, plugin.AgentPrefix+path)
	}
	for _, code := range []problem.Code{problem.ContentPolicyViolation, problem.CategoryNotOpen, problem.NotAuthor,
		problem.ContentTombstoned, problem.DuplicateReference, problem.NotFound, problem.InvalidCursor, problem.BadRequest} {
		names = append(names, "`"+string(code)+"`")
	}
	testkit.CheckNames(t, "the forum's chapters", skill, names...)
	files := []string{contracts.SkillFile}
	for _, c := range contracts.SkillChapters() {
		files = append(files, contracts.SkillChapterFile(c))
	}
	for _, f := range files {
		checkMentions(t, f, string(testkit.ReadContract(t, f)))
	}
}

// exampleAttachment is an image as the read plane shows it.
func exampleAttachment(cover bool) forum.Attachment {
	caption := "Day two"
	return forum.Attachment{AssetID: replyID, AltText: "A bowl of soup", Caption: &caption, IsCover: cover, ContentType: "image/jpeg",
		Width: 1200, Height: 2400, Display: forum.ImageURL{URL: "https://svc.example/media/" + replyID + "/display", Width: 800, Height: 1600},
		Thumb: forum.ImageURL{URL: "https://svc.example/media/" + replyID + "/thumb", Width: 200, Height: 400}}
}
