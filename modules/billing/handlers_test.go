package billing_test

// Tests of the module's endpoints: GET /api/v1/pricing on the public read plane, and GET
// /agent-api/v1/wallet and /agent-api/v1/usage behind a stand-in principal.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/billing"
	"github.com/svcforum/svc/testkit"
)

// valid fails unless body matches the named published schema.
func valid(t testing.TB, name string, body []byte) {
	t.Helper()
	if err := schema.Published().Validate(name, body); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, body)
	}
}

// pricingBody decodes GET /api/v1/pricing.
func pricingBody(t testing.TB, r testkit.Result) billing.PricingResponse {
	t.Helper()
	var resp billing.PricingResponse
	if err := json.Unmarshal(r.Body, &resp); err != nil {
		t.Fatalf("body %q: %v", r.Body, err)
	}
	return resp
}

// TestPricingEndpointBeforePublication: 200 with current_pricing_version null, every operation, and no
// versions.
func TestPricingEndpointBeforePublication(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		r := w.get(billing.PricingPath, nil)
		testkit.Expect(t, r, 200, "")
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("Content-Type %q", ct)
		}
		m := r.JSON(t)
		if v, ok := m["current_pricing_version"]; !ok || v != nil {
			t.Fatalf("current_pricing_version %#v (present %v)", v, ok)
		}
		if vs, ok := m["versions"].([]any); !ok || len(vs) != 0 {
			t.Fatalf("versions %#v", m["versions"])
		}
		ops, _ := m["operations"].([]any)
		if len(ops) != len(port.Operations) {
			t.Fatalf("operations %#v", m["operations"])
		}
		valid(t, "pricing-response", r.Body)
	})
}

// TestPricingEndpointListsCurrentAndInGrace: after publications the current version comes first, then
// those in their grace period; a version past its grace is gone.
func TestPricingEndpointListsCurrentAndInGrace(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		w.publish(t, pricingFile("v1", 1, 0, nil))
		w.clock.Add(time.Hour)
		w.publish(t, pricingFile("v2", 30, 2, map[string]int64{port.OpVote: 4}))
		w.clock.Add(time.Hour)
		w.publish(t, []byte(wireExample))

		r := w.get(billing.PricingPath, nil)
		testkit.Expect(t, r, 200, "")
		valid(t, "pricing-response", r.Body)
		resp := pricingBody(t, r)
		if resp.CurrentPricingVersion == nil || *resp.CurrentPricingVersion != wire ||
			!slices.Equal(codes(resp.Versions), []string{wire, "v2", "v1"}) {
			t.Fatalf("pricing %s", r.Body)
		}
		if !resp.Versions[0].Current || resp.Versions[1].Current || resp.Versions[1].Prices[port.OpVote] != 4 ||
			resp.Versions[1].PerAttachment != 2 || resp.Versions[1].AcceptedUntil == nil {
			t.Fatalf("versions %+v", resp.Versions)
		}

		w.clock.Add(24 * time.Hour) // v1's grace ended 1 h ago
		resp = pricingBody(t, w.get(billing.PricingPath, nil))
		if !slices.Equal(codes(resp.Versions), []string{wire, "v2"}) {
			t.Fatalf("versions %v", codes(resp.Versions))
		}
	})
}

// TestPricingEndpointCaching: ETag and Cache-Control are set; If-None-Match with the ETag (alone, in a
// list, weak) is 304 without a body; a publication changes the ETag and the old one gets 200 again.
func TestPricingEndpointCaching(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		r := w.get(billing.PricingPath, nil)
		testkit.Expect(t, r, 200, "")
		etag := r.Header.Get("ETag")
		if etag == "" || !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) {
			t.Fatalf("ETag %q", etag)
		}
		if cc := r.Header.Get("Cache-Control"); cc == "" || strings.Contains(cc, "no-store") {
			t.Fatalf("Cache-Control %q", cc)
		}
		if again := w.get(billing.PricingPath, nil); again.Header.Get("ETag") != etag {
			t.Fatalf("the ETag of the same document changed: %q, %q", etag, again.Header.Get("ETag"))
		}
		for _, inm := range []string{etag, `"other", ` + etag, "W/" + etag} {
			nm := w.get(billing.PricingPath, map[string]string{"If-None-Match": inm})
			if nm.Status != http.StatusNotModified || len(nm.Body) != 0 || nm.Header.Get("ETag") != etag {
				t.Fatalf("If-None-Match %s: %d %q, ETag %q", inm, nm.Status, nm.Body, nm.Header.Get("ETag"))
			}
		}
		testkit.Expect(t, w.get(billing.PricingPath, map[string]string{"If-None-Match": `"other"`}), 200, "")

		w.publish(t, []byte(wireExample))
		r2 := w.get(billing.PricingPath, map[string]string{"If-None-Match": etag})
		testkit.Expect(t, r2, 200, "")
		etag2 := r2.Header.Get("ETag")
		if etag2 == "" || etag2 == etag {
			t.Fatalf("ETag after a publication: %q, before %q", etag2, etag)
		}
		if resp := pricingBody(t, r2); resp.CurrentPricingVersion == nil || *resp.CurrentPricingVersion != wire {
			t.Fatalf("pricing %s", r2.Body)
		}
		nm := w.get(billing.PricingPath, map[string]string{"If-None-Match": etag2})
		if nm.Status != http.StatusNotModified || len(nm.Body) != 0 {
			t.Fatalf("%d %q", nm.Status, nm.Body)
		}
		w.publish(t, pricingFile("next", 1, 0, nil))
		if r3 := w.get(billing.PricingPath, nil); r3.Header.Get("ETag") == etag2 {
			t.Fatal("a second publication kept the ETag")
		}
	})
}

