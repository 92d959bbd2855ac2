package tracker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// DefaultLinearURL is Linear's GraphQL endpoint (config linear_url,
// KANDEV_LINEAR_URL override it, for tests and proxies).
const DefaultLinearURL = "https://api.linear.app/graphql"

const linearIssueFields = `identifier title description url state { name type } creator { name } labels { nodes { name } }`

const linearIssueQuery = `query KandevIssue($id: String!) { issue(id: $id) { ` + linearIssueFields +
	` comments(last: 5) { nodes { body createdAt user { name } } } } }`

const linearListQuery = `query KandevIssues($filter: IssueFilter, $first: Int) { issues(filter: $filter, first: $first) { nodes { ` +
	linearIssueFields + ` } } }`

type lnIssue struct {
	Identifier  string `json:"identifier"`
	Title       string `json:"title"`
	Description string `json:"description"`
	URL         string `json:"url"`
	State       struct {
		Name string `json:"name"`
	} `json:"state"`
	Creator struct {
		Name string `json:"name"`
	} `json:"creator"`
	Labels struct {
		Nodes []struct {
			Name string `json:"name"`
		} `json:"nodes"`
	} `json:"labels"`
	Comments struct {
		Nodes []struct {
			Body      string `json:"body"`
			CreatedAt string `json:"createdAt"`
			User      struct {
				Name string `json:"name"`
			} `json:"user"`
		} `json:"nodes"`
	} `json:"comments"`
}

func (l lnIssue) issue() (Issue, bool) {
	r, err := linearRef(l.Identifier, l.Identifier)
	if err != nil {
		return Issue{}, false
	}
	is := Issue{Ref: r, Title: l.Title, Body: l.Description, URL: l.URL, State: l.State.Name, Author: l.Creator.Name}
	for _, n := range l.Labels.Nodes {
		is.Labels = append(is.Labels, n.Name)
	}
	for _, c := range l.Comments.Nodes {
		is.Comments = append(is.Comments, Comment{Author: c.User.Name, Body: c.Body, At: c.CreatedAt})
	}
	is.finish()
	return is, true
}

type lnError struct {
	Message    string `json:"message"`
	Extensions struct {
		Code string `json:"code"`
		Type string `json:"type"`
	} `json:"extensions"`
}

// linear posts one GraphQL query with its variables (JSON: nothing from
// the user is written into the query's text) and decodes data into v.
func (c *Client) linear(ctx context.Context, query string, vars map[string]any, v any) error {
	if strings.TrimSpace(c.LinearToken) == "" {
		return fmt.Errorf("%w: no Linear API key; create one in Linear (Settings → Security & access → Personal API keys) and set LINEAR_API_KEY, or linear_api_key in config.toml (kandev config set linear_api_key ...)", ErrNoToken)
	}
	endpoint := c.LinearURL
	if endpoint == "" {
		endpoint = DefaultLinearURL
	}
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cliTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("linear: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", strings.TrimSpace(c.LinearToken))
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: cliTimeout}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w: could not reach Linear at %s (%v); check your network and try again", ErrNoNetwork, endpoint, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxOutput+1))
	if err != nil {
		return fmt.Errorf("%w: reading Linear's answer: %v", ErrNoNetwork, err)
	}
	if len(raw) > maxOutput {
		return fmt.Errorf("%w: Linear answered more than %d bytes", ErrBadAnswer, maxOutput)
	}
	var env struct {
		Data   json.RawMessage `json:"data"`
		Errors []lnError       `json:"errors"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("%w: Linear answered HTTP %d, %q", ErrBadAnswer, resp.StatusCode, cut(string(raw), 200))
	}
	if err := linearFault(resp.StatusCode, env.Errors); err != nil {
		return err
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		return fmt.Errorf("%w: Linear's data: %v", ErrBadAnswer, err)
	}
	return nil
}

// linearFault classifies Linear's errors by their extensions' code.
func linearFault(status int, errs []lnError) error {
	if len(errs) == 0 {
		if status >= 300 {
			return fmt.Errorf("linear answered HTTP %d", status)
		}
		return nil
	}
	e := errs[0]
	msg := line(e.Message, 300)
	code := strings.ToUpper(e.Extensions.Code)
	switch {
	case status == http.StatusUnauthorized || code == "AUTHENTICATION_ERROR" || strings.Contains(strings.ToLower(e.Extensions.Type), "authentication"):
		return fmt.Errorf("%w: Linear refused the API key (%s); check LINEAR_API_KEY or linear_api_key in config.toml", ErrNotLoggedIn, msg)
	case status == http.StatusForbidden || code == "FORBIDDEN":
		return fmt.Errorf("%w: Linear does not let this API key read it (%s); ask for access to the team", ErrForbidden, msg)
	case code == "ENTITY_NOT_FOUND" || strings.Contains(strings.ToLower(msg), "not found"):
		return fmt.Errorf("%w: %s", ErrNoIssue, msg)
	}
	return errors.New("linear: " + msg)
}

func (c *Client) linearIssue(ctx context.Context, r Ref) (Issue, error) {
	var data struct {
		Issue *lnIssue `json:"issue"`
	}
	if err := c.linear(ctx, linearIssueQuery, map[string]any{"id": r.Key}, &data); err != nil {
		return Issue{}, err
	}
	if data.Issue == nil {
		return Issue{}, fmt.Errorf("%w: Linear has no issue %s", ErrNoIssue, r.Key)
	}
	is, ok := data.Issue.issue()
	if !ok || is.Ref.Key != r.Key {
		return Issue{}, fmt.Errorf("%w: Linear answered issue %q for %s", ErrBadAnswer, line(data.Issue.Identifier, 40), r.Key)
	}
	return is, nil
}

// linearFilter is an IssueFilter: the team's open issues (neither
// completed nor canceled), with a label, an assignee (me, an email or a
// display name) and a project milestone.
func linearFilter(team string, o ListOptions) map[string]any {
	f := map[string]any{
		"team":  map[string]any{"key": map[string]any{"eq": strings.ToUpper(team)}},
		"state": map[string]any{"type": map[string]any{"nin": []string{"completed", "canceled"}}},
	}
	if o.Label != "" {
		f["labels"] = map[string]any{"some": map[string]any{"name": map[string]any{"eqIgnoreCase": o.Label}}}
	}
	switch a := o.Assignee; {
	case a == "@me" || a == "me":
		f["assignee"] = map[string]any{"isMe": map[string]any{"eq": true}}
	case strings.Contains(a, "@"):
		f["assignee"] = map[string]any{"email": map[string]any{"eqIgnoreCase": a}}
	case a != "":
		f["assignee"] = map[string]any{"displayName": map[string]any{"eqIgnoreCase": a}}
	}
	if o.Milestone != "" {
		f["projectMilestone"] = map[string]any{"name": map[string]any{"eqIgnoreCase": o.Milestone}}
	}
	return f
}

func (c *Client) linearList(ctx context.Context, p Project, o ListOptions) ([]Issue, error) {
	var data struct {
		Issues struct {
			Nodes []lnIssue `json:"nodes"`
		} `json:"issues"`
	}
	vars := map[string]any{"filter": linearFilter(p.Team, o), "first": o.limit()}
	if err := c.linear(ctx, linearListQuery, vars, &data); err != nil {
		return nil, err
	}
	var list []Issue
	for _, n := range data.Issues.Nodes {
		if is, ok := n.issue(); ok && len(list) < o.limit() {
			list = append(list, is)
		}
	}
	return list, nil
}
