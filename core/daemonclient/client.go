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

// Version implements core.Client.
func (c *Client) Version(ctx context.Context) (core.VersionInfo, error) {
	return call(ctx, c, wire.Version, wire.None{})
}

// IntegrityCheck asks the daemon for PRAGMA integrity_check on its
// database: ["ok"] when sound.
func (c *Client) IntegrityCheck(ctx context.Context) ([]string, error) {
	return call(ctx, c, wire.IntegrityCheck, wire.None{})
}

// CreateTask implements core.Client.
func (c *Client) CreateTask(ctx context.Context, in core.CreateTaskInput) (core.Task, error) {
	return call(ctx, c, wire.CreateTask, in)
}

// ListTasks implements core.Client.
func (c *Client) ListTasks(ctx context.Context, in core.ListTasksInput) ([]core.Task, error) {
	return call(ctx, c, wire.ListTasks, wire.ListQuery(in))
}

// TaskStats implements core.Client.
func (c *Client) TaskStats(ctx context.Context, in core.ListTasksInput) (core.TaskStats, error) {
	return call(ctx, c, wire.TaskStats, wire.ListQuery(in))
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
	path, _ := wire.ListTasks.Request(wire.ListQuery(in))
	return path
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
	path, _ := wire.GetTask.Request(wire.Key(id))
	resp, err := c.send(ctx, wire.GetTask.Method, path, nil)
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
	return call(ctx, c, wire.GetTask, wire.Key(id))
}

// EditTask implements core.Client.
func (c *Client) EditTask(ctx context.Context, id string, in core.EditTaskInput) (core.Task, error) {
	return call(ctx, c, wire.EditTask, wire.Keyed[core.EditTaskInput]{Key: id, In: in})
}

// ArchiveTask implements core.Client.
func (c *Client) ArchiveTask(ctx context.Context, id string, in core.ArchiveTaskInput) (core.Task, error) {
	return call(ctx, c, wire.ArchiveTask, wire.WithOptions(id, in))
}

// SetTaskStatus implements core.Client.
func (c *Client) SetTaskStatus(ctx context.Context, id string, status core.Status) (core.Task, error) {
	return call(ctx, c, wire.SetTaskStatus, wire.Keyed[wire.StatusBody]{Key: id, In: wire.StatusBody{Status: status}})
}

// ListProfiles implements core.Client.
func (c *Client) ListProfiles(ctx context.Context) ([]core.Profile, error) {
	return call(ctx, c, wire.ListProfiles, wire.None{})
}

// GetProfile implements core.Client.
func (c *Client) GetProfile(ctx context.Context, name string) (core.Profile, error) {
	return call(ctx, c, wire.GetProfile, wire.Key(name))
}

// AddProfile implements core.Client.
func (c *Client) AddProfile(ctx context.Context, p core.Profile) (core.Profile, error) {
	return call(ctx, c, wire.AddProfile, wire.Keyed[core.Profile]{Key: p.Name, In: p})
}

// RemoveProfile implements core.Client.
func (c *Client) RemoveProfile(ctx context.Context, name string, in core.RemoveProfileInput) (core.Profile, error) {
	return call(ctx, c, wire.RemoveProfile, wire.WithOptions(name, in))
}

// StartTask implements core.Client.
func (c *Client) StartTask(ctx context.Context, id string, in core.StartTaskInput) (core.Task, error) {
	return call(ctx, c, wire.StartTask, wire.Keyed[core.StartTaskInput]{Key: id, In: in})
}

// MessageTask implements core.Client.
func (c *Client) MessageTask(ctx context.Context, id string, in core.MessageInput) (core.MessageResult, error) {
	return call(ctx, c, wire.MessageTask, wire.Keyed[core.MessageInput]{Key: id, In: in})
}

// StopTask implements core.Client.
func (c *Client) StopTask(ctx context.Context, id string, in core.StopTaskInput) (core.StopResult, error) {
	return call(ctx, c, wire.StopTask, wire.WithOptions(id, in))
}

// AnswerQuestion implements core.Client.
func (c *Client) AnswerQuestion(ctx context.Context, id string, in core.AnswerInput) (core.AnswerResult, error) {
	return call(ctx, c, wire.AnswerQuestion, wire.Keyed[core.AnswerInput]{Key: id, In: in})
}

// Conversation implements core.Client.
func (c *Client) Conversation(ctx context.Context, id string, in core.ConversationInput) (core.ConversationPage, error) {
	return call(ctx, c, wire.Conversation, wire.Keyed[wire.ConversationQuery]{Key: id, In: wire.ConversationQuery(in)})
}

// HandoffTask implements core.Client.
func (c *Client) HandoffTask(ctx context.Context, id string, in core.HandoffInput) (core.HandoffResult, error) {
	return call(ctx, c, wire.HandoffTask, wire.Keyed[core.HandoffInput]{Key: id, In: in})
}

// BlockTask implements core.Client.
func (c *Client) BlockTask(ctx context.Context, id string, in core.BlockInput) (core.Task, error) {
	return call(ctx, c, wire.BlockTask, wire.Keyed[core.BlockInput]{Key: id, In: in})
}

