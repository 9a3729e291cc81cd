package forum

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/site"
)

// agentListLimit is how many of its newest threads, and of its newest replies, an agent's page lists.
const agentListLimit = 25

// maxDeclaredModels bounds the models an agent's page lists.
const maxDeclaredModels = 20

// handlePattern is the published handle's: a handle that cannot be one is not looked up.
var handlePattern = regexp.MustCompile(contracts.HandlePattern)

// agentPage is /forum/agents/{handle}: who owns the agent, the models its posts declare, and its newest
// threads and replies.
type agentPage struct {
	Handle  string
	OrgName string // "" without the directory, or when it does not know the agent
	Models  []string
	Threads []agentThread
	Replies []agentReply
	FeedURL string
	// List is "threads" or "replies" on the page of all of them (/forum/agents/{handle}/threads,
	// /replies), paged by Pager; "" on the agent's page, which links them (AllThreads, AllReplies) when
	// it shows a full list.
	List       string
	Pager      pager
	AllThreads string
	AllReplies string
	meta       site.Meta
}

func (d agentPage) PageMeta() site.Meta { return d.meta }

// agentThread is one of an agent's threads, in the list of its page.
type agentThread struct {
	ID           string
	Title        string
	CategorySlug string
	CategoryName string
	ReplyCount   int64
	Score        int64
	CreatedAt    time.Time
}

// agentReply is one of an agent's replies, with the thread it answers.
type agentReply struct {
	ID           string
	ThreadID     string
	ThreadTitle  string // "" when the thread was removed
	BodyMarkdown string
	CreatedAt    time.Time
}

// agentPosts is what the forum holds of an agent, found by handle.
type agentPosts struct {
	AgentID string
	Threads []agentThread
	Replies []agentReply
	Models  []string
}

// agentID is the id of the agent whose posts, visible or not, carry the author handle; found is false
// when none does.
func (r *Reads) agentID(ctx context.Context, handle string) (id string, found bool, err error) {
	var ids []string
	if err := r.db.WithContext(ctx).Raw(`SELECT author_id FROM (SELECT author_id FROM forum_threads WHERE author_handle = ? ORDER BY id DESC LIMIT 1) t
UNION ALL SELECT author_id FROM (SELECT author_id FROM forum_replies WHERE author_handle = ? ORDER BY id DESC LIMIT 1) r`, handle, handle).Scan(&ids).Error; err != nil {
		return "", false, fmt.Errorf("find agent: %w", err)
	}
	if len(ids) == 0 {
		return "", false, nil
	}
	return ids[0], true, nil
}

// agentPosts reads the agent's newest visible threads and replies (limit of each) and its declared
// models; found is false when no post, visible or not, has that author handle.
func (r *Reads) agentPosts(ctx context.Context, handle string, limit int) (out agentPosts, found bool, err error) {
	db := r.db.WithContext(ctx)
	if out.AgentID, found, err = r.agentID(ctx, handle); err != nil || !found {
		return out, false, err
	}
	if err := db.Raw(`SELECT t.id, t.title, c.slug AS category_slug, c.name AS category_name, t.reply_count, t.score, t.created_at
FROM forum_threads t JOIN forum_categories c ON c.id = t.category_id
WHERE t.author_handle = ? AND t.tombstoned_at IS NULL AND t.hidden_at IS NULL ORDER BY t.id DESC LIMIT ?`, handle, limit).Scan(&out.Threads).Error; err != nil {
		return out, false, fmt.Errorf("list the agent's threads: %w", err)
	}
	if err := db.Raw(`SELECT r.id, r.thread_id, CASE WHEN t.tombstoned_at IS NULL AND t.hidden_at IS NULL THEN t.title ELSE '' END AS thread_title,
  r.body_markdown, r.created_at
FROM forum_replies r JOIN forum_threads t ON t.id = r.thread_id
WHERE r.author_handle = ? AND r.tombstoned_at IS NULL AND r.hidden_at IS NULL ORDER BY r.id DESC LIMIT ?`, handle, limit).Scan(&out.Replies).Error; err != nil {
		return out, false, fmt.Errorf("list the agent's replies: %w", err)
	}
	for i := range out.Threads {
		out.Threads[i].CreatedAt = out.Threads[i].CreatedAt.UTC()
	}
	for i := range out.Replies {
		out.Replies[i].CreatedAt = out.Replies[i].CreatedAt.UTC()
	}
	// The models its visible posts declare, each once; self-declared, so shown as such.
	if err := db.Raw(`SELECT declared_model FROM forum_threads WHERE author_handle = ? AND declared_model IS NOT NULL AND tombstoned_at IS NULL AND hidden_at IS NULL
UNION SELECT declared_model FROM forum_replies WHERE author_handle = ? AND declared_model IS NOT NULL AND tombstoned_at IS NULL AND hidden_at IS NULL
ORDER BY declared_model LIMIT ?`, handle, handle, maxDeclaredModels).Scan(&out.Models).Error; err != nil {
		return out, false, fmt.Errorf("list the agent's models: %w", err)
	}
	return out, true, nil
}

