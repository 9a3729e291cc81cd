package forum_test

// The forum at a million posts (issue 17): catch-up and search on PostgreSQL with 50,000 threads and
// 950,000 replies. The database is seeded once per test process, by set-based SQL, and only when the
// benchmark runs: `go test` without -bench never builds it.

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/testkit"
)

// The shape of the seeded forum.
const (
	scaleThreads    = 50_000
	scaleReplies    = 950_000
	scaleAuthors    = 400    // their activity is skewed: the first has 5% of the posts
	scaleCategories = 8      // skewed too
	scaleSentences  = 40_000 // posts are made of sentences drawn from this pool
	scaleVocabulary = 20_000 // words of the sentences, drawn with Zipf's law (P(rank r) ~ 1/r)
	scaleDays       = 180    // the posts span six months before scaleNow
	scaleXIDs       = 500_000
	// Authors whose number is 7 modulo 40 stopped writing sixty days ago.
	scaleLapsedEvery, scaleLapsedAt = 40, 7
)

// scaleNow is the clock of the seeded forum: the last post is just before it.
var scaleNow = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// scaleWords are the first ranks of the vocabulary, most frequent first: English words of a forum
// about cooking and software. The ranks after them are made-up words (scale_vocab), so that search
// finds words of every frequency: the word of rank 15 is in about a sixth of the posts, the word of
// rank 12,000 in tens to hundreds (which sentences of the pool hold it is left to chance).
var scaleWords = strings.Fields(`the and to a of i it in is you that for with this garlic on but be have not
are my or was so if at what can do as we about would your just they one from red like there more all will
when think how time get some use make good lentils also recipe minutes oven onion salt pepper butter water
heat pan rice flour sugar oil cook bread soup stew sauce cheese cumin lemon tomato bake roast boil simmer stir
chop slice fresh dried cup spoon bowl knife taste flavour spicy sweet sour bitter crispy tender dough yeast egg
milk cream chicken beef pork fish beans chickpeas carrot potato pasta noodles ginger chili paprika thyme basil
parsley coriander vinegar honey mustard model agent prompt token test code error build deploy server request
response data memory context tool task plan run result question answer thanks agree example problem idea
because which then than only other into over after before first last new old well really still even much many
any most these those here where why who should could might try tried works work need want know see look find
found help thing way day week year night morning evening dinner lunch breakfast kitchen market season winter
summer spring autumn cold warm hot slow fast quick easy hard long short small large big little half whole
enough again never always often sometimes usually once twice three four five ten hundred grams litres degrees
hour hours second seconds batch pot lid tray rack grill smoke char caramel brown golden soft firm thick thin
smooth rough salty sharp mild rich light heavy dark clean dry wet raw cooked leftover frozen thawed stock broth
bones skin fat lean cut piece pieces layer layers mix mixed blend whisk fold knead rest proof shape score
glaze brush drizzle sprinkle season seasoned toast toasted grind ground crush crushed peel peeled grate
grated zest juice squeeze measure weigh scale double halve serve served plate portion guests family friends
recipes cookbook notes version update release patch bug fix fixed issue issues review merge branch commit
log logs trace metric latency cache query index table row column schema migration database backup restore`)

// The queries the benchmark searches for: a word in about a sixth of the posts, two words found
// together in about one post in two hundred, a word of the vocabulary's long tail (found in setup: rank
// scaleRareRank), and a word in about one post in a hundred, which is the costliest to search (README).
const (
	scaleCommon   = "garlic"
	scalePhrase   = "red lentils"
	scaleMiddling = "kitchen"
	scaleRareRank = 12_000
)

// scaleWorld is the seeded forum and the engine that serves it.
type scaleWorld struct {
	db     *gorm.DB
	engine *gin.Engine
	recent agent // wrote an hour ago
	lapsed agent // last wrote about two months ago
	rare   string
}

// scale is the one seeded forum of this process; the benchmark that builds it drops it when it ends.
var scale struct {
	sync.Mutex
	w *scaleWorld
}

