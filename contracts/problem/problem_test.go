package problem_test

import (
	"encoding/json"
	"testing"

	"github.com/svcforum/svc/contracts/problem"
)

func TestMarshalKeepsStandardMembersOverExtensions(t *testing.T) {
	p := problem.New(problem.PriceExceedsCap, "cap 3, price 12").With("effective_price", 12).With("status", 200)
	p.RequestID = "r1"
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"type": "urn:svc:problem:price_exceeds_cap", "title": "Effective price exceeds max_credit_cost",
		"status": 409.0, "code": "price_exceeds_cap", "detail": "cap 3, price 12", "request_id": "r1",
		"effective_price": 12.0,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

func TestUnknownCodeIsInternal(t *testing.T) {
	if p := problem.New("no_such_code", ""); p.Status != 500 {
		t.Fatalf("status %d", p.Status)
	}
}
