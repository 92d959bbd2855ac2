// Package daemonclient speaks to the kandev daemon over its unix socket:
// the core.Client every front end uses, the tool host behind kandev mcp,
// starting the daemon in the background when none answers (Connect), and
// asking after or stopping it without starting one (Ping, Probe, Stop).
// It depends on core and core/wire only: the front ends that use it never
// link the engine, the store or SQLite (docs/decisions/0028).
package daemonclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/wire"
)

// Client speaks to a daemon over its socket. It implements core.Client and
// core.ToolHost; with a token it calls as that agent session.
type Client struct {
	socket string
	token  string
	http   *http.Client
	first  *firstConn
	// slow is told about a request the daemon has not begun to answer
	// within slowAfter (see OnSlow).
	slow      func(waited time.Duration)
	slowAfter time.Duration
}

// firstConn is a connection made before the client's first request
// (Connect's check that a daemon listens): the transport's first dial takes
// it instead of connecting again.
type firstConn struct {
	mu   sync.Mutex
	conn net.Conn
}

func (f *firstConn) take() net.Conn {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.conn
	f.conn = nil
	return c
}

var (
	_ core.Client   = (*Client)(nil)
	_ core.ToolHost = (*Client)(nil)

	_ core.TaskSummaries     = (*Client)(nil)
	_ core.TaskSummaryStream = (*Client)(nil)
)

// Dial returns a client of the daemon at socket. It does not connect yet.
func Dial(socket string) *Client { return dial(socket, nil) }

// dial is Dial with a connection already made to socket, used first.
func dial(socket string, conn net.Conn) *Client {
	var first *firstConn
	if conn != nil {
		first = &firstConn{conn: conn}
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			if c := first.take(); c != nil {
				return c, nil
			}
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConns:        16,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}
	return &Client{socket: socket, http: &http.Client{Transport: tr}, first: first}
}

// WithToken returns a copy that authenticates as an agent session.
func (c *Client) WithToken(token string) *Client {
	cp := *c
	cp.token = token
	return &cp
}

// OnSlow has fn called, once per request, when the daemon has not begun
// to answer a request after d; the request goes on waiting. A command
// waits for its daemon rather than giving up after a deadline (events and
// wait rightly hold a request open, a merge may take long), so a daemon
// that accepts connections but never answers (stopped, stuck) would
// otherwise leave the person at a silent prompt.
func (c *Client) OnSlow(d time.Duration, fn func(waited time.Duration)) {
	c.slow, c.slowAfter = fn, d
}

// Close releases idle connections.
func (c *Client) Close() {
	if conn := c.first.take(); conn != nil {
		_ = conn.Close()
	}
	c.http.CloseIdleConnections()
}

// Ping checks that a daemon answers.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.Version(ctx)
	return err
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	resp, err := c.send(ctx, method, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return core.Errorf(core.CodeInternal, "read daemon reply to %s %s: %v", method, path, err)
	}
	return nil
}

