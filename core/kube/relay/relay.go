// Package relay carries the MCP connections of an agent in a pod to the
// daemon without a port open to the cluster (issue 42): the agent's
// `kandev mcp` dials a unix socket in the pod, where Serve listens; the
// daemon keeps a spare exec stream open into the pod (Spare at its other
// end, waiting on Serve's control socket); Serve pairs each MCP connection
// with a waiting spare, the spare says so with one byte on its stdout, and
// from then on the exec stream carries the connection's bytes both ways
// to the daemon's mcp.sock. The daemon opens the next spare as soon as
// one is taken. Only the pod's own unix sockets and the API server's exec
// stream are involved: nothing listens on a network.
//
// This package has no Kubernetes dependency: it runs inside the pod as
// `kandev kube-relay`.
package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Taken is the byte a spare writes once it carries a connection.
const Taken = 'G'

// SpareWait bounds how long an MCP connection waits for a spare.
const SpareWait = 30 * time.Second

// Serve listens on mcpSock for the agent's MCP connections and on ctrlSock
// for spares, and pairs them, until ctx ends.
func Serve(ctx context.Context, mcpSock, ctrlSock string) error {
	for _, s := range []string{mcpSock, ctrlSock} {
		_ = os.Remove(s)
	}
	ctrl, err := net.Listen("unix", ctrlSock)
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	defer ctrl.Close()
	// The MCP socket last: once it exists (what the pod's shell waits
	// for), spares can already be taken.
	mcp, err := net.Listen("unix", mcpSock+".part")
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	if err := os.Rename(mcpSock+".part", mcpSock); err != nil {
		mcp.Close()
		return fmt.Errorf("relay: %w", err)
	}
	defer mcp.Close()
	go func() {
		<-ctx.Done()
		ctrl.Close()
		mcp.Close()
	}()
	spares := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ctrl.Accept()
			if err != nil {
				return
			}
			select {
			case spares <- c:
			default:
				c.Close() // more spares than anyone needs
			}
		}
	}()
	for {
		c, err := mcp.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("relay: %w", err)
		}
		go pair(ctx, c, spares)
	}
}

func pair(ctx context.Context, c net.Conn, spares <-chan net.Conn) {
	t := time.NewTimer(SpareWait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c.Close()
			return
		case <-t.C:
			c.Close()
			return
		case s := <-spares:
			// A spare whose exec stream went meanwhile fails this write.
			if _, err := s.Write([]byte{Taken}); err != nil {
				s.Close()
				continue
			}
			splice(c, s)
			return
		}
	}
}

// Spare waits on ctrlSock until Serve gives it a connection, says so with
// Taken on out, and then carries in to the connection and the connection
// to out. It returns once the pod's end has ended its writes (the
// connection's EOF): the exec stream then ends, which is how the daemon's
// end learns the connection is over. (Bytes the daemon sends after the
// pod's end half-closed are dropped: kandev mcp closes whole.)
func Spare(ctx context.Context, ctrlSock string, in io.Reader, out io.Writer) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", ctrlSock)
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	defer c.Close()
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil || b[0] != Taken {
		return errors.New("relay: the pod's relay went before a connection came")
	}
	if _, err := out.Write(b); err != nil {
		return err
	}
	go func() {
		_, _ = io.Copy(c, in)
		closeWrite(c)
	}()
	_, err = io.Copy(out, c)
	return err
}

// Daemon is the daemon's end of a taken spare: it waits for Taken on
// fromPod, then dials daemonSock and carries bytes both ways until both
// ends are done. It returns once the spare was taken (taken is closed) or
// failed; the carrying goes on in the background.
func Daemon(fromPod io.Reader, toPod io.WriteCloser, daemonSock string, taken chan<- struct{}) error {
	b := make([]byte, 1)
	if _, err := io.ReadFull(fromPod, b); err != nil {
		return err
	}
	if b[0] != Taken {
		return fmt.Errorf("relay: the spare said %q", b[0])
	}
	close(taken)
	c, err := net.Dial("unix", daemonSock)
	if err != nil {
		toPod.Close()
		return fmt.Errorf("relay: the daemon's socket: %w", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(toPod, c)
		toPod.Close()
	}()
	_, _ = io.Copy(c, fromPod)
	closeWrite(c)
	wg.Wait()
	c.Close()
	return nil
}

func splice(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		closeWrite(dst)
	}
	go cp(a, b)
	go cp(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}

func closeWrite(c net.Conn) {
	if u, ok := c.(*net.UnixConn); ok {
		_ = u.CloseWrite()
		return
	}
	c.Close()
}