// TestWalletEndpoint: the caller's organisation's balance; 0 and updated_at null without a wallet;
// another organisation's wallet is never shown.
func TestWalletEndpoint(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		w.publish(t, []byte(wireExample))
		rich := w.funded(t, 40)
		w.clock.Add(time.Minute)
		if _, err := w.write(context.Background(), rich, charge(port.OpCreateReply, wire, 5), false); err != nil {
			t.Fatal(err)
		}
		poor := w.funded(t, 0)

		r := w.agentGet(rich, billing.WalletPath)
		testkit.Expect(t, r, 200, "")
		valid(t, "wallet-response", r.Body)
		m := r.JSON(t)
		if m["org_id"] != rich.OrgID || m["balance"] != float64(35) || m["updated_at"] != t0.Add(time.Minute).Format(time.RFC3339) {
			t.Fatalf("wallet %s", r.Body)
		}
		// Another agent of the same organisation sees the same wallet.
		if m2 := w.agentGet(agentOf(rich.OrgID), billing.WalletPath).JSON(t); m2["balance"] != float64(35) {
			t.Fatalf("wallet %v", m2)
		}

		r = w.agentGet(poor, billing.WalletPath)
		testkit.Expect(t, r, 200, "")
		valid(t, "wallet-response", r.Body)
		m = r.JSON(t)
		if m["org_id"] != poor.OrgID || m["balance"] != float64(0) || m["updated_at"] != nil {
			t.Fatalf("wallet without a wallet row: %s", r.Body)
		}
		// A query naming another organisation is ignored.
		r = w.agentGet(poor, billing.WalletPath+"?org_id="+url.QueryEscape(rich.OrgID))
		if m = r.JSON(t); m["org_id"] != poor.OrgID || m["balance"] != float64(0) {
			t.Fatalf("wallet ?org_id=: %s", r.Body)
		}
	})
}

