package relay

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// waitSocket waits until path is a socket (Serve renames it in place once
// it listens).
func waitSocket(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never listened", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Two MCP connections in the pod, each carried by a spare of its own to
// the daemon's socket, both ways, and closed through.
func TestRelayCarriesConnections(t *testing.T) {
	dir, err := os.MkdirTemp("", "relay")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	mcpSock, ctrlSock, daemonSock := filepath.Join(dir, "mcp.sock"), filepath.Join(dir, "ctrl.sock"), filepath.Join(dir, "d.sock")
	// The daemon: answers each line with "re: " and the line.
	dl, err := net.Listen("unix", daemonSock)
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Close()
	go func() {
		for {
			c, err := dl.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				s := bufio.NewScanner(c)
				for s.Scan() {
					io.WriteString(c, "re: "+s.Text()+"\n")
				}
			}()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Serve(ctx, mcpSock, ctrlSock)
	waitSocket(t, mcpSock)

	// spare stands for one exec stream: Spare at the pod's end, Daemon at
	// the daemon's, two pipes between them.
	spare := func() <-chan struct{} {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		taken := make(chan struct{})
		go func() { Spare(ctx, ctrlSock, inR, outW); outW.Close(); inR.Close() }()
		go Daemon(outR, inW, daemonSock, taken)
		return taken
	}
	for i, line := range []string{"initialize", "tools/list"} {
		taken := spare()
		c, err := net.Dial("unix", mcpSock)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-taken:
		case <-time.After(time.Minute):
			t.Fatalf("connection %d: no spare taken", i)
		}
		io.WriteString(c, line+"\n")
		got, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || got != "re: "+line+"\n" {
			t.Fatalf("connection %d: %q, %v", i, got, err)
		}
		c.(*net.UnixConn).CloseWrite()
		// The daemon's end closes through: EOF in the pod.
		if rest, err := io.ReadAll(c); err != nil || len(rest) != 0 {
			t.Fatalf("connection %d after close: %q, %v", i, rest, err)
		}
		c.Close()
	}
}
