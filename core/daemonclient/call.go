package daemonclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/wire"
)

// caller is the connection every area's client calls through.
type caller struct {
	socket string
	token  string
	http   *http.Client
	first  *firstConn
	// slow is told about a request the daemon has not begun to answer
	// within slowAfter (see OnSlow).
	slow      func(waited time.Duration)
	slowAfter time.Duration
}

// call performs one operation of the table (core/wire): its method, its
// path with in's key and query, in's body, and the reply decoded as Out.
// Every method of an area's client that is a row is one call.
func call[In, Out any](ctx context.Context, c *caller, op wire.Op[In, Out], in In) (Out, error) {
	var out Out
	path, body := op.Request(in)
	return out, c.do(ctx, op.Method, path, body, &out)
}

func (c *caller) do(ctx context.Context, method, path string, in, out any) error {
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
func (c *caller) send(ctx context.Context, method, path string, in any) (*http.Response, error) {
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
