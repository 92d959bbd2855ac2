package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func forwardView(t *testing.T, mode, network string, noNetwork bool) View {
	t.Helper()
	dir := t.TempDir()
	v, err := Describe(Input{Mode: mode, Worktree: dir, SelfExe: "/opt/kandev", SessionID: "s1", Network: network, NoNetwork: noNetwork,
		Forwards: []int{11434}, ForwardDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A forward is served where the sandbox's loopback is its own, and only
// there: a container that is not on the host's network, bwrap with its
// network cut. Its socket is the one socket added to the view.
func TestForwardsWhereTheLoopbackIsOwn(t *testing.T) {
	cases := []struct {
		mode, network string
		noNetwork     bool
		wrapped       bool
		containerNet  string
	}{
		{"docker", "", false, true, ""},
		{"docker", NetworkNone, false, true, "none"},
		{"podman", "", true, true, "none"},
		{"docker", NetworkHost, false, false, "host"},
		{"bwrap", "", false, false, ""},
		{"bwrap", NetworkHost, false, false, ""},
		{"bwrap", NetworkNone, false, true, ""},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s-%q-%v", c.mode, c.network, c.noNetwork), func(t *testing.T) {
			v := forwardView(t, c.mode, c.network, c.noNetwork)
			name, args, _ := v.Command("agent", []string{"--acp"}, nil)
			i := slices.Index(args, ForwardCommand)
			if (i >= 0) != c.wrapped {
				t.Fatalf("wrapped %v, want %v: %s %v", i >= 0, c.wrapped, name, args)
			}
			mounted := false
			for _, m := range v.Mounts {
				if strings.HasPrefix(m.Why, "forward of port") {
					mounted = m.RW && strings.HasSuffix(m.Path, "fwd-s1-11434.sock")
				}
			}
			if mounted != c.wrapped {
				t.Fatalf("socket mounted %v: %+v", mounted, v.Mounts)
			}
			if c.wrapped {
				tail := args[i-1:]
				signals := c.mode != "bwrap"
				want := []string{"/opt/kandev", ForwardCommand}
				if signals {
					want = append(want, "--signals")
				}
				want = append(want, "--port", "11434="+v.Forwards[0].Socket, "--", "agent", "--acp")
				if !slices.Equal(tail, want) {
					t.Fatalf("command tail %q, want %q", tail, want)
				}
			}
			if c.mode != "bwrap" {
				net := ""
				if j := slices.Index(args, "--network"); j >= 0 {
					net = args[j+1]
				}
				if net != c.containerNet {
					t.Fatalf("--network %q, want %q: %v", net, c.containerNet, args)
				}
			} else if cut := slices.Contains(args, "--unshare-net"); cut != (c.network == NetworkNone || c.noNetwork) {
				t.Fatalf("--unshare-net %v: %v", cut, args)
			}
		})
	}
	if _, err := Describe(Input{Mode: "docker", Worktree: "/w", Network: "bridge"}); err == nil {
		t.Fatal("an unknown network was accepted")
	}
	if _, err := Describe(Input{Mode: "docker", Worktree: "/w", Forwards: []int{1}}); err == nil {
		t.Fatal("a forward without its socket directory was accepted")
	}
}

// The host side passes each connection on its socket to the host's
// loopback port, both ways, and ends with its close.
func TestOpenForwardsReachTheHostLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "model says hi "+r.URL.Path)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	dir := t.TempDir()
	v, err := Describe(Input{Mode: "docker", Worktree: dir, SelfExe: "/opt/kandev", SessionID: "s2", Forwards: []int{p}, ForwardDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	stop, err := OpenForwards(v)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		c, err := net.Dial("unix", v.Forwards[0].Socket)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET /v1/%d HTTP/1.0\r\nHost: x\r\n\r\n", i)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		c.Close()
		if want := fmt.Sprintf("model says hi /v1/%d", i); string(b) != want {
			t.Fatalf("through the forward: %q, want %q", b, want)
		}
	}
	// A connection held open ends with the forward.
	held, err := net.Dial("unix", v.Forwards[0].Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	stop()
	if _, err := held.Read(make([]byte, 1)); err == nil {
		t.Fatal("a held connection outlived its forward")
	}
	if _, err := net.Dial("unix", v.Forwards[0].Socket); err == nil {
		t.Fatal("the socket still answers after close")
	}
}