// usagePage decodes a usage page and checks it against the published schema.
func usagePage(t testing.TB, r testkit.Result) billing.UsageResponse {
	t.Helper()
	testkit.Expect(t, r, 200, "")
	valid(t, "usage-response", r.Body)
	var resp billing.UsageResponse
	if err := json.Unmarshal(r.Body, &resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

func eventIDs(evs []billing.UsageEventView) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// TestUsageEndpointOwnEventsNewestFirst: an agent reads only its own events (another agent of the same
// organisation has its own), newest first, with every field.
func TestUsageEndpointOwnEventsNewestFirst(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		w.publish(t, []byte(wireExample))
		a := w.funded(t, 100)
		b := agentOf(a.OrgID)
		other := w.funded(t, 100)
		ctx := context.Background()
		var mine, theirs []string
		var last port.Charge
		for i := range 5 {
			w.clock.Add(time.Second)
			last = charge(port.Operations[i%3], wire, 10)
			rc, err := w.write(ctx, a, last, false)
			if err != nil {
				t.Fatal(err)
			}
			mine = append(mine, rc.UsageEventID)
			if rc, err = w.write(ctx, b, charge(port.OpVote, wire, 10), false); err != nil {
				t.Fatal(err)
			}
			theirs = append(theirs, rc.UsageEventID)
			if _, err = w.write(ctx, other, charge(port.OpVote, wire, 10), false); err != nil {
				t.Fatal(err)
			}
		}
		slices.Reverse(mine)
		slices.Reverse(theirs)

		resp := usagePage(t, w.agentGet(a, billing.UsagePath))
		if !slices.Equal(eventIDs(resp.Events), mine) || resp.NextCursor != nil {
			t.Fatalf("a's usage %v, want %v; next %v", eventIDs(resp.Events), mine, resp.NextCursor)
		}
		ev := resp.Events[0]
		if ev.AgentID != a.AgentID || ev.Operation != last.Operation || ev.Price != wirePrices[last.Operation] ||
			ev.PricingVersion != wire || ev.IdempotencyKey != last.IdempotencyKey || ev.ResourceID != last.ResourceID ||
			!ev.CreatedAt.Equal(t0.Add(5*time.Second)) {
			t.Fatalf("newest event %+v, charge %+v", ev, last)
		}
		resp = usagePage(t, w.agentGet(b, billing.UsagePath))
		if !slices.Equal(eventIDs(resp.Events), theirs) {
			t.Fatalf("b's usage %v, want %v", eventIDs(resp.Events), theirs)
		}
		for _, e := range resp.Events {
			if e.AgentID != b.AgentID {
				t.Fatalf("b reads %+v", e)
			}
		}

		// No events: an empty list and a null cursor.
		r := w.agentGet(agentOf(a.OrgID), billing.UsagePath)
		m := r.JSON(t)
		if evs, ok := m["events"].([]any); !ok || len(evs) != 0 || m["next_cursor"] != nil {
			t.Fatalf("no usage: %s", r.Body)
		}
		valid(t, "usage-response", r.Body)
	})
}

// TestUsageEndpointPagingWhileInserting: limit=2 walks every event exactly once while new events are
// inserted between pages; the new ones (newer) never appear in later pages. Default and maximum limits.
func TestUsageEndpointPagingWhileInserting(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		w.publish(t, []byte(wireExample))
		a := w.funded(t, 1000)
		ctx := context.Background()
		var original []string
		for range 7 {
			w.clock.Add(time.Second)
			rc, err := w.write(ctx, a, charge(port.OpVote, wire, 1), false)
			if err != nil {
				t.Fatal(err)
			}
			original = append(original, rc.UsageEventID)
		}
		slices.Reverse(original)
		added := map[string]bool{}
		var walked []string
		target := billing.UsagePath + "?limit=2"
		pages := 0
		for {
			r := w.agentGet(a, target)
			resp := usagePage(t, r)
			pages++
			if len(resp.Events) > 2 {
				t.Fatalf("page of %d", len(resp.Events))
			}
			walked = append(walked, eventIDs(resp.Events)...)
			// A new event between pages.
			rc, err := w.write(ctx, a, charge(port.OpVote, wire, 1), false)
			if err != nil {
				t.Fatal(err)
			}
			added[rc.UsageEventID] = true
			// The page links to the next one (Link: <...>; rel="next"), the walk follows the link.
			link := r.Header.Values("Link")
			if resp.NextCursor == nil {
				if len(link) != 0 {
					t.Fatalf("the last page links on: %q", link)
				}
				break
			}
			if len(*resp.NextCursor) > 2048 {
				t.Fatalf("cursor of %d characters", len(*resp.NextCursor))
			}
			target = billing.UsagePath + "?cursor=" + url.QueryEscape(*resp.NextCursor) + "&limit=2"
			if want := "<" + plugin.AgentPrefix + target + `>; rel="next"`; len(link) != 1 || link[0] != want {
				t.Fatalf("Link %q, want %q", link, want)
			}
			if pages > 10 {
				t.Fatal("paging does not end")
			}
		}
		if !slices.Equal(walked, original) {
			for _, id := range walked {
				if added[id] {
					t.Errorf("a newer event %s appeared in a later page", id)
				}
			}
			t.Fatalf("walked %v, want %v (each original event once, newest first)", walked, original)
		}
		if pages != 4 {
			t.Fatalf("%d pages for 7 events of 2", pages)
		}

		// An exact multiple of the limit: the last full page's cursor leads to an empty page, or it is
		// null; either way nothing is repeated.
		b := agentOf(a.OrgID)
		for range 4 {
			if _, err := w.write(ctx, b, charge(port.OpVote, wire, 1), false); err != nil {
				t.Fatal(err)
			}
		}
		var seen []string
		target = billing.UsagePath + "?limit=2"
		for range 5 {
			resp := usagePage(t, w.agentGet(b, target))
			seen = append(seen, eventIDs(resp.Events)...)
			if resp.NextCursor == nil {
				break
			}
			target = billing.UsagePath + "?limit=2&cursor=" + url.QueryEscape(*resp.NextCursor)
		}
		if len(seen) != 4 || len(slices.Compact(slices.Clone(seen))) != 4 {
			t.Fatalf("b walked %v", seen)
		}

		// Default limit 25, maximum 100.
		for range 120 {
			if _, err := w.write(ctx, b, charge(port.OpClearVote, wire, 0), false); err != nil {
				t.Fatal(err)
			}
		}
		if resp := usagePage(t, w.agentGet(b, billing.UsagePath)); len(resp.Events) != 25 || resp.NextCursor == nil {
			t.Fatalf("default page of %d", len(resp.Events))
		}
		if resp := usagePage(t, w.agentGet(b, billing.UsagePath+"?limit=100")); len(resp.Events) != 100 || resp.NextCursor == nil {
			t.Fatalf("page of %d", len(resp.Events))
		}
		if resp := usagePage(t, w.agentGet(b, billing.UsagePath+"?limit=1")); len(resp.Events) != 1 {
			t.Fatalf("page of %d", len(resp.Events))
		}
	})
}

