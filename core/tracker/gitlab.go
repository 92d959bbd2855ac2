package tracker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
)

var glabFault = cliFault{bin: "glab", login: "glab auth login"}

// GitLab is read through `glab api`: GitLab's REST JSON, the same for
// every glab version, where `glab issue view` prints text.

// glIssue is GitLab's JSON for an issue (GET projects/:id/issues/:iid).
type glIssue struct {
	IID         int      `json:"iid"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	State       string   `json:"state"`
	WebURL      string   `json:"web_url"`
	Labels      []string `json:"labels"`
	Author      struct {
		Username string `json:"username"`
	} `json:"author"`
}

// glNote is one note (comment) of an issue.
type glNote struct {
	Body   string `json:"body"`
	System bool   `json:"system"`
	Author struct {
		Username string `json:"username"`
	} `json:"author"`
	CreatedAt string `json:"created_at"`
}

func (g glIssue) issue(host, repo string) Issue {
	is := Issue{Ref: Ref{Kind: GitLab, Host: host, Repo: repo, Number: g.IID}, Title: g.Title, Body: g.Description,
		URL: g.WebURL, State: g.State, Author: g.Author.Username, Labels: g.Labels}
	is.finish()
	return is
}

// glabAPI runs glab api on the path, on the project's host.
func (c *Client) glabAPI(ctx context.Context, host, path string) ([]byte, error) {
	args := []string{"api"}
	if host != "" {
		args = append(args, "--hostname", host)
	}
	return c.runCLI(ctx, glabFault, append(args, path)...)
}

func glProject(repo string) string { return "projects/" + url.PathEscape(repo) }

func (c *Client) gitlabIssue(ctx context.Context, r Ref) (Issue, error) {
	base := glProject(r.Repo) + "/issues/" + strconv.Itoa(r.Number)
	out, err := c.glabAPI(ctx, r.Host, base)
	if err != nil {
		return Issue{}, err
	}
	var g glIssue
	if err := json.Unmarshal(out, &g); err != nil || g.IID != r.Number {
		return Issue{}, fmt.Errorf("%w: glab api printed %q", ErrBadAnswer, cut(string(out), 200))
	}
	is := g.issue(r.Host, r.Repo)
	out, err = c.glabAPI(ctx, r.Host, base+"/notes?sort=desc&order_by=created_at&per_page=50")
	if err != nil {
		return Issue{}, err
	}
	var notes []glNote
	if err := json.Unmarshal(out, &notes); err != nil {
		return Issue{}, fmt.Errorf("%w: glab api (notes) printed %q", ErrBadAnswer, cut(string(out), 200))
	}
	for _, n := range notes { // newest first; system notes are GitLab's own
		if !n.System && len(is.Comments) < MaxComments {
			is.Comments = append(is.Comments, Comment{Author: n.Author.Username, Body: n.Body, At: n.CreatedAt})
		}
	}
	slices.Reverse(is.Comments)
	is.finish()
	return is, nil
}

func (c *Client) gitlabList(ctx context.Context, p Project, o ListOptions) ([]Issue, error) {
	q := url.Values{"state": {"opened"}, "per_page": {strconv.Itoa(o.limit())}, "order_by": {"updated_at"}}
	if o.Label != "" {
		q.Set("labels", o.Label)
	}
	if o.Assignee != "" {
		q.Set("assignee_username", o.Assignee)
	}
	if o.Milestone != "" {
		q.Set("milestone", o.Milestone)
	}
	out, err := c.glabAPI(ctx, p.Host, glProject(p.Repo)+"/issues?"+q.Encode())
	if err != nil {
		return nil, err
	}
	var gs []glIssue
	if err := json.Unmarshal(out, &gs); err != nil {
		return nil, fmt.Errorf("%w: glab api printed %q", ErrBadAnswer, cut(string(out), 200))
	}
	var list []Issue
	for _, g := range gs {
		if g.IID > 0 && len(list) < o.limit() {
			list = append(list, g.issue(p.Host, p.Repo))
		}
	}
	return list, nil
}
