package hosts

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kandev/kandev/core/agent"
)

// killScript SIGKILLs, as the remote account, every process whose
// environment carries the session's marker (found in /proc, as
// agent.SessionProcs does locally; never pkill -f, which matches command
// lines), waits until none is left, and removes the session's socket.
const killScript = `m=%s; s=%s
found() {
  for e in /proc/[0-9]*/environ; do
    p=${e#/proc/}; p=${p%%/environ}
    [ "$p" = "$$" ] && continue
    if tr '\0' '\n' < "$e" 2>/dev/null | grep -qxF "$m"; then echo "$p"; fi
  done
}
i=0
while :; do
  ps=$(found)
  [ -z "$ps" ] && break
  [ $i -ge 100 ] && { echo "left: $ps" >&2; exit 1; }
  kill -KILL $ps 2>/dev/null
  i=$((i+1)); sleep 0.05
done
rm -f "$s"
`

// KillSession ends every process of the session on the host, and
// removes its container there first (a SIGKILLed docker client leaves
// its container running).
func (r *Remote) KillSession(ctx context.Context, sessionID, sock string) error {
	if sessionID == "" {
		return errors.New("no session id")
	}
	script := fmt.Sprintf(killScript, Quote(agent.SessionEnv+"="+sessionID), Quote(sock))
	if r.dir != "" {
		script = fmt.Sprintf(removeContainersScript, Quote(r.dir), Quote(sessionID)) + script
	}
	_, err := r.Pool.Script(ctx, r.Target, script)
	return err
}

// sweepScript is killScript for sessions an earlier daemon left running
// (killed with -9 before its teardown): for each session id, every
// process marked with it is SIGKILLed until none is left and the session's
// socket in DIR/run is removed; it prints how many processes it killed.
const sweepScript = `d=%s
found() {
  for e in /proc/[0-9]*/environ; do
    p=${e#/proc/}; p=${p%%/environ}
    [ "$p" = "$$" ] && continue
    if tr '\0' '\n' < "$e" 2>/dev/null | grep -qxF "$1"; then echo "$p"; fi
  done
}
n=0
for sid in %s; do
  %s
  i=0
  while :; do
    ps=$(found "%s=$sid")
    [ -z "$ps" ] && break
    [ $i -ge 100 ] && { echo "left: $ps" >&2; exit 1; }
    [ $i -eq 0 ] && for p in $ps; do n=$((n+1)); done
    kill -KILL $ps 2>/dev/null
    i=$((i+1)); sleep 0.05
  done
  rm -f "$d/run/$sid.sock"
done
echo "$n"
`

// SweepSessions ends on the host every process of the given sessions (by
// their marker, as KillSession does) and removes their sockets: the part
// on the host of the startup sweep after a daemon died without its
// teardown (ADR 0013 locally). It returns how many processes it killed.
func SweepSessions(ctx context.Context, p *Pool, t Target, dir string, sessionIDs []string) (int, error) {
	if len(sessionIDs) == 0 {
		return 0, nil
	}
	q := make([]string, len(sessionIDs))
	for i, id := range sessionIDs {
		q[i] = Quote(id)
	}
	out, err := p.Script(ctx, t, fmt.Sprintf(sweepScript, DirExpr(dir), strings.Join(q, " "), removeContainersLoop, agent.SessionEnv))
	if err != nil {
		return 0, err
	}
	var n int
	if _, err := fmt.Sscan(strings.TrimSpace(out), &n); err != nil {
		return 0, fmt.Errorf("sweep host %s: unexpected output %q", t.Name, out)
	}
	return n, nil
}
