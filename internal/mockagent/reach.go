package mockagent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// env says one variable of the agent process's own environment:
// `env NAME: VALUE`, or `env NAME: (unset)`. Tests use it to see what
// kandev lets an agent inherit.
func (t *turn) env(name string) {
	v := t.a.getenv(name)
	if v == "" {
		v = "(unset)"
	}
	t.sayf("env %s: %s", name, v)
}

// http sends `METHOD PATH` to the socket kandev gave the session's MCP
// server (its KANDEV_SOCKET), with the server's KANDEV_TOKEN as bearer,
// and says `http METHOD PATH: STATUS CODE` (CODE from a kandev error
// body). It is what a hostile agent could do with what it was given.
func (t *turn) http(arg string) {
	method, path, ok := strings.Cut(strings.TrimSpace(arg), " ")
	if !ok || method == "" || !strings.HasPrefix(path, "/") {
		t.sayf("error http: want METHOD /PATH, got %q", arg)
		return
	}
	srv := t.s.client().server
	if srv == nil {
		t.say("error http: this session has no kandev MCP server")
		return
	}
	var socket, token string
	for _, e := range srv.Env {
		switch e.Name {
		case "KANDEV_SOCKET":
			socket = e.Value
		case "KANDEV_TOKEN":
			token = e.Value
		}
	}
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}}
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(t.ctx, method, "http://kandev"+path, nil)
	if err != nil {
		t.sayf("error http: %v", err)
		return
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.sayf("error http: %v", err)
		return
	}
	defer resp.Body.Close()
	var body struct {
		Error *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	code := "-"
	if json.Unmarshal(b, &body) == nil && body.Error != nil {
		code = body.Error.Code
	}
	t.say(fmt.Sprintf("http %s %s: %d %s", method, path, resp.StatusCode, code))
}
