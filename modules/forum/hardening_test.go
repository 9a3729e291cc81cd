package forum_test

// Tests of the rules issue 10 added: private keys and blank text refused in posts, catch-up in commit
// order with sealed cursors, bounded search, and the pages' answer while the database is away.

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/site"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/testkit"
)

// A private key in any form, anywhere in a post, is refused with 422 private_key_refused naming the
// member; the problem never echoes it, nothing is stored and nothing is charged.
func TestPrivateKeyRefused(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		thread := w.thread(t, a, cat)
		before := w.state(t)
		calls := len(w.meter.Calls())

		seed := make([]byte, ed25519.SeedSize)
		for i := range seed {
			seed[i] = byte(200 - i)
		}
		priv := ed25519.NewKeyFromSeed(seed)
		pkcs8 := append([]byte{0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20}, seed...)
		secret := base64.StdEncoding.EncodeToString(pkcs8)
		forms := map[string]string{
			"PKCS#8 PEM": "Why does this fail?\n\n```\n-----BEGIN PRIVATE KEY-----\n" + secret + "\n-----END PRIVATE KEY-----\n```",
			"OpenSSH":    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ==\n-----END OPENSSH PRIVATE KEY-----",
			"JWK with d": `My key: {"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)) +
				`","d":"` + base64.RawURLEncoding.EncodeToString(seed) + `"}`,
			"labelled seed":     "ed25519 seed: " + base64.StdEncoding.EncodeToString(seed),
			"labelled hex seed": "private_key=" + hex.EncodeToString(seed),
		}
		type attempt struct {
			path, pointer string
			body          map[string]any
		}
		var attempts []attempt
		for name, text := range forms {
			attempts = append(attempts,
				attempt{forum.ThreadsPath, "/body_markdown", threadBody(cat, set("body_markdown", text))},
				attempt{forum.RepliesPath, "/body_markdown", replyBody(thread, "", set("body_markdown", text))},
				attempt{forum.ThreadsPath, "/recipe/description", threadBody(cat, withRecipe(recipe(), set("description", text)))})
			if !strings.Contains(text, "\n") {
				attempts = append(attempts, attempt{forum.ThreadsPath, "/title", threadBody(cat, set("title", "key "+name+" "+text[:min(len(text), 150)]))})
			}
		}
		for _, at := range attempts {
			r := w.post(t, a, at.path, at.body)
			if r.Status == http.StatusUnprocessableEntity && r.Code == "validation_failed" {
				continue // the title's own bounds refused it first
			}
			expectAt(t, r, http.StatusUnprocessableEntity, "private_key_refused", at.pointer)
			if strings.Contains(string(r.Body), secret[:20]) || strings.Contains(string(r.Body), base64.StdEncoding.EncodeToString(seed)[:20]) {
				t.Fatalf("the problem echoes the key: %s", r.Body)
			}
		}
		w.unchanged(t, before)
		if n := len(w.meter.Calls()); n != calls {
			t.Fatalf("%d charges for refused posts", n-calls)
		}
		// Writing about keys, and quoting a public key or a signature, is fine.
		id := w.thread(t, a, cat, set("body_markdown", "Never paste a private key. My public key is "+
			base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))+"; a signature: "+base64.StdEncoding.EncodeToString(ed25519.Sign(priv, []byte("x")))))
		w.getThread(t, id)
	})
}

// declared_model is a whole value: a private key alone in it, the bare seed and public key (64 bytes in
// base64 or hex) included, is refused as such at /declared_model, on a thread as on a reply, and
// nothing is stored or charged. (In free text such a value may be a quoted signature; here it is not.)
func TestDeclaredModelBareKeyRefused(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		thread := w.thread(t, a, cat)
		before := w.state(t)
		calls := len(w.meter.Calls())
		seed := make([]byte, ed25519.SeedSize)
		for i := range seed {
			seed[i] = byte(90 + i)
		}
		priv := ed25519.NewKeyFromSeed(seed)
		for _, key := range []string{base64.StdEncoding.EncodeToString(priv), hex.EncodeToString(priv)} {
			for path, body := range map[string]map[string]any{
				forum.ThreadsPath: threadBody(cat, set("declared_model", key)),
				forum.RepliesPath: replyBody(thread, "", set("declared_model", key)),
			} {
				r := w.post(t, a, path, body)
				expectAt(t, r, http.StatusUnprocessableEntity, "private_key_refused", "/declared_model")
				if strings.Contains(string(r.Body), key[:20]) {
					t.Fatalf("the problem echoes the key: %s", r.Body)
				}
			}
		}
		w.unchanged(t, before)
		if n := len(w.meter.Calls()); n != calls {
			t.Fatalf("%d charges for refused posts", n-calls)
		}
	})
}

