package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/svcforum/svc/connector/profile"
	"github.com/svcforum/svc/sdk"
)

// Config is what a server runs with.
type Config struct {
	// Client signs as the profile's identity (sdk.New with sdk.LoadIdentity's identity).
	Client  *sdk.Client
	Profile *profile.Profile
	// MediaDir is the only directory upload_image reads from ("" refuses every upload).
	MediaDir string
	// Log receives one line per call (never arguments, keys or answers); nil discards.
	Log *slog.Logger
	// Clock is the time (default time.Now).
	Clock   func() time.Time
	Version string
}

// Server holds the tools built from the contracts.
type Server struct {
	cfg   Config
	tools map[string]*Operation
	// skipped are the x-svc-tool operations not served, with the reason (excluded, or unusable).
	skipped map[string]string
	mcp     *mcp.Server
	// status is get_media_upload, which upload_image follows until the image is processed.
	status *Operation
}

// New reads the published contracts through cfg.Client and builds the server's tools. It fails when
// the contracts cannot be read.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ops, skipped, err := LoadContracts(ctx, cfg.Client)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, tools: map[string]*Operation{}, skipped: skipped}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "svc-connector", Version: cfg.Version},
		&mcp.ServerOptions{Instructions: Instructions, Logger: cfg.Log})
	var upload *Operation
	for _, o := range ops {
		if why, ok := Excluded[o.Tool]; ok {
			s.skipped[o.Tool] = why
			if o.Tool == "upload_media" {
				upload = o
			}
			continue
		}
		if o.Form {
			s.skipped[o.Tool] = "its request body is a form, not JSON"
			continue
		}
		tool, err := s.tool(o)
		if err != nil {
			s.skipped[o.Tool] = err.Error()
			continue
		}
		s.tools[o.Tool] = o
		s.mcp.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return s.call(ctx, o, req), nil
		})
	}
	if upload != nil {
		s.addUploadImage(upload, findOp(ops, "get_media_upload"))
	}
	for name, why := range s.skipped {
		cfg.Log.Info("tool not served", "tool", name, "why", why)
	}
	return s, nil
}

func findOp(ops []*Operation, name string) *Operation {
	for _, o := range ops {
		if o.Tool == name {
			return o
		}
	}
	return nil
}

// MCP is the server to run on a transport.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Tools are the names of the tools built from the contracts (upload_image aside).
func (s *Server) Tools() map[string]*Operation { return s.tools }

// tool is the MCP tool of operation o.
func (s *Server) tool(o *Operation) (*mcp.Tool, error) {
	in, err := InputSchema(o)
	if err != nil {
		return nil, err
	}
	t := &mcp.Tool{Name: o.Tool, Description: describe(o), InputSchema: in, Annotations: Annotations(o.Tool, !o.Write())}
	if out := OutputSchema(o); out != nil {
		t.OutputSchema = out
	}
	return t, nil
}

// describe is the operation's summary and description, and what the server adds.
func describe(o *Operation) string {
	d := strings.TrimSpace(o.Summary)
	if desc := strings.TrimSpace(o.Description); desc != "" {
		d += "\n\n" + desc
	}
	if o.Metered() {
		d += "\n\nMetered: the server fills billing from the owner's budget (pass max_credit_cost to spend less)."
	}
	return d
}

// args are a call's arguments with the server's own taken out.
type args struct {
	values   map[string]any
	key      string
	modelCap *int64
}

func parseArgs(raw json.RawMessage) (*args, error) {
	a := &args{values: map[string]any{}}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &a.values); err != nil {
			return nil, errors.New("the arguments must be a JSON object")
		}
	}
	if v, ok := a.values[ArgIdempotencyKey]; ok {
		k, ok := v.(string)
		if !ok || k == "" || len(k) > 200 || strings.IndexFunc(k, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
			return nil, errors.New("idempotency_key must be 1..200 printable ASCII characters without spaces")
		}
		a.key = k
	}
	if v, ok := a.values[ArgMaxCreditCost]; ok {
		f, ok := v.(float64)
		if !ok || f < 0 || f != float64(int64(f)) {
			return nil, errors.New("max_credit_cost must be a whole number of credits, 0 or more")
		}
		c := int64(f)
		a.modelCap = &c
	}
	return a, nil
}

