// Package daemonclient speaks to the kandev daemon over its unix socket:
// the api.Client every front end uses, the tool host behind kandev mcp,
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
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/wire"
)

// Client speaks to a daemon over its socket. It implements api.Client and
// api.ToolHost; with a token it calls as that agent session. Its
// operations are grouped by area, as the engine's are (Tasks, Messages,
// Questions, Workspaces, Roles, Hosts, Spend): each area is a small client
// of its own, embedded here, and all of them share the client's one
// caller (its connection, token and slow-request watch). The client keeps
// what belongs to no area: the event stream, the version, the tool host
// and the connection's own life.
type Client struct {
	c *caller
	// started: Connect started this daemon (StartedHere).
	started bool
	Tasks
	Messages
	Questions
	Workspaces
	Roles
	Hosts
	Spend
	Web
}

// newClient is a client whose areas all call through c.
func newClient(c *caller) *Client {
	return &Client{
		c:          c,
		Tasks:      Tasks{c},
		Messages:   Messages{c},
		Questions:  Questions{c},
		Workspaces: Workspaces{c},
		Roles:      Roles{c},
		Hosts:      Hosts{c},
		Spend:      Spend{c},
		Web:        Web{c},
	}
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
	_ api.Client     = (*Client)(nil)
	_ api.ToolHost   = (*Client)(nil)
	_ api.HostClient = (*Client)(nil)
	_ api.Spender    = (*Client)(nil)
	_ api.WebClient  = (*Client)(nil)

	_ api.TaskSummaries     = (*Client)(nil)
	_ api.TaskSummaryStream = (*Client)(nil)
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
	return newClient(&caller{socket: socket, http: &http.Client{Transport: tr}, first: first})
}

// WithToken returns a copy that authenticates as an agent session.
func (c *Client) WithToken(token string) *Client {
	cp := *c.c
	cp.token = token
	return newClient(&cp)
}

// OnSlow has fn called, once per request, when the daemon has not begun
// to answer a request after d; the request goes on waiting. A command
// waits for its daemon rather than giving up after a deadline (events and
// wait rightly hold a request open, a merge may take long), so a daemon
// that accepts connections but never answers (stopped, stuck) would
// otherwise leave the person at a silent prompt.
func (c *Client) OnSlow(d time.Duration, fn func(waited time.Duration)) {
	c.c.slow, c.c.slowAfter = fn, d
}

// StartedHere reports whether Connect started this client's daemon (none
// answered before): its caller then says which runs that daemon resumed.
func (c *Client) StartedHere() bool { return c.started }

// Close releases idle connections.
func (c *Client) Close() {
	if conn := c.c.first.take(); conn != nil {
		_ = conn.Close()
	}
	c.c.http.CloseIdleConnections()
}

// Ping checks that a daemon answers.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.Version(ctx)
	return err
}

// Version implements api.Client.
func (c *Client) Version(ctx context.Context) (api.VersionInfo, error) {
	return call(ctx, c.c, wire.Version, wire.None{})
}

// IntegrityCheck asks the daemon for PRAGMA integrity_check on its
// database: ["ok"] when sound.
func (c *Client) IntegrityCheck(ctx context.Context) ([]string, error) {
	return call(ctx, c.c, wire.IntegrityCheck, wire.None{})
}

// Events implements api.Client: it follows the daemon's SSE stream until
// ctx ends or the daemon goes away, then closes the channel.
func (c *Client) Events(ctx context.Context, in api.EventsInput) (<-chan core.Event, error) {
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
	resp, err := c.c.send(ctx, "GET", path, nil)
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

// FollowAppends implements api.Client.
func (c *Client) FollowAppends(ctx context.Context, subscription, taskID string) error {
	_, err := call(ctx, c.c, wire.FollowAppends, wire.Keyed[wire.AppendsBody]{Key: subscription, In: wire.AppendsBody{TaskID: taskID}})
	return err
}

// ToolSurface implements api.ToolHost.
func (c *Client) ToolSurface(ctx context.Context) (api.ToolSurface, error) {
	var s api.ToolSurface
	return s, c.c.do(ctx, "GET", "/v1/mcp/surface", nil, &s)
}

// CallTool implements api.ToolHost. The result is the tool's JSON result.
func (c *Client) CallTool(ctx context.Context, name string, args []byte) (any, error) {
	if len(args) == 0 {
		args = []byte("{}")
	}
	var out struct {
		Result json.RawMessage `json:"result"`
	}
	if err := c.c.do(ctx, "POST", "/v1/mcp/call", wire.MCPCall{Tool: name, Arguments: args}, &out); err != nil {
		return nil, err
	}
	return out.Result, nil
}