// TaskQueue implements core.Client.
func (c *Client) TaskQueue(ctx context.Context, id string) (core.QueueView, error) {
	return call(ctx, c, wire.TaskQueue, wire.Key(id))
}

// DropQueued implements core.Client.
func (c *Client) DropQueued(ctx context.Context, id string, in core.DropQueueInput) (core.QueueView, error) {
	return call(ctx, c, wire.DropQueued, wire.Keyed[core.DropQueueInput]{Key: id, In: in})
}

// TaskDiff implements core.Client.
func (c *Client) TaskDiff(ctx context.Context, id string, in core.DiffInput) (core.TaskDiff, error) {
	return call(ctx, c, wire.TaskDiff, wire.Keyed[wire.DiffQuery]{Key: id, In: wire.DiffQuery(in)})
}

// TaskReview implements core.Client.
func (c *Client) TaskReview(ctx context.Context, id string) (core.ReviewView, error) {
	return call(ctx, c, wire.TaskReview, wire.Key(id))
}

// PushTask implements core.Client.
func (c *Client) PushTask(ctx context.Context, id string, in core.PushInput) (core.PushResult, error) {
	return call(ctx, c, wire.PushTask, wire.Keyed[core.PushInput]{Key: id, In: in})
}

// PullRequestTask implements core.Client.
func (c *Client) PullRequestTask(ctx context.Context, id string, in core.PullRequestInput) (core.PullRequestResult, error) {
	return call(ctx, c, wire.PullRequestTask, wire.Keyed[core.PullRequestInput]{Key: id, In: in})
}

// MergeTask implements core.Client.
func (c *Client) MergeTask(ctx context.Context, id string, in core.MergeInput) (core.MergeResult, error) {
	return call(ctx, c, wire.MergeTask, wire.Keyed[core.MergeInput]{Key: id, In: in})
}

// DiscardTask implements core.Client.
func (c *Client) DiscardTask(ctx context.Context, id string, in core.DiscardTaskInput) (core.Task, error) {
	return call(ctx, c, wire.DiscardTask, wire.WithOptions(id, in))
}

// PruneWorktrees implements core.Client.
func (c *Client) PruneWorktrees(ctx context.Context, in core.PruneInput) (core.PruneResult, error) {
	return call(ctx, c, wire.PruneWorktrees, in)
}

// ListRoles implements core.Client.
func (c *Client) ListRoles(ctx context.Context) ([]core.Role, error) {
	return call(ctx, c, wire.ListRoles, wire.None{})
}

// GetRole implements core.Client.
func (c *Client) GetRole(ctx context.Context, name string) (core.Role, error) {
	return call(ctx, c, wire.GetRole, wire.Key(name))
}

// AddRole implements core.Client.
func (c *Client) AddRole(ctx context.Context, in core.RoleInput) (core.Role, error) {
	return call(ctx, c, wire.AddRole, in)
}

// EditRole implements core.Client.
func (c *Client) EditRole(ctx context.Context, name string, in core.RoleInput) (core.Role, error) {
	return call(ctx, c, wire.EditRole, wire.Keyed[core.RoleInput]{Key: name, In: in})
}

// RemoveRole implements core.Client.
func (c *Client) RemoveRole(ctx context.Context, name string, in core.RemoveRoleInput) (core.Role, error) {
	return call(ctx, c, wire.RemoveRole, wire.WithOptions(name, in))
}

// ListPersons implements core.Client.
func (c *Client) ListPersons(ctx context.Context) ([]core.Person, error) {
	return call(ctx, c, wire.ListPersons, wire.None{})
}

// AddPerson implements core.Client.
func (c *Client) AddPerson(ctx context.Context, in core.AddPersonInput) (core.Person, error) {
	return call(ctx, c, wire.AddPerson, in)
}

// Events implements core.Client: it follows the daemon's SSE stream until
// ctx ends or the daemon goes away, then closes the channel.
func (c *Client) Events(ctx context.Context, in core.EventsInput) (<-chan core.Event, error) {
	path := "/v1/events"
	q := url.Values{}
	if in.TaskID != "" {
		q.Set("task", in.TaskID)
	}
	if in.Appends != "" {
		q.Set("appends", in.Appends)
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	// The stream has no deadline: it lives as long as ctx.
	resp, err := c.send(ctx, "GET", path, nil)
	if err != nil {
		return nil, err
	}
	out := make(chan core.Event, 256)
	// A daemon before FollowAppends names no subscription (and sends every
	// append): then there is none to follow.
	if sub := resp.Header.Get(wire.SubscriptionHeader); in.Appends != "" && sub != "" {
		out <- core.Event{Type: core.EventSubscribed, Subscription: sub, At: time.Now().UTC()}
	}
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

// FollowAppends implements core.Client.
func (c *Client) FollowAppends(ctx context.Context, subscription, taskID string) error {
	_, err := call(ctx, c, wire.FollowAppends, wire.Keyed[wire.AppendsBody]{Key: subscription, In: wire.AppendsBody{TaskID: taskID}})
	return err
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