// request builds the HTTP call of o from the arguments: path parameters filled in and escaped, query
// parameters, and the JSON body of the other arguments (without billing, filled later).
func request(o *Operation, a *args) (sdk.Call, map[string]any, error) {
	call := sdk.Call{Method: o.Method, Path: o.Path}
	body := map[string]any{}
	for k, v := range a.values {
		body[k] = v
	}
	delete(body, ArgIdempotencyKey)
	delete(body, ArgMaxCreditCost)
	delete(body, billingMember)
	for _, p := range o.Params {
		v, ok := body[p.Name]
		delete(body, p.Name)
		if !ok {
			if p.Required {
				return call, nil, fmt.Errorf("%s is required", p.Name)
			}
			continue
		}
		s, err := scalar(v)
		if err != nil {
			return call, nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		if p.In == "path" {
			if s == "" || s == "." || s == ".." {
				return call, nil, fmt.Errorf("%s must not be empty, \".\" or \"..\"", p.Name)
			}
			call.Path = strings.ReplaceAll(call.Path, "{"+p.Name+"}", url.PathEscape(s))
			continue
		}
		if call.Query == nil {
			call.Query = url.Values{}
		}
		call.Query.Set(p.Name, s)
	}
	if o.Body == nil {
		if len(body) > 0 {
			return call, nil, fmt.Errorf("unknown arguments: %s", strings.Join(sortedKeys(body), ", "))
		}
		return call, nil, nil
	}
	return call, body, nil
}

// scalar is a parameter's value in a path or a query.
func scalar(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case float64:
		if v == float64(int64(v)) {
			return fmt.Sprint(int64(v)), nil
		}
		return fmt.Sprint(v), nil
	case bool:
		return fmt.Sprint(v), nil
	}
	return "", errors.New("must be a string or a number")
}

// call runs one tool call of operation o; every outcome is a result, never a protocol error.
func (s *Server) call(ctx context.Context, o *Operation, req *mcp.CallToolRequest) *mcp.CallToolResult {
	start := s.cfg.Clock()
	a, err := parseArgs(req.Params.Arguments)
	if err != nil {
		return s.logged(o.Tool, start, localError(CodeBadArgument, err.Error(), nil))
	}
	call, body, err := request(o, a)
	if err != nil {
		return s.logged(o.Tool, start, localError(CodeBadArgument, err.Error(), nil))
	}
	var opts []sdk.CallOption
	var info sdk.ResponseInfo
	opts = append(opts, sdk.WithResponseInfo(&info))
	var key string // the write's Idempotency-Key; "" for a read
	if o.Write() {
		var refused *mcp.CallToolResult
		var billing *sdk.BillingDeclaration
		key, billing, refused = s.prepareWrite(ctx, o.Tool, a, o.Metered(), attachmentCount(body))
		if refused != nil {
			return s.logged(o.Tool, start, refused)
		}
		if billing != nil {
			body[billingMember] = billing
		}
		opts = append(opts, sdk.WithIdempotencyKey(key))
	}
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return s.logged(o.Tool, start, localError(CodeBadArgument, err.Error(), nil))
		}
		call.Body = raw
	}
	answer, err := s.cfg.Client.Do(ctx, call, opts...)
	if err != nil {
		s.settleWrite(key, nil, err)
		return s.logged(o.Tool, start, problemResult(err))
	}
	var data any
	if len(answer) > 0 {
		if err := json.Unmarshal(answer, &data); err != nil {
			s.settleWrite(key, nil, err) // answered, but unreadable: its charge is unknown, its cost stays held
			return s.logged(o.Tool, start, problemResult(fmt.Errorf("the answer is not JSON: %w", err)))
		}
	}
	s.settleWrite(key, data, nil)
	return s.logged(o.Tool, start, s.answer(o.Response, data, info.Replayed))
}

// answer is a 2xx answer as a result: untrusted members moved, wrapped when not an object.
func (s *Server) answer(schema map[string]any, data any, replayed bool) *mcp.CallToolResult {
	data = UntrustedData(schema, data)
	obj, ok := data.(map[string]any)
	if !ok || (schema != nil && !isObjectSchema(schema)) {
		obj = map[string]any{"result": data}
	}
	note := ""
	if replayed {
		note = "This is the answer to an identical earlier call (Idempotent-Replayed): nothing was done or charged again."
	}
	return okResult(obj, note)
}

// attachmentCount is how many attachments a request body carries (each adds per_attachment).
func attachmentCount(body map[string]any) int {
	list, _ := body["attachments"].([]any)
	return len(list)
}