// BenchmarkForumAtScale measures catch-up (POST /agent-api/v1/activity/catch-up, the first page of 25,
// for an agent that wrote an hour ago, and for one that last wrote two months ago, who also gets the
// replies to its posts since then) and search (GET /api/v1/search, the first page of 25, for a common
// word, a rare word, two words, and a word of middling frequency) through the real handlers, without
// the read cache (which would answer a repeated search from memory), on PostgreSQL holding a million
// posts. ms/op is the latency of one request.
//
// impl=svc is the request served in process (routing, handler, queries, JSON). impl=baseline reads the
// same page, every column of the rows of the posts the answer holds, by primary key: what the answer
// would cost if finding its rows cost nothing. The ratio svc/baseline is what finding the page costs
// (plus the answer's JSON), relative to reading it. Both read warm data: the seeding reads every row,
// and the database (about 1 GB) stays in the page cache of the machine (the test container's
// shared_buffers are PostgreSQL's default 128 MB), so both measure the plan rather than the disk.
//
// The seeding (two to four minutes on two busy cores, most of it PostgreSQL computing the search
// vectors and building the full-text indexes) happens once per test process, here, never under `go
// test` without -bench: 8 categories; 50,000 threads and 950,000 replies over six months, replies
// spread unevenly over threads and most of them soon after their thread; 400 authors of skewed
// activity; bodies of sentences whose words follow Zipf's law; about 1% tombstoned and 0.2% hidden;
// rows stored in the order they were written; commit orders (txid, about two posts a transaction id)
// following creation times, give or take ten seconds.
func BenchmarkForumAtScale(b *testing.B) {
	w := scaleWorldFor(b)
	b.Run("catch-up/agent=recent", func(b *testing.B) { benchCatchUp(b, w, w.recent) })
	b.Run("catch-up/agent=lapsed", func(b *testing.B) { benchCatchUp(b, w, w.lapsed) })
	b.Run("search/q=common", func(b *testing.B) { benchSearch(b, w, scaleCommon) })
	b.Run("search/q=rare", func(b *testing.B) { benchSearch(b, w, w.rare) })
	b.Run("search/q=phrase", func(b *testing.B) { benchSearch(b, w, scalePhrase) })
	b.Run("search/q=middling", func(b *testing.B) { benchSearch(b, w, scaleMiddling) })
}

// benchCatchUp measures the first page of a's catch-up, against reading its posts by key.
func benchCatchUp(b *testing.B, w *scaleWorld, a agent) {
	serve := func() testkit.Result {
		return testkit.Serve(w.engine, request(a, forum.CatchUpPath, []byte(`{}`)))
	}
	r := serve()
	testkit.Expect(b, r, http.StatusOK, "")
	var page forum.CatchUpResponse
	r.Decode(b, &page)
	var threads, replies []string
	for _, it := range append(page.Activity, page.RelatedReplies...) {
		if it.ReplyID != nil {
			replies = append(replies, *it.ReplyID)
		} else {
			threads = append(threads, it.ThreadID)
		}
	}
	if len(threads)+len(replies) == 0 {
		b.Fatalf("catch-up of %s is empty", a.Handle)
	}
	b.Run("impl=baseline", func(b *testing.B) {
		for b.Loop() {
			scaleReadByKey(b, w.db, threads, replies)
		}
		scaleReport(b)
	})
	b.Run("impl=svc", func(b *testing.B) {
		for b.Loop() {
			if r := serve(); r.Status != http.StatusOK {
				b.Fatalf("catch-up: %d %s", r.Status, testkit.Short(r.Body))
			}
		}
		scaleReport(b)
	})
}

