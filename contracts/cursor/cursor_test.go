package cursor_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/cursor"
)

type position struct {
	ID    string `json:"i"`
	Score int64  `json:"c"`
}

var (
	keyA = bytes.Repeat([]byte{0xa1}, 32)
	keyB = bytes.Repeat([]byte{0xb2}, 32)
	t0   = time.Unix(1767225600, 0)
)

func codec(t *testing.T, now *time.Time, keys ...[]byte) *cursor.Codec {
	t.Helper()
	c, err := cursor.New(keys, func() time.Time { return *now })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSealOpen(t *testing.T) {
	now := t0
	c := codec(t, &now, keyA)
	s, err := c.Seal("threads:newest", position{ID: "x", Score: 7})
	if err != nil {
		t.Fatal(err)
	}
	var got position
	if err := c.Open(s, "threads:newest", &got); err != nil || got != (position{ID: "x", Score: 7}) {
		t.Fatalf("Open: %+v, %v", got, err)
	}
	refuse := func(name, s, list string) {
		t.Helper()
		var p position
		if err := c.Open(s, list, &p); !errors.Is(err, cursor.ErrInvalid) {
			t.Errorf("%s: Open = %v, want ErrInvalid", name, err)
		}
	}
	refuse("another list", s, "threads:top")
	payload, mac, _ := strings.Cut(s, ".")
	// An edited position, sealed by nobody: the forgery the MAC is for.
	raw, _ := base64.RawURLEncoding.DecodeString(payload)
	forged := base64.RawURLEncoding.EncodeToString(bytes.Replace(raw, []byte(`"c":7`), []byte(`"c":9`), 1))
	refuse("edited position", forged+"."+mac, "threads:newest")
	refuse("no MAC", payload, "threads:newest")
	refuse("padded", payload+"=."+mac, "threads:newest")
	refuse("empty", "", "threads:newest")
	refuse("too long", strings.Repeat("a", cursor.MaxLength+1), "threads:newest")
	refuse("truncated MAC", payload+"."+mac[:len(mac)-2], "threads:newest")
	// Another key's cursor.
	other := codec(t, &now, keyB)
	s2, _ := other.Seal("threads:newest", position{ID: "x"})
	refuse("another key", s2, "threads:newest")
	// Expired: good for MaxAge after the end of the hour it was sealed in, not a second more.
	now = t0.Add(cursor.MaxAge + cursor.IssueStep)
	if err := c.Open(s, "threads:newest", &got); err != nil {
		t.Fatalf("Open at the end of its day: %v", err)
	}
	now = now.Add(time.Second)
	refuse("expired", s, "threads:newest")
}

// TestSealIsStableWithinItsStep: the same position sealed again later in the same hour is the same
// cursor (a page built again keeps its bytes and ETag); in the next hour it is a new one, and a cursor
// sealed at the step's last second is still good a full MaxAge later.
func TestSealIsStableWithinItsStep(t *testing.T) {
	now := t0.Add(5 * time.Minute)
	c := codec(t, &now, keyA)
	first, _ := c.Seal("threads:newest", position{ID: "x"})
	now = t0.Add(cursor.IssueStep - time.Second)
	late, _ := c.Seal("threads:newest", position{ID: "x"})
	if late != first {
		t.Fatalf("sealed twice in one hour: %q, then %q", first, late)
	}
	now = t0.Add(cursor.IssueStep)
	if next, _ := c.Seal("threads:newest", position{ID: "x"}); next == first {
		t.Fatal("the next hour's cursor is the last hour's")
	}
	now = t0.Add(cursor.IssueStep - time.Second + cursor.MaxAge)
	var p position
	if err := c.Open(late, "threads:newest", &p); err != nil {
		t.Fatalf("a cursor sealed at the hour's last second, a day later: %v", err)
	}
}

// After a rotation (new key first, old key second) the cursors sealed under the old key still open,
// and new ones are sealed under the new key.
func TestRotation(t *testing.T) {
	now := t0
	old := codec(t, &now, keyA)
	s, _ := old.Seal("replies", position{ID: "r"})
	rotated := codec(t, &now, keyB, keyA)
	var p position
	if err := rotated.Open(s, "replies", &p); err != nil || p.ID != "r" {
		t.Fatalf("old cursor after rotation: %+v, %v", p, err)
	}
	fresh, _ := rotated.Seal("replies", position{ID: "n"})
	if err := codec(t, &now, keyB).Open(fresh, "replies", &p); err != nil {
		t.Fatalf("new cursor under the new key alone: %v", err)
	}
	if err := old.Open(fresh, "replies", &p); !errors.Is(err, cursor.ErrInvalid) {
		t.Fatalf("new cursor opened by the old key: %v", err)
	}
}

func TestKeys(t *testing.T) {
	keys, err := cursor.ParseKeys(base64.StdEncoding.EncodeToString(keyA) + ", " + base64.RawURLEncoding.EncodeToString(keyB))
	if err != nil || len(keys) != 2 || !bytes.Equal(keys[0], keyA) || !bytes.Equal(keys[1], keyB) {
		t.Fatalf("ParseKeys: %v, %v", keys, err)
	}
	if _, err := cursor.ParseKeys("not base64!"); err == nil {
		t.Fatal("ParseKeys accepted junk")
	}
	if _, err := cursor.New([][]byte{[]byte("short")}, nil); err == nil {
		t.Fatal("New accepted a 5-byte key")
	}
	if _, err := cursor.New(nil, nil); err == nil {
		t.Fatal("New accepted no key")
	}
}

func FuzzOpen(f *testing.F) {
	now := t0
	c, _ := cursor.New([][]byte{keyA}, func() time.Time { return now })
	s, _ := c.Seal("l", position{ID: "x"})
	f.Add(s)
	f.Add("")
	f.Add("a.b")
	f.Fuzz(func(t *testing.T, in string) {
		var p position
		if err := c.Open(in, "l", &p); err == nil && in != s {
			// Only a cursor sealed under the key opens; the fuzzer cannot forge a MAC.
			if again, _ := c.Seal("l", p); again != in {
				t.Fatalf("opened a cursor the codec did not seal: %q", in)
			}
		}
	})
}