// prepareWrite chooses a write's Idempotency-Key and, when metered, its billing, under the profile's
// state lock: an identical call within IdempotencyWindow reuses the first call's key and billing (the
// service answers it as a replay, charging nothing); a new call is checked against the owner's budget
// and refused here, nothing sent, when its current price is not covered.
func (s *Server) prepareWrite(ctx context.Context, tool string, a *args, metered bool, attachments int) (string, *sdk.BillingDeclaration, *mcp.CallToolResult) {
	canon, err := canonical(a.values)
	if err != nil {
		return "", nil, localError(CodeBadArgument, err.Error(), nil)
	}
	var current *sdk.PricingVersion
	var limits Limits
	if metered {
		pr, err := s.cfg.Client.Pricing(ctx)
		if err != nil {
			return "", nil, problemResult(err)
		}
		v, ok := pr.Current()
		if !ok {
			return "", nil, localError(CodeLocal, "the service has published no pricing version yet: metered writes cannot be declared", nil)
		}
		current = v
		cfg, err := s.cfg.Profile.ReadConfig()
		if err != nil {
			return "", nil, localError(CodeLocal, "the owner's settings: "+err.Error(), nil)
		}
		limits = LimitsOf(cfg.Budget, v)
	}
	op := sdk.Operation(tool)
	if tool == uploadImageTool {
		op = sdk.OpMediaUpload
	}
	var key string
	var billing *sdk.BillingDeclaration
	var refusal *mcp.CallToolResult
	now := s.cfg.Clock()
	_, err = s.cfg.Profile.UpdateMCPState(func(st *profile.MCPState) error {
		st.Writes = pruneWrites(st.Writes, now)
		st.Charges = Prune(st.Charges, now)
		hash := writeHash(st.Secret, tool, canon)
		if w, ok := findWrite(st.Writes, hash, now); ok {
			// The same request again: still pending (its cost is held already) or settled (the service
			// answers it as a replay and charges nothing). A refused first call left no record.
			key = w.Key
			if metered {
				billing = &sdk.BillingDeclaration{PricingVersion: w.PricingVersion, MaxCreditCost: w.MaxCreditCost}
			}
			return nil
		}
		key = a.key
		if key == "" {
			key = deriveKey(st.Secret, hash, now)
		}
		w := profile.MCPWrite{Hash: hash, Key: key, At: now}
		if metered {
			spent := Spent(st.Charges, now) + Held(st.Writes, now)
			price, known := Price(current, op, attachments)
			if !known {
				price = limits.PerWrite // an operation this connector does not know: the most one write may cost
			}
			if why := limits.Refusal(price, spent, a.modelCap); why != "" {
				extra := map[string]any{"price": price, "per_write": limits.PerWrite, "spent_24h": spent}
				if left := limits.Left(spent); left != nil {
					extra["left_24h"] = *left
				}
				refusal = localError(CodeBudget, why, extra)
				return errNoChange
			}
			billing = &sdk.BillingDeclaration{PricingVersion: current.PricingVersion, MaxCreditCost: limits.Cap(spent, a.modelCap)}
			w.PricingVersion, w.MaxCreditCost, w.Pending = billing.PricingVersion, billing.MaxCreditCost, true
		}
		st.Writes = append(st.Writes, w)
		return nil
	})
	if refusal != nil {
		return "", nil, refusal
	}
	if err != nil {
		return "", nil, localError(CodeLocal, "the profile's mcp state: "+err.Error(), nil)
	}
	return key, billing, nil
}

// errNoChange leaves the state file as it was.
var errNoChange = errors.New("no change")

// settleWrite records how the write sent with key ended. An answer: the charge it reports (its member
// "charge": price and usage_event_id) counts against the owner's daily budget, once per usage event,
// and the write is no longer pending. A refusal by the service (a 4xx or 503 problem: nothing was
// committed, the key is free) forgets the write, so that a repeat is a new call, priced and checked against the budget
// afresh. Any other failure leaves the outcome unknown: the write stays pending, its cost held, and a
// repeat sends the same request. Unwritten calls (key "") change nothing.
func (s *Server) settleWrite(key string, data any, callErr error) {
	if key == "" {
		return
	}
	// A 4xx problem or a 503 says nothing was committed; a 500, 502 or 504 (a gateway's, or a failure
	// mid-way) leaves the outcome unknown, as does no answer at all.
	var p *sdk.Problem
	refused := errors.As(callErr, &p) && (p.Status < 500 || p.Status == 503) && p.Code != "idempotency_request_in_flight"
	if callErr != nil && !refused {
		return
	}
	obj, _ := data.(map[string]any)
	charge, _ := obj["charge"].(map[string]any)
	price, charged := charge["price"].(float64)
	id, _ := charge["usage_event_id"].(string)
	now := s.cfg.Clock()
	_, err := s.cfg.Profile.UpdateMCPState(func(st *profile.MCPState) error {
		writes := st.Writes[:0]
		for _, w := range st.Writes {
			switch {
			case w.Key != key:
			case refused:
				continue
			default:
				w.Pending = false
			}
			writes = append(writes, w)
		}
		st.Writes = writes
		if charged && !slices.ContainsFunc(st.Charges, func(c profile.MCPSpend) bool { return id != "" && c.UsageEventID == id }) {
			st.Charges = append(Prune(st.Charges, now), profile.MCPSpend{At: now, Credits: int64(price), UsageEventID: id})
		}
		return nil
	})
	if err != nil {
		s.cfg.Log.Error("recording a write's outcome", "usage_event_id", id, "err", err)
	}
}

// logged writes the call's one log line: the tool, the outcome's code, the time it took.
func (s *Server) logged(tool string, start time.Time, r *mcp.CallToolResult) *mcp.CallToolResult {
	attrs := []any{"tool", tool, "ms", s.cfg.Clock().Sub(start).Milliseconds()}
	if r.IsError {
		if m := ErrorProblem(r); m != nil {
			attrs = append(attrs, "code", m["code"], "status", m["status"])
		}
		s.cfg.Log.Warn("tool call refused", attrs...)
	} else {
		s.cfg.Log.Info("tool call", attrs...)
	}
	return r
}

// Run serves the MCP protocol on in and out (newline-delimited JSON-RPC, as the stdio transport) until
// the client closes in or ctx ends.
func (s *Server) Run(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	return s.mcp.Run(ctx, &mcp.IOTransport{Reader: in, Writer: out})
}