// benchSearch measures the first page of a search for q, against reading its posts by key.
func benchSearch(b *testing.B, w *scaleWorld, q string) {
	target := forum.SearchPath + "?q=" + url.QueryEscape(q)
	serve := func() testkit.Result {
		return testkit.Serve(w.engine, httptest.NewRequest(http.MethodGet, target, nil))
	}
	r := serve()
	testkit.Expect(b, r, http.StatusOK, "")
	var res forum.SearchResult
	r.Decode(b, &res)
	var threads, replies []string
	for _, h := range res.Results {
		if h.ReplyID != nil {
			replies = append(replies, *h.ReplyID)
		} else {
			threads = append(threads, h.ThreadID)
		}
	}
	if len(threads)+len(replies) == 0 {
		b.Fatalf("search %q finds nothing", q)
	}
	b.Run("impl=baseline", func(b *testing.B) {
		for b.Loop() {
			scaleReadByKey(b, w.db, threads, replies)
		}
		scaleReport(b)
	})
	b.Run("impl=svc", func(b *testing.B) {
		for b.Loop() {
			if r := serve(); r.Status != http.StatusOK {
				b.Fatalf("search: %d %s", r.Status, testkit.Short(r.Body))
			}
		}
		scaleReport(b)
	})
}

// scaleReadByKey reads every column of the threads and replies with these ids, by primary key.
func scaleReadByKey(b *testing.B, db *gorm.DB, threads, replies []string) {
	for table, ids := range map[string][]string{"forum_threads": threads, "forum_replies": replies} {
		if len(ids) == 0 {
			continue
		}
		rows, err := db.Raw("SELECT * FROM "+table+" WHERE id IN ?", ids).Rows()
		if err != nil {
			b.Fatal(err)
		}
		cols, err := rows.Columns()
		if err != nil {
			b.Fatal(err)
		}
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		n := 0
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				b.Fatal(err)
			}
			n++
		}
		if err := rows.Close(); err != nil {
			b.Fatal(err)
		}
		if n != len(ids) {
			b.Fatalf("%s: %d of %d rows", table, n, len(ids))
		}
	}
}

// scaleUUID7 is the SQL of a UUIDv7 of the time ts, as the service makes them: the time's
// milliseconds, then random bits (a SQL function would cost more than the rest of a row).
func scaleUUID7(ts string) string {
	h := "lpad(to_hex(floor(extract(epoch FROM " + ts + ") * 1000)::bigint), 12, '0')"
	return "substr(" + h + ", 1, 8) || '-' || substr(" + h + ", 9, 4) || '-7' || substr(gen_random_uuid()::text, 16)"
}

// scaleReport reports the latency of one operation in milliseconds.
func scaleReport(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
}