// A title or body that is only spaces or invisible characters is a content policy violation.
func TestBlankTextRefused(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		thread := w.thread(t, a, cat)
		before := w.state(t)
		for _, blank := range []string{"   ", "\u200b\u200b", "\u3164", "\u2800", "\ufeff \u00a0", "\u034f"} {
			expectAt(t, w.post(t, a, forum.ThreadsPath, threadBody(cat, set("title", blank))), http.StatusBadRequest, "content_policy_violation", "/title")
			expectAt(t, w.post(t, a, forum.ThreadsPath, threadBody(cat, set("body_markdown", blank+"\n\n"+blank))), http.StatusBadRequest, "content_policy_violation", "/body_markdown")
			expectAt(t, w.post(t, a, forum.RepliesPath, replyBody(thread, "", set("body_markdown", blank))), http.StatusBadRequest, "content_policy_violation", "/body_markdown")
		}
		w.unchanged(t, before)
	})
}

// catchUp posts a catch-up request as a and decodes the answer.
func (w *world) catchUp(t testing.TB, a agent, body map[string]any) forum.CatchUpResponse {
	t.Helper()
	r := w.post(t, a, forum.CatchUpPath, body)
	testkit.Expect(t, r, http.StatusOK, "")
	testkit.Valid(t, "catch-up-response", r.Body)
	var out forum.CatchUpResponse
	r.Decode(t, &out)
	return out
}

// ids are the posts of a catch-up page, in order.
func ids(p forum.CatchUpResponse) []string {
	var out []string
	for _, it := range append(p.Activity, p.RelatedReplies...) {
		if it.ReplyID != nil {
			out = append(out, *it.ReplyID)
		} else {
			out = append(out, it.ThreadID)
		}
	}
	return out
}

// A post whose transaction commits after a catch-up page was read is still returned on a later page of
// the same catch-up, even though its id sorts before posts that page could have returned: catch-up
// never passes a transaction still running. (PostgreSQL only: SQLite serialises writers, so a post
// cannot commit while another write waits.)
func TestCatchUpNeverSkipsALateCommit(t *testing.T) {
	w := newWorld(t, database.Postgres)
	cat := w.category(t, "cooking")
	author, reader := newAgent("author"), newAgent("reader")
	first := w.thread(t, author, cat)

	// A write takes its id and holds its transaction open, as a slow write does.
	late := newID()
	tx := w.db.Begin()
	t.Cleanup(func() { tx.Rollback() })
	now := w.clock.Now()
	if err := tx.Exec(`INSERT INTO forum_threads (id, category_id, author_id, author_handle, title, body_markdown, intent, score, up, down, reply_count, created_at, last_activity)
VALUES (?, ?, ?, 'author', 'Committed late', 'Slow.', 'discussion', 0, 0, 0, 0, ?, ?)`, late, cat, author.ID, now, now).Error; err != nil {
		t.Fatal(err)
	}
	// Posts whose ids sort after it commit meanwhile.
	second := w.thread(t, author, cat)
	third := w.thread(t, author, cat)
	if !(late < second && second < third) {
		t.Fatalf("ids out of order: %s %s %s", late, second, third)
	}

	var seen []string
	page := w.catchUp(t, reader, map[string]any{"limit": 1})
	seen = append(seen, ids(page)...)
	for i := 0; page.NextCursor != nil; i++ {
		if i == 1 {
			if err := tx.Commit().Error; err != nil { // while the reader pages
				t.Fatal(err)
			}
		}
		if i > 10 {
			t.Fatal("catch-up does not end")
		}
		page = w.catchUp(t, reader, map[string]any{"limit": 1, "cursor": *page.NextCursor})
		seen = append(seen, ids(page)...)
	}
	if strings.Join(seen, " ") != strings.Join([]string{first, late, second, third}, " ") {
		t.Fatalf("catch-up returned %v, want every post once in commit order: %v", seen, []string{first, late, second, third})
	}
}

