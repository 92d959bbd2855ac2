package tracker

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
)

var ghFault = cliFault{bin: "gh", login: "gh auth login"}

// ghIssueFields are what `gh issue view/list --json` is asked for.
const (
	ghViewFields = "number,title,body,state,url,author,labels,comments"
	ghListFields = "number,title,body,state,url,author,labels"
)

// ghIssue is gh's JSON for an issue (gh issue view --json ...).
type ghIssue struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	State  string `json:"state"`
	URL    string `json:"url"`
	Author struct {
		Login string `json:"login"`
	} `json:"author"`
	Labels []struct {
		Name string `json:"name"`
	} `json:"labels"`
	Comments []struct {
		Author struct {
			Login string `json:"login"`
		} `json:"author"`
		Body      string `json:"body"`
		CreatedAt string `json:"createdAt"`
	} `json:"comments"`
}

func (g ghIssue) issue(repo string) Issue {
	is := Issue{Ref: Ref{Kind: GitHub, Repo: repo, Number: g.Number}, Title: g.Title, Body: g.Body, URL: g.URL,
		State: g.State, Author: g.Author.Login}
	for _, l := range g.Labels {
		is.Labels = append(is.Labels, l.Name)
	}
	for _, c := range g.Comments {
		is.Comments = append(is.Comments, Comment{Author: c.Author.Login, Body: c.Body, At: c.CreatedAt})
	}
	is.finish()
	return is
}

func (c *Client) githubIssue(ctx context.Context, r Ref) (Issue, error) {
	out, err := c.runCLI(ctx, ghFault, "issue", "view", strconv.Itoa(r.Number), "--repo", r.Repo, "--json", ghViewFields)
	if err != nil {
		return Issue{}, err
	}
	var g ghIssue
	if err := json.Unmarshal(out, &g); err != nil || g.Number != r.Number {
		return Issue{}, fmt.Errorf("%w: gh issue view printed %q", ErrBadAnswer, cut(string(out), 200))
	}
	return g.issue(r.Repo), nil
}

func (c *Client) githubList(ctx context.Context, p Project, o ListOptions) ([]Issue, error) {
	args := []string{"issue", "list", "--repo", p.Repo, "--state", "open", "--limit", strconv.Itoa(o.limit()), "--json", ghListFields}
	if o.Label != "" {
		args = append(args, "--label", o.Label)
	}
	if o.Assignee != "" {
		args = append(args, "--assignee", o.Assignee)
	}
	if o.Milestone != "" {
		args = append(args, "--milestone", o.Milestone)
	}
	out, err := c.runCLI(ctx, ghFault, args...)
	if err != nil {
		return nil, err
	}
	var gs []ghIssue
	if err := json.Unmarshal(out, &gs); err != nil {
		return nil, fmt.Errorf("%w: gh issue list printed %q", ErrBadAnswer, cut(string(out), 200))
	}
	var list []Issue
	for _, g := range gs {
		if g.Number > 0 && len(list) < o.limit() {
			list = append(list, g.issue(p.Repo))
		}
	}
	return list, nil
}
