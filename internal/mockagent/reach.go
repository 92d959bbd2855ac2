package mockagent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
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

// fetch GETs a URL over TCP, as an agent calls its model's API, and says
// `fetched URL: STATUS BODY` (the body's first line, at most 200 bytes), or
// `error fetch URL: ...`. Tests use it to see what network a confined
// agent has (a model server on the host's loopback, a forwarded port).
func (t *turn) fetch(url string) {
	url = strings.TrimSpace(url)
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.sayf("error fetch %s: %v", url, err)
		return
	}
	c := &http.Client{Transport: &http.Transport{Proxy: nil}}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		t.sayf("error fetch %s: %v", url, err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	line, _, _ := strings.Cut(string(b), "\n")
	t.sayf("fetched %s: %d %s", url, resp.StatusCode, line)
}