// Catch-up cursors are sealed to the agent that got them: an edited one (a window widened past
// fourteen days), or another agent's, is 400 invalid_cursor.
func TestCatchUpCursorSealed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		author, reader, other := newAgent("author"), newAgent("reader"), newAgent("other")
		w.thread(t, author, cat)
		w.thread(t, author, cat)
		page := w.catchUp(t, reader, map[string]any{"limit": 1})
		if page.NextCursor == nil {
			t.Fatal("no next page")
		}
		payload, mac, _ := strings.Cut(*page.NextCursor, ".")
		raw, _ := base64.RawURLEncoding.DecodeString(payload)
		widened := strings.Replace(string(raw), `"f":`, `"f":1`, 1) // the window's start, far in the past
		for name, c := range map[string]string{
			"widened window":  base64.RawURLEncoding.EncodeToString([]byte(widened)) + "." + mac,
			"unsealed":        payload,
			"an unknown form": "not-a-cursor",
		} {
			testkit.Expect(t, w.post(t, reader, forum.CatchUpPath, map[string]any{"cursor": c}), http.StatusBadRequest, "invalid_cursor")
			_ = name
		}
		testkit.Expect(t, w.post(t, other, forum.CatchUpPath, map[string]any{"cursor": *page.NextCursor}), http.StatusBadRequest, "invalid_cursor")
		// The agent's own cursor goes on.
		w.catchUp(t, reader, map[string]any{"cursor": *page.NextCursor})
	})
}

// Search pages at most maxResults deep: the page holding the thousandth result is the last, and a
// cursor past it (which only the server could seal) is refused.
func TestSearchDepthBounded(t *testing.T) {
	w := newWorld(t, database.SQLite)
	cat := w.category(t, "cooking")
	a := newAgent("cook-one")
	for range 12 {
		w.thread(t, a, cat, set("body_markdown", "lentil stew"))
	}
	codec := cursors(t, w.clock)
	at := func(offset int) string {
		s, err := codec.Seal("forum:search:lentil", map[string]any{"c": offset})
		if err != nil {
			t.Fatal(err)
		}
		return url.QueryEscape(s)
	}
	// A page that would reach past the thousandth result stops there: 995 + 5.
	var res forum.SearchResult
	r := w.get(forum.SearchPath + "?q=lentil&limit=25&cursor=" + at(995))
	testkit.Expect(t, r, http.StatusOK, "")
	r.Decode(t, &res)
	if res.NextCursor != nil {
		t.Fatalf("a page ending at the thousandth result has a next_cursor")
	}
	testkit.Expect(t, w.get(forum.SearchPath+"?q=lentil&cursor="+at(1000)), http.StatusBadRequest, "invalid_cursor")
	// Within the bound, paging goes on as before.
	r = w.get(forum.SearchPath + "?q=lentil&limit=5")
	r.Decode(t, &res)
	if len(res.Results) != 5 || res.NextCursor == nil {
		t.Fatalf("first page: %d results, next %v", len(res.Results), res.NextCursor)
	}
}

// While the database cannot be reached, a page answers 503 with Retry-After, in words a person
// understands, not a 500; /forum/ leads to /forum.
func TestPagesDatabaseAway(t *testing.T) {
	// A PostgreSQL address where nothing listens: every query fails to connect.
	db, err := database.Open("postgres://svc:svc@127.0.0.1:1/svc?sslmode=disable&connect_timeout=1", database.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	gin.SetMode(gin.ReleaseMode)
	engine := gin.New()
	forum.NewPages(forum.NewReads(plugin.ReadDB{DB: db}, cursors(t, testkit.NewClock(time.Now())), nil), site.New(forum.Nav())).Routes().Mount(engine)
	srv := httptest.NewServer(engine)
	t.Cleanup(srv.Close)
	for _, path := range []string{"/forum", "/forum/c/kitchen", "/forum/t/" + newID(), "/forum/search?q=lentil"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || res.Header.Get("Content-Type") != site.MediaType {
			t.Errorf("GET %s with the database away: %d, Retry-After %q, %s", path, res.StatusCode, res.Header.Get("Retry-After"), res.Header.Get("Content-Type"))
		}
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Get(srv.URL + "/forum/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/forum" {
		t.Fatalf("GET /forum/: %d, Location %q", res.StatusCode, res.Header.Get("Location"))
	}
}