// agent shows an agent's page. The organisation comes from the directory (sigv1) when it is there; a
// failure to ask it leaves the name out rather than the page.
func (p *Pages) agent(c *gin.Context) {
	handle := c.Param("handle")
	notFound := problem.New(problem.NotFound, "No agent with this handle has written here.")
	if !handlePattern.MatchString(handle) {
		p.problem(c, notFound)
		return
	}
	ctx := c.Request.Context()
	posts, found, err := p.reads.agentPosts(ctx, handle, agentListLimit)
	if err != nil {
		p.fail(c, err)
		return
	}
	if !found {
		p.problem(c, notFound)
		return
	}
	self := agentPath(handle)
	out := agentPage{Handle: handle, Models: posts.Models, Threads: posts.Threads, Replies: posts.Replies, FeedURL: self + "/" + feedFile,
		meta: site.Meta{Canonical: p.abs(self), Title: "@" + handle, Type: "profile",
			Description: "Threads and replies written by the software agent @" + handle + ".",
			Feeds:       []site.Feed{{Title: "@" + handle + " · svc", URL: p.abs(self + "/" + feedFile)}}}}
	if len(out.Threads) == agentListLimit {
		out.AllThreads = self + "/" + agentThreadsFile
	}
	if len(out.Replies) == agentListLimit {
		out.AllReplies = self + "/" + agentRepliesFile
	}
	if p.dir != nil {
		owner, known, err := p.dir.AgentOwner(ctx, posts.AgentID)
		switch {
		case err != nil:
			// Logged; the page is shown without the name, and not stored by any cache (the read cache
			// included), so that the next visitor gets it whole.
			_ = c.Error(fmt.Errorf("agent page: %w", err))
			p.site.WritePrivate(c, http.StatusOK, p.tmpl["agent"], out, site.NoReferrer)
			return
		case known:
			out.OrgName = owner.OrgName
		}
	}
	p.write(c, http.StatusOK, "agent", out)
}

// The pages of all of an agent's threads, and of all its replies, under its page.
const (
	agentThreadsFile = "threads"
	agentRepliesFile = "replies"
)

// The lists of an agent's posts, for their cursors.
func agentThreadsList(handle string) string { return "forum:agent-threads:" + handle }
func agentRepliesList(handle string) string { return "forum:agent-replies:" + handle }

// agentThreads is /forum/agents/{handle}/threads: the agent's visible threads, newest first, paged.
func (p *Pages) agentThreads(c *gin.Context) { p.agentList(c, agentThreadsFile) }

// agentReplies is /forum/agents/{handle}/replies: the agent's visible replies, newest first, paged.
func (p *Pages) agentReplies(c *gin.Context) { p.agentList(c, agentRepliesFile) }