// TestUsageEndpointBadLimit: a limit outside 1..100, not a plain decimal integer, or given twice, is
// 400 bad_request.
func TestUsageEndpointBadLimit(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.funded(t, 0)
		for _, q := range []string{"limit=0", "limit=101", "limit=abc", "limit=1.5", "limit=2&limit=3", "limit=2&limit=2",
			"limit=", "limit=-1", "limit=+5", "limit=05", "limit=%205", "limit=1e1", "limit=99999999999999999999"} {
			r := w.agentGet(a, billing.UsagePath+"?"+q)
			testkit.Expect(t, r, 400, "bad_request")
		}
	})
}

// TestUsageEndpointInvalidCursor: a cursor the service did not seal for this agent's usage is 400
// invalid_cursor: a random string, bad base64, base64 of garbage, an edited or unsealed one, an empty
// one, two of them, one of 2049 characters, and another agent's.
func TestUsageEndpointInvalidCursor(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		w.publish(t, []byte(wireExample))
		a := w.funded(t, 10)
		for range 3 {
			if _, err := w.write(context.Background(), a, charge(port.OpVote, wire, 1), false); err != nil {
				t.Fatal(err)
			}
		}
		issued := usagePage(t, w.agentGet(a, billing.UsagePath+"?limit=1")).NextCursor
		if issued == nil {
			t.Fatal("no cursor")
		}
		payload, mac, ok := strings.Cut(*issued, ".")
		if !ok {
			t.Fatalf("the issued cursor %q is not sealed", *issued)
		}
		raw, err := base64.RawURLEncoding.DecodeString(payload)
		if err != nil {
			t.Fatalf("the issued cursor %q: %v", *issued, err)
		}
		b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
		long := strings.Repeat("A", 2049)
		cases := map[string]string{
			"random string":     "hello-world",
			"bad base64":        "!!!***",
			"base64 of garbage": b64("\x00\x01garbage\xff"),
			"unsealed":          payload,
			"uppercase id":      b64(strings.ToUpper(string(raw))) + "." + mac,
			"edited id":         b64(strings.Replace(string(raw), `"i":"0`, `"i":"1`, 1)) + "." + mac,
			"padding appended":  *issued + "==",
			"trailing byte":     *issued + "A",
			"empty":             "",
			"2049 characters":   long,
		}
		for name, c := range cases {
			r := w.agentGet(a, billing.UsagePath+"?cursor="+url.QueryEscape(c))
			if r.Status != 400 || r.Code != "invalid_cursor" {
				t.Errorf("%s (%q): %d %q %s", name, c, r.Status, r.Code, r.Body)
			}
		}
		r := w.agentGet(a, billing.UsagePath+"?cursor="+url.QueryEscape(*issued)+"&cursor="+url.QueryEscape(*issued))
		testkit.Expect(t, r, 400, "invalid_cursor")
		// Another agent's cursor does not open this agent's list.
		other := w.funded(t, 10)
		testkit.Expect(t, w.agentGet(other, billing.UsagePath+"?cursor="+url.QueryEscape(*issued)), 400, "invalid_cursor")
		// The issued one works.
		if resp := usagePage(t, w.agentGet(a, billing.UsagePath+"?cursor="+url.QueryEscape(*issued))); len(resp.Events) != 2 {
			t.Fatalf("after the cursor: %d events", len(resp.Events))
		}
	})
}
