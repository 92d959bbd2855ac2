package tracker

// Reading: one issue, or a project's open issues, from the tracker the
// reference or the project names.

import (
	"context"
	"fmt"
)

// Issue fetches one issue: title, body, labels, URL, state and the last
// comments, bounded and cleaned.
func (c *Client) Issue(ctx context.Context, r Ref) (Issue, error) {
	switch r.Kind {
	case GitHub:
		return c.githubIssue(ctx, r)
	case GitLab:
		return c.gitlabIssue(ctx, r)
	case Linear:
		return c.linearIssue(ctx, r)
	}
	return Issue{}, fmt.Errorf("unknown tracker %q", r.Kind)
}

// List lists the project's open issues, filtered.
func (c *Client) List(ctx context.Context, p Project, o ListOptions) ([]Issue, error) {
	switch p.Kind {
	case GitHub:
		return c.githubList(ctx, p, o)
	case GitLab:
		return c.gitlabList(ctx, p, o)
	case Linear:
		if !linearTeam.MatchString(p.Team) {
			return nil, fmt.Errorf("linear team %q: give its key (ENG), with --team or linear_team in config.toml", p.Team)
		}
		return c.linearList(ctx, p, o)
	}
	return nil, fmt.Errorf("unknown tracker %q", p.Kind)
}