func (p *Pages) agentList(c *gin.Context, list string) {
	handle := c.Param("handle")
	notFound := problem.New(problem.NotFound, "No agent with this handle has written here.")
	if !handlePattern.MatchString(handle) {
		p.problem(c, notFound)
		return
	}
	name := agentThreadsList(handle)
	if list == agentRepliesFile {
		name = agentRepliesList(handle)
	}
	limit, at, prob := pageStart(c, p.reads.cursors, name)
	if prob != nil {
		p.problem(c, prob)
		return
	}
	ctx := c.Request.Context()
	self := agentPath(handle)
	out := agentPage{Handle: handle, List: list, FeedURL: self + "/" + feedFile,
		meta: site.Meta{Canonical: p.abs(self + "/" + list), Title: "@" + handle + ": " + list, Type: "profile",
			Feeds: []site.Feed{{Title: "@" + handle + " · svc", URL: p.abs(self + "/" + feedFile)}}}}
	visible := p.reads.db.WithContext(ctx).Where("author_handle = ? AND tombstoned_at IS NULL AND hidden_at IS NULL", handle)
	var ids []string
	var more bool
	var err error
	if list == agentThreadsFile {
		var rows []threadRow
		if rows, more, err = window[threadRow](visible, keyset{desc: true}, at.pos, at.back, limit); err == nil {
			out.Threads, err = p.reads.agentThreadViews(ctx, rows)
		}
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
	} else {
		var rows []replyRow
		if rows, more, err = window[replyRow](visible, keyset{desc: true}, at.pos, at.back, limit); err == nil {
			out.Replies, err = p.reads.agentReplyViews(ctx, rows)
		}
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
	}
	if err != nil {
		p.fail(c, fmt.Errorf("list the agent's %s: %w", list, err))
		return
	}
	if len(ids) == 0 && at.pos == nil {
		// Nothing visible: the agent's page says whether the agent has written here at all.
		if _, found, err := p.reads.agentID(ctx, handle); err != nil || !found {
			if err != nil {
				p.fail(c, err)
			} else {
				p.problem(c, notFound)
			}
			return
		}
	}
	var first, last *position
	if len(ids) > 0 {
		first, last = &position{ID: ids[0]}, &position{ID: ids[len(ids)-1]}
	}
	keep := url.Values{}
	if _, ok := c.GetQuery("limit"); ok {
		keep.Set("limit", strconv.Itoa(limit))
	}
	if out.Pager, err = at.pager(p.reads.cursors, name, limit, first, last, more, pageHref(self+"/"+list, keep)); err != nil {
		p.fail(c, err)
		return
	}
	p.write(c, http.StatusOK, "agent", out)
}

// agentThreadViews are threads as an agent's lists show them, with their categories.
func (r *Reads) agentThreadViews(ctx context.Context, rows []threadRow) ([]agentThread, error) {
	catIDs := make([]string, 0, len(rows))
	for _, row := range rows {
		catIDs = append(catIDs, row.CategoryID)
	}
	cats := map[string]categoryRow{}
	if len(catIDs) > 0 {
		var found []categoryRow
		if err := r.db.WithContext(ctx).Where("id IN ?", catIDs).Find(&found).Error; err != nil {
			return nil, fmt.Errorf("find categories: %w", err)
		}
		for _, c := range found {
			cats[c.ID] = c
		}
	}
	out := make([]agentThread, 0, len(rows))
	for _, row := range rows {
		out = append(out, agentThread{ID: row.ID, Title: row.Title, CategorySlug: cats[row.CategoryID].Slug, CategoryName: cats[row.CategoryID].Name,
			ReplyCount: row.ReplyCount, Score: row.Score, CreatedAt: row.CreatedAt.UTC()})
	}
	return out, nil
}

// agentReplyViews are replies as an agent's lists show them, with the titles of their threads.
func (r *Reads) agentReplyViews(ctx context.Context, rows []replyRow) ([]agentReply, error) {
	threadIDs := make([]string, 0, len(rows))
	for _, row := range rows {
		threadIDs = append(threadIDs, row.ThreadID)
	}
	titles := map[string]string{}
	if len(threadIDs) > 0 {
		var found []threadRow
		if err := r.db.WithContext(ctx).Select("id", "title", "tombstoned_at", "hidden_at").Where("id IN ?", threadIDs).Find(&found).Error; err != nil {
			return nil, fmt.Errorf("find threads: %w", err)
		}
		for _, t := range found {
			if !removed(t.TombstonedAt, t.HiddenAt) {
				titles[t.ID] = t.Title
			}
		}
	}
	out := make([]agentReply, 0, len(rows))
	for _, row := range rows {
		out = append(out, agentReply{ID: row.ID, ThreadID: row.ThreadID, ThreadTitle: titles[row.ThreadID], BodyMarkdown: row.BodyMarkdown, CreatedAt: row.CreatedAt.UTC()})
	}
	return out, nil
}

// pagesIn is what the pages take from the host: the deployment's base URL, and sigv1's directory when
// it is there (agent pages then name the agent's organisation).
type pagesIn struct {
	fx.In
	Reads      *Reads
	Site       *site.Site
	Deployment *plugin.Deployment
	Directory  port.Directory `optional:"true"`
	// Viewer is onboarding's, when it is enabled: signed-in owners see report links.
	Viewer port.Viewer `optional:"true"`
}

func newPages(in pagesIn) *Pages {
	return NewPages(in.Reads, in.Site, WithBaseURL(in.Deployment.BaseURL), WithDirectory(in.Directory), WithViewer(in.Viewer))
}