// scaleWorldFor returns the seeded forum, seeding it on the first call; it is dropped when b ends.
func scaleWorldFor(b *testing.B) *scaleWorld {
	b.Helper()
	scale.Lock()
	defer scale.Unlock()
	if scale.w != nil {
		return scale.w
	}
	start := time.Now()
	u := dbtest.URL(b, database.Postgres) // dropped when b ends
	// A minute for a statement rather than the service's five seconds: a slow plan is measured, not
	// turned into a 503.
	db, err := database.Open(u, database.Options{Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		scale.Lock()
		scale.w = nil
		scale.Unlock()
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	ctx := context.Background()
	if err := database.Migrate(ctx, db, []plugin.Migrations{forum.Migrations()}); err != nil {
		b.Fatal(err)
	}
	if err := db.AutoMigrate(&testkit.ChargeRow{}); err != nil {
		b.Fatal(err)
	}
	raw, err := sql.Open("pgx", u) // no statement timeout: seeding takes longer than a request may
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	w := &scaleWorld{db: db}
	if w.rare, err = scaleSeed(ctx, b, raw); err != nil {
		b.Fatalf("seed: %v", err)
	}
	if w.recent, w.lapsed, err = scaleReaders(ctx, raw); err != nil {
		b.Fatalf("pick readers: %v", err)
	}
	clock := testkit.NewClock(scaleNow)
	writes := forum.NewWrites(db, clock, testkit.NewMeter(1), schema.Published(), cursors(b, clock), nil)
	reads := forum.NewReads(plugin.ReadDB{DB: db}, cursors(b, clock), nil)
	w.engine = mount(b, writes, reads)
	var counts []string
	for _, q := range []string{scaleCommon, w.rare, scalePhrase, scaleMiddling} {
		var n int64
		if err := raw.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM forum_threads WHERE search @@ plainto_tsquery('english', $1))
  + (SELECT count(*) FROM forum_replies WHERE search @@ plainto_tsquery('english', $1))`, q).Scan(&n); err != nil {
			b.Fatal(err)
		}
		counts = append(counts, fmt.Sprintf("%q in %d posts", q, n))
	}
	b.Logf("seeded %d threads and %d replies in %s; %s", scaleThreads, scaleReplies, time.Since(start).Round(time.Second), strings.Join(counts, ", "))
	scale.w = w
	return w
}

// scaleReaders picks the agents who catch up: the author whose last post is the latest at least an
// hour old, and the lapsed author with the most posts.
func scaleReaders(ctx context.Context, db *sql.DB) (recent, lapsed agent, err error) {
	const last = `SELECT author_id, author_handle, max(created_at) AS last, count(*) AS n FROM (
  SELECT author_id, author_handle, created_at FROM forum_threads UNION ALL SELECT author_id, author_handle, created_at FROM forum_replies
) p GROUP BY author_id, author_handle`
	if err = db.QueryRowContext(ctx, `SELECT author_id, author_handle FROM (`+last+`) a WHERE last <= $1 ORDER BY last DESC LIMIT 1`,
		scaleNow.Add(-time.Hour)).Scan(&recent.ID, &recent.Handle); err != nil {
		return
	}
	err = db.QueryRowContext(ctx, `SELECT author_id, author_handle FROM (`+last+`) a WHERE last < $1 ORDER BY n DESC LIMIT 1`,
		scaleNow.Add(-59*24*time.Hour)).Scan(&lapsed.ID, &lapsed.Handle)
	recent.Org, lapsed.Org = newID(), newID()
	return
}

// scaleSeed fills the forum's tables and returns the rare word searched for. Indexes are dropped
// during the load and rebuilt from their own definitions after it (as pg_indexes gives them), which is
// much faster than keeping them up to date row by row; then the tables are vacuumed and analysed, as
// autovacuum would have done.
func scaleSeed(ctx context.Context, b testing.TB, db *sql.DB) (string, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	step := func(name, q string, args ...any) error {
		t := time.Now()
		if _, err := conn.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		b.Logf("seed %s: %s", name, time.Since(t).Round(time.Millisecond))
		return nil
	}
	if err := step("settings", `SET maintenance_work_mem = '512MB'; SET work_mem = '256MB'`); err != nil {
		return "", err
	}

	// The indexes, put back after the load.
	rows, err := conn.QueryContext(ctx, `SELECT indexname, indexdef FROM pg_indexes
WHERE schemaname = current_schema() AND tablename IN ('forum_threads', 'forum_replies')
  AND indexname NOT IN (SELECT conname FROM pg_constraint)`)
	if err != nil {
		return "", err
	}
	var names, defs []string
	for rows.Next() {
		var n, d string
		if err := rows.Scan(&n, &d); err != nil {
			return "", err
		}
		names, defs = append(names, n), append(defs, d)
	}
	if err := rows.Close(); err != nil {
		return "", err
	}
	for _, n := range names {
		if err := step("drop "+n, `DROP INDEX `+n); err != nil {
			return "", err
		}
	}

	// Commit orders: transaction ids really used (and committed) before the seeding ends, one
	// subtransaction each, so that every seeded post is below the catch-up horizon.
	var base uint64
	if err := conn.QueryRowContext(ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&base); err != nil {
		return "", err
	}
	if err := step("transaction ids", fmt.Sprintf(`CREATE UNLOGGED TABLE scale_burn (i int);
DO $$ BEGIN FOR i IN 1..%d LOOP BEGIN INSERT INTO scale_burn VALUES (i); EXCEPTION WHEN others THEN NULL; END; END LOOP; END $$;
DROP TABLE scale_burn`, scaleXIDs)); err != nil {
		return "", err
	}

	// A post's commit order: the transaction ids, in the order of creation times (give or take ten
	// seconds, as transactions overlap), spread over the six months.
	txid := func(ts string) string {
		return fmt.Sprintf(`(%d + greatest(0, least(%d, floor((extract(epoch FROM %s) + 20 * (random() - 0.5) - %d) / %d * %d)::bigint)))::text::xid8`,
			base+1, scaleXIDs-1, ts, scaleNow.AddDate(0, 0, -scaleDays).Unix(), scaleDays*86400, scaleXIDs)
	}
	syllables := `ARRAY['ba','ce','di','fo','gu','ka','le','mi','no','pu','ra','se','ti','vo','zu','la','ne','ri','so','tu']`
	steps := []struct {
		name string
		q    string
		args []any
	}{
		{"vocabulary table", `CREATE UNLOGGED TABLE scale_vocab (rank int PRIMARY KEY, word text NOT NULL)`, nil},
		{"vocabulary", `INSERT INTO scale_vocab SELECT ord, w FROM unnest($1::text[]) WITH ORDINALITY u(w, ord)`, []any{scaleWords}},
		{"made-up words", `INSERT INTO scale_vocab
SELECT r, s[1 + r % 20] || s[1 + r / 20 % 20] || s[1 + r / 400 % 20] || CASE WHEN r >= 8000 THEN s[1 + r / 8000 % 20] ELSE '' END
FROM generate_series($1::int, $2::int) r, (SELECT ` + syllables + ` AS s) syl`, []any{len(scaleWords) + 1, scaleVocabulary}},
		{"sentence table", `CREATE UNLOGGED TABLE scale_sentence (i int PRIMARY KEY, txt text NOT NULL)`, nil},
		{"sentences", `INSERT INTO scale_sentence
SELECT w.i, string_agg(v.word, ' ' ORDER BY w.j) || '.'
FROM (SELECT i, j, least($2, floor(exp(random() * ln($2 + 1)))::int) AS r
      FROM generate_series(1, $1::int) i, generate_series(1, 5 + i % 12) j) w
JOIN scale_vocab v ON v.rank = w.r
GROUP BY w.i`, []any{scaleSentences, scaleVocabulary}},
		{"categories", `INSERT INTO forum_categories (id, slug, name, description, state, thread_count, created_at, updated_at)
SELECT gen_random_uuid()::text, 'category-' || c, 'Category ' || c, 'Threads of category ' || c || '.', 'open', 0, $2::timestamptz - interval '200 days', $2::timestamptz - interval '200 days'
FROM generate_series(1, $1::int) c`, []any{scaleCategories, scaleNow}},
		{"authors", `CREATE UNLOGGED TABLE scale_author AS
SELECT a, gen_random_uuid()::text AS id, 'agent-' || lpad(a::text, 3, '0') AS handle FROM generate_series(1, $1::int) a`, []any{scaleAuthors}},
		// Threads: a time over six months; an author of skewed activity, the lapsed ones only before
		// their last sixty days; a category of skewed size.
		{"thread plan", `CREATE UNLOGGED TABLE scale_thread AS
SELECT n, ` + scaleUUID7("ts") + ` AS id, ts AS created_at, author, 1 + floor($2::int * power(random(), 1.5))::int AS category
FROM (SELECT n, ts, CASE WHEN a % $5 = $6 AND ts > $3::timestamptz - interval '60 days' THEN a + 1 ELSE a END AS author
      FROM (SELECT n, $3::timestamptz - random() * make_interval(days => $4::int) AS ts, 1 + floor($7::int * power(random(), 2))::int AS a
            FROM generate_series(1, $1::int) n) x) y`,
			[]any{scaleThreads, scaleCategories, scaleNow, scaleDays, scaleLapsedEvery, scaleLapsedAt, scaleAuthors - 1}},
		// Replies: a thread of skewed popularity, a time after it (most soon after), an author likewise;
		// three in ten answer one of the replies just before them in the thread.
		{"reply plan", `CREATE UNLOGGED TABLE scale_reply AS
SELECT *, row_number() OVER (ORDER BY created_at) - 1 AS k FROM (
SELECT n, thread_id, id, created_at, CASE WHEN a % $4 = $5 AND created_at > $2::timestamptz - interval '60 days' THEN a + 1 ELSE a END AS author,
       CASE WHEN n % 10 < 3 THEN lag(id, 1 + n % 3) OVER (PARTITION BY thread_id ORDER BY created_at) END AS parent_id
FROM (SELECT n, t.id AS thread_id, ` + scaleUUID7("c") + ` AS id, c AS created_at, 1 + floor($6::int * power(random(), 2))::int AS a
      FROM (SELECT r.n, t.id, t.created_at + ($2::timestamptz - t.created_at) * power(random(), 4) AS c
            FROM (SELECT n, 1 + floor($3::int * power(random(), 1.6))::int AS tn FROM generate_series(1, $1::int) n) r
            JOIN scale_thread t ON t.n = r.tn) t) x) y`,
			[]any{scaleReplies, scaleNow, scaleThreads, scaleLapsedEvery, scaleLapsedAt, scaleAuthors - 1}},
		{"reply plan index", `CREATE INDEX ON scale_reply (k)`, nil},
		{"threads", `INSERT INTO forum_threads (id, category_id, author_id, author_handle, title, body_markdown, intent,
  score, up, down, reply_count, tombstoned_at, hidden_at, created_at, last_activity, txid)
SELECT t.id, c.id, a.id, a.handle, left(rtrim(ti.txt, '.'), 200), b.body, 'discussion',
  u.up - u.down, u.up, u.down, coalesce(rs.n, 0),
  CASE WHEN u.f < 0.01 THEN t.created_at + interval '1 hour' END, CASE WHEN u.f > 0.998 THEN t.created_at + interval '2 hours' END,
  t.created_at, coalesce(rs.last, t.created_at), ` + txid("t.created_at") + `
FROM scale_thread t
JOIN scale_author a ON a.a = t.author
JOIN (SELECT id, row_number() OVER (ORDER BY slug) AS k FROM forum_categories) c ON c.k = t.category
JOIN scale_sentence ti ON ti.i = 1 + (t.n * 7919) % $1::int
LEFT JOIN (SELECT thread_id, count(*) AS n, max(created_at) AS last FROM scale_reply GROUP BY thread_id) rs ON rs.thread_id = t.id
CROSS JOIN LATERAL (SELECT floor(20 * power(random(), 3))::int AS up, floor(5 * power(random(), 4))::int AS down, random() AS f, t.n AS n) u
CROSS JOIN LATERAL (SELECT string_agg(s.txt, ' ' ORDER BY g.k) AS body
  FROM (SELECT k, 1 + floor(random() * $1::int)::int AS si FROM generate_series(1, 2 + u.n % 5) k) g JOIN scale_sentence s ON s.i = g.si) b
ORDER BY t.created_at`,
			[]any{scaleSentences}},
	}
	for _, s := range steps {
		if err := step(s.name, s.q, s.args...); err != nil {
			return "", err
		}
	}
	// Replies, in chunks of consecutive times, two at a time (one per core). Rows go in in the order
	// they were written, as a forum's do, so that the table's order follows time (and ids), but for
	// two chunks interleaving.
	replies := `INSERT INTO forum_replies (id, thread_id, parent_reply_id, author_id, author_handle, body_markdown, intent,
  score, up, down, tombstoned_at, hidden_at, created_at, txid)
SELECT r.id, r.thread_id, r.parent_id, a.id, a.handle, b.body, 'answer', u.up - u.down, u.up, u.down,
  CASE WHEN u.f < 0.01 THEN least(r.created_at + interval '1 hour', $4::timestamptz) END,
  CASE WHEN u.f > 0.998 THEN least(r.created_at + interval '2 hours', $4::timestamptz) END,
  r.created_at, ` + txid("r.created_at") + `
FROM scale_reply r
JOIN scale_author a ON a.a = r.author
CROSS JOIN LATERAL (SELECT floor(8 * power(random(), 3))::int AS up, floor(3 * power(random(), 4))::int AS down, random() AS f, r.n AS n) u
CROSS JOIN LATERAL (SELECT string_agg(s.txt, ' ' ORDER BY g.k) AS body
  FROM (SELECT k, 1 + floor(random() * $1::int)::int AS si FROM generate_series(1, 1 + u.n % 4) k) g JOIN scale_sentence s ON s.i = g.si) b
WHERE r.k >= $2 AND r.k < $3
ORDER BY r.created_at`
	const chunks = 20
	t := time.Now()
	var wg sync.WaitGroup
	chunk := make(chan int)
	errs := make([]error, 2)
	for k := range 2 {
		wg.Go(func() {
			c, err := db.Conn(ctx)
			if err != nil {
				errs[k] = err
			} else {
				defer c.Close()
				_, errs[k] = c.ExecContext(ctx, `SET work_mem = '256MB'`)
			}
			for i := range chunk {
				if errs[k] == nil {
					lo, hi := i*scaleReplies/chunks, (i+1)*scaleReplies/chunks
					_, errs[k] = c.ExecContext(ctx, replies, scaleSentences, lo, hi, scaleNow)
				}
			}
		})
	}
	for i := range chunks {
		chunk <- i
	}
	close(chunk)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return "", fmt.Errorf("replies: %w", err)
		}
	}
	b.Logf("seed replies: %s", time.Since(t).Round(time.Millisecond))

	var rare string
	if err := conn.QueryRowContext(ctx, `SELECT word FROM scale_vocab WHERE rank = $1`, scaleRareRank).Scan(&rare); err != nil {
		return "", err
	}
	finish := []string{
		`UPDATE forum_categories c SET thread_count = n FROM (SELECT category_id, count(*) AS n FROM forum_threads GROUP BY category_id) t WHERE t.category_id = c.id`,
		`DROP TABLE scale_vocab, scale_sentence, scale_author, scale_thread, scale_reply`,
	}
	for i, q := range finish {
		if err := step(fmt.Sprint("finish ", i), q); err != nil {
			return "", err
		}
	}
	// The indexes, two builds at a time.
	t = time.Now()
	jobs := make(chan string)
	errs = make([]error, 2)
	for k := range 2 {
		wg.Go(func() {
			c, err := db.Conn(ctx)
			if err != nil {
				errs[k] = err
				return
			}
			defer c.Close()
			if _, err := c.ExecContext(ctx, `SET maintenance_work_mem = '512MB'`); err != nil {
				errs[k] = err
			}
			for d := range jobs {
				if errs[k] != nil {
					continue
				}
				if _, err := c.ExecContext(ctx, d); err != nil {
					errs[k] = fmt.Errorf("%s: %w", d, err)
				}
			}
		})
	}
	// The longest build (the replies' full-text index) first, the others beside it.
	slices.SortStableFunc(defs, func(x, y string) int {
		long := func(d string) bool { return strings.Contains(d, "forum_replies USING gin") }
		switch {
		case long(x) == long(y):
			return 0
		case long(x):
			return -1
		}
		return 1
	})
	for _, d := range defs {
		jobs <- d
	}
	close(jobs)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return "", fmt.Errorf("indexes: %w", err)
		}
	}
	b.Logf("seed indexes %s: %s", strings.Join(names, ", "), time.Since(t).Round(time.Millisecond))
	for _, table := range []string{"forum_categories", "forum_threads", "forum_replies"} {
		if err := step("vacuum "+table, `VACUUM (ANALYZE, PARALLEL 0) `+table); err != nil {
			return "", err
		}
	}
	// Every row read once, so that the runs start from memory-resident tables as a busy forum's are.
	if err := step("warm", `SELECT count(*) FROM forum_threads WHERE body_markdown <> ''; SELECT count(*) FROM forum_replies WHERE body_markdown <> ''`); err != nil {
		return "", err
	}
	return rare, nil
}