// send performs a request and turns error replies into *core.Error.
func (c *Client) send(ctx context.Context, method, path string, in any) (*http.Response, error) {
	if err := emptyRef(path); err != nil {
		return nil, err
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://kandev"+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.slow != nil {
		// Do returns once the answer's headers are in.
		after := time.AfterFunc(c.slowAfter, func() { c.slow(c.slowAfter) })
		defer after.Stop()
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &core.Error{Code: core.CodeUnavailable, Message: fmt.Sprintf("cannot reach the kandev daemon at %s: %v", c.socket, unwrapNet(err))}
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var eb wire.ErrorBody
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if json.Unmarshal(b, &eb) == nil && eb.Error != nil {
			return nil, eb.Error
		}
		return nil, core.Errorf(core.CodeInternal, "daemon answered %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return resp, nil
}

// emptyRef refuses a path whose id segment is empty ("/v1/tasks//stop"
// for `kandev task stop ""`) with the not-found error any unknown id gets:
// sent, it would name a different route, or none.
func emptyRef(path string) error {
	p, _, _ := strings.Cut(path, "?")
	parts := strings.Split(p, "/") // "", "v1", "tasks", ID, ...
	if len(parts) >= 4 && parts[3] == "" {
		noun := strings.TrimSuffix(parts[2], "s")
		return core.Errorf(core.CodeNotFound, "%s \"\" not found: give a %s ID", noun, noun)
	}
	return nil
}

func unwrapNet(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

func esc(s string) string { return url.PathEscape(s) }

// Version implements core.Client.
func (c *Client) Version(ctx context.Context) (core.VersionInfo, error) {
	var v core.VersionInfo
	return v, c.do(ctx, "GET", "/v1/version", nil, &v)
}

// IntegrityCheck asks the daemon for PRAGMA integrity_check on its
// database: ["ok"] when sound.
func (c *Client) IntegrityCheck(ctx context.Context) ([]string, error) {
	var out []string
	return out, c.do(ctx, "GET", "/v1/integrity", nil, &out)
}

// CreateTask implements core.Client.
func (c *Client) CreateTask(ctx context.Context, in core.CreateTaskInput) (core.Task, error) {
	var t core.Task
	return t, c.do(ctx, "POST", "/v1/tasks", in, &t)
}

// ListTasks implements core.Client.
func (c *Client) ListTasks(ctx context.Context, in core.ListTasksInput) ([]core.Task, error) {
	var ts []core.Task
	return ts, c.do(ctx, "GET", listPath(in), nil, &ts)
}

// ListTasksRaw streams the daemon's JSON array of tasks unchanged, for
// `task list --json`: no decode and re-encode on the way through.
func (c *Client) ListTasksRaw(ctx context.Context, in core.ListTasksInput, w io.Writer) error {
	resp, err := c.send(ctx, "GET", listPath(in), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

// ListTaskSummaries implements core.TaskSummaries: the listing with only
// what a tree row shows, in the compact encoding of core/wire.
func (c *Client) ListTaskSummaries(ctx context.Context, in core.ListTasksInput) ([]core.Task, error) {
	return c.StreamTaskSummaries(ctx, in, 0, nil)
}

// StreamTaskSummaries implements core.TaskSummaryStream.
func (c *Client) StreamTaskSummaries(ctx context.Context, in core.ListTasksInput, n int, first func([]core.Task)) ([]core.Task, error) {
	p := strings.Replace(listPath(in), "/v1/tasks", "/v1/task-summaries", 1)
	resp, err := c.send(ctx, "GET", p, nil)
	var e *core.Error
	if errors.As(err, &e) && e.Code == core.CodeInternal && strings.HasPrefix(e.Message, "daemon answered 404 ") {
		// A daemon older than this binary has no such route.
		ts, err := c.ListTasks(ctx, in)
		if err == nil && first != nil {
			first(ts[:min(n, len(ts))])
		}
		return ts, err
	}
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return wire.ReadTaskSummaries(resp.Body, n, first)
}

func listPath(in core.ListTasksInput) string {
	q := url.Values{}
	if in.All {
		q.Set("all", "1")
	}
	if in.Root != "" {
		q.Set("root", in.Root)
	}
	if len(q) == 0 {
		return "/v1/tasks"
	}
	return "/v1/tasks?" + q.Encode()
}

// ScanTaskSummaries is ListTaskSummaries one task at a time: fn gets each
// task as its line is decoded, and must copy what it keeps (the task is
// reused). The text task list reads 100,000 tasks this way without holding
// them.
func (c *Client) ScanTaskSummaries(ctx context.Context, in core.ListTasksInput, count func(n int), fn func(*core.Task) error) error {
	p := strings.Replace(listPath(in), "/v1/tasks", "/v1/task-summaries", 1)
	resp, err := c.send(ctx, "GET", p, nil)
	var e *core.Error
	if errors.As(err, &e) && e.Code == core.CodeInternal && strings.HasPrefix(e.Message, "daemon answered 404 ") {
		// A daemon older than this binary has no such route.
		ts, err := c.ListTasks(ctx, in)
		if err != nil {
			return err
		}
		if count != nil {
			count(len(ts))
		}
		for i := range ts {
			if err := fn(&ts[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return wire.ScanTaskSummaries(resp.Body, count, fn)
}

// GetTaskJSON returns the daemon's JSON of one task as it came, checked to
// be JSON: `task show --json` prints it without decoding it into a
// core.Task and encoding it again, which cost a short command ~0.5 ms of
// cold reflection (issue 14).
func (c *Client) GetTaskJSON(ctx context.Context, id string) ([]byte, error) {
	path := "/v1/tasks/" + esc(id)
	resp, err := c.send(ctx, "GET", path, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && !json.Valid(b) {
		err = errors.New("not a JSON value")
	}
	if err != nil {
		return nil, core.Errorf(core.CodeInternal, "read daemon reply to GET %s: %v", path, err)
	}
	return b, nil
}

// GetTask implements core.Client.
func (c *Client) GetTask(ctx context.Context, id string) (core.Task, error) {
	var t core.Task
	return t, c.do(ctx, "GET", "/v1/tasks/"+esc(id), nil, &t)
}

// EditTask implements core.Client.
func (c *Client) EditTask(ctx context.Context, id string, in core.EditTaskInput) (core.Task, error) {
	var t core.Task
	return t, c.do(ctx, "PATCH", "/v1/tasks/"+esc(id), in, &t)
}

// ArchiveTask implements core.Client.
func (c *Client) ArchiveTask(ctx context.Context, id string) (core.Task, error) {
	var t core.Task
	return t, c.do(ctx, "POST", "/v1/tasks/"+esc(id)+"/archive", nil, &t)
}

// SetTaskStatus implements core.Client.
func (c *Client) SetTaskStatus(ctx context.Context, id string, status core.Status) (core.Task, error) {
	var t core.Task
	return t, c.do(ctx, "POST", "/v1/tasks/"+esc(id)+"/status", map[string]any{"status": status}, &t)
}

// ListProfiles implements core.Client.
func (c *Client) ListProfiles(ctx context.Context) ([]core.Profile, error) {
	var ps []core.Profile
	return ps, c.do(ctx, "GET", "/v1/profiles", nil, &ps)
}

// GetProfile implements core.Client.
func (c *Client) GetProfile(ctx context.Context, name string) (core.Profile, error) {
	var p core.Profile
	return p, c.do(ctx, "GET", "/v1/profiles/"+esc(name), nil, &p)
}

// AddProfile implements core.Client.
func (c *Client) AddProfile(ctx context.Context, p core.Profile) (core.Profile, error) {
	var out core.Profile
	return out, c.do(ctx, "PUT", "/v1/profiles/"+esc(p.Name), p, &out)
}

// RemoveProfile implements core.Client.
func (c *Client) RemoveProfile(ctx context.Context, name string) (core.Profile, error) {
	var out core.Profile
	return out, c.do(ctx, "DELETE", "/v1/profiles/"+esc(name), nil, &out)
}

// StartTask implements core.Client.
func (c *Client) StartTask(ctx context.Context, id string, in core.StartTaskInput) (core.Task, error) {
	var t core.Task
	return t, c.do(ctx, "POST", "/v1/tasks/"+esc(id)+"/start", in, &t)
}

// MessageTask implements core.Client.
func (c *Client) MessageTask(ctx context.Context, id string, in core.MessageInput) (core.MessageResult, error) {
	var r core.MessageResult
	return r, c.do(ctx, "POST", "/v1/tasks/"+esc(id)+"/message", in, &r)
}

// StopTask implements core.Client.
func (c *Client) StopTask(ctx context.Context, id string) (core.StopResult, error) {
	var r core.StopResult
	return r, c.do(ctx, "POST", "/v1/tasks/"+esc(id)+"/stop", nil, &r)
}

// AnswerQuestion implements core.Client.
func (c *Client) AnswerQuestion(ctx context.Context, id string, in core.AnswerInput) (core.AnswerResult, error) {
	var r core.AnswerResult
	return r, c.do(ctx, "POST", "/v1/tasks/"+esc(id)+"/answer", in, &r)
}

// Conversation implements core.Client.
func (c *Client) Conversation(ctx context.Context, id string, in core.ConversationInput) (core.ConversationPage, error) {
	var p core.ConversationPage
	path := "/v1/tasks/" + esc(id) + "/conversation?after=" + strconv.FormatInt(in.After, 10)
	if in.Before != 0 {
		path += "&before=" + strconv.FormatInt(in.Before, 10)
	}
	if in.Limit > 0 {
		path += "&limit=" + strconv.Itoa(in.Limit)
	}
	return p, c.do(ctx, "GET", path, nil, &p)
}

// HandoffTask implements core.Client.
func (c *Client) HandoffTask(ctx context.Context, id string, in core.HandoffInput) (core.HandoffResult, error) {
	var r core.HandoffResult
	return r, c.do(ctx, "POST", "/v1/tasks/"+esc(id)+"/handoff", in, &r)
}

// BlockTask implements core.Client.
func (c *Client) BlockTask(ctx context.Context, id string, in core.BlockInput) (core.Task, error) {
	var t core.Task
	return t, c.do(ctx, "POST", "/v1/tasks/"+esc(id)+"/block", in, &t)
}

// TaskQueue implements core.Client.
func (c *Client) TaskQueue(ctx context.Context, id string) (core.QueueView, error) {
	var v core.QueueView
	return v, c.do(ctx, "GET", "/v1/tasks/"+esc(id)+"/queue", nil, &v)
}

// DropQueued implements core.Client.
func (c *Client) DropQueued(ctx context.Context, id string, in core.DropQueueInput) (core.QueueView, error) {
	var v core.QueueView
	return v, c.do(ctx, "POST", "/v1/tasks/"+esc(id)+"/queue/drop", in, &v)
}

// TaskDiff implements core.Client.
func (c *Client) TaskDiff(ctx context.Context, id string, in core.DiffInput) (core.TaskDiff, error) {
	var d core.TaskDiff
	path := "/v1/tasks/" + esc(id) + "/diff"
	if in.Patch {
		path += "?patch=1"
	}
	return d, c.do(ctx, "GET", path, nil, &d)
}

// TaskReview implements core.Client.
func (c *Client) TaskReview(ctx context.Context, id string) (core.ReviewView, error) {
	var v core.ReviewView
	return v, c.do(ctx, "GET", "/v1/tasks/"+esc(id)+"/review", nil, &v)
}

// PushTask implements core.Client.
func (c *Client) PushTask(ctx context.Context, id string, in core.PushInput) (core.PushResult, error) {
	var r core.PushResult
	return r, c.do(ctx, "POST", "/v1/tasks/"+esc(id)+"/push", in, &r)
}

// PullRequestTask implements core.Client.
func (c *Client) PullRequestTask(ctx context.Context, id string, in core.PullRequestInput) (core.PullRequestResult, error) {
	var r core.PullRequestResult
	return r, c.do(ctx, "POST", "/v1/tasks/"+esc(id)+"/pull-request", in, &r)
}

// MergeTask implements core.Client.
func (c *Client) MergeTask(ctx context.Context, id string, in core.MergeInput) (core.MergeResult, error) {
	var r core.MergeResult
	return r, c.do(ctx, "POST", "/v1/tasks/"+esc(id)+"/merge", in, &r)
}

// DiscardTask implements core.Client.
func (c *Client) DiscardTask(ctx context.Context, id string) (core.Task, error) {
	var t core.Task
	return t, c.do(ctx, "POST", "/v1/tasks/"+esc(id)+"/discard", nil, &t)
}

// PruneWorktrees implements core.Client.
func (c *Client) PruneWorktrees(ctx context.Context, in core.PruneInput) (core.PruneResult, error) {
	var r core.PruneResult
	return r, c.do(ctx, "POST", "/v1/worktrees/prune", in, &r)
}

// ListRoles implements core.Client.
func (c *Client) ListRoles(ctx context.Context) ([]core.Role, error) {
	var rs []core.Role
	return rs, c.do(ctx, "GET", "/v1/roles", nil, &rs)
}

// GetRole implements core.Client.
func (c *Client) GetRole(ctx context.Context, name string) (core.Role, error) {
	var r core.Role
	return r, c.do(ctx, "GET", "/v1/roles/"+esc(name), nil, &r)
}

// AddRole implements core.Client.
func (c *Client) AddRole(ctx context.Context, in core.RoleInput) (core.Role, error) {
	var r core.Role
	return r, c.do(ctx, "POST", "/v1/roles", in, &r)
}

// EditRole implements core.Client.
func (c *Client) EditRole(ctx context.Context, name string, in core.RoleInput) (core.Role, error) {
	var r core.Role
	return r, c.do(ctx, "PATCH", "/v1/roles/"+esc(name), in, &r)
}

// RemoveRole implements core.Client.
func (c *Client) RemoveRole(ctx context.Context, name string) (core.Role, error) {
	var r core.Role
	return r, c.do(ctx, "DELETE", "/v1/roles/"+esc(name), nil, &r)
}

// ListPersons implements core.Client.
func (c *Client) ListPersons(ctx context.Context) ([]core.Person, error) {
	var ps []core.Person
	return ps, c.do(ctx, "GET", "/v1/persons", nil, &ps)
}

// AddPerson implements core.Client.
func (c *Client) AddPerson(ctx context.Context, name string) (core.Person, error) {
	var p core.Person
	return p, c.do(ctx, "POST", "/v1/persons", map[string]string{"name": name}, &p)
}

// Events implements core.Client: it follows the daemon's SSE stream until
// ctx ends or the daemon goes away, then closes the channel.
func (c *Client) Events(ctx context.Context, in core.EventsInput) (<-chan core.Event, error) {
	path := "/v1/events"
	if in.TaskID != "" {
		path += "?task=" + url.QueryEscape(in.TaskID)
	}
	// The stream has no deadline: it lives as long as ctx.
	resp, err := c.send(ctx, "GET", path, nil)
	if err != nil {
		return nil, err
	}
	out := make(chan core.Event, 256)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64*1024), 64<<20)
		var data []byte
		for sc.Scan() {
			line := sc.Bytes()
			switch {
			case len(line) == 0:
				if len(data) > 0 {
					var ev core.Event
					if json.Unmarshal(data, &ev) == nil {
						select {
						case out <- ev:
						case <-ctx.Done():
							return
						}
					}
					data = data[:0]
				}
			case bytes.HasPrefix(line, []byte("data: ")):
				data = append(data, line[len("data: "):]...)
			}
		}
	}()
	return out, nil
}

// ToolSurface implements core.ToolHost.
func (c *Client) ToolSurface(ctx context.Context) (core.ToolSurface, error) {
	var s core.ToolSurface
	return s, c.do(ctx, "GET", "/v1/mcp/surface", nil, &s)
}

// CallTool implements core.ToolHost. The result is the tool's JSON result.
func (c *Client) CallTool(ctx context.Context, name string, args []byte) (any, error) {
	if len(args) == 0 {
		args = []byte("{}")
	}
	var out struct {
		Result json.RawMessage `json:"result"`
	}
	if err := c.do(ctx, "POST", "/v1/mcp/call", wire.MCPCall{Tool: name, Arguments: args}, &out); err != nil {
		return nil, err
	}
	return out.Result, nil
}
