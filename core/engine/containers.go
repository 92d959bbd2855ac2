package engine

import (
	"context"
	"os/exec"
	"strings"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/sandbox"
)

// SweepContainers removes, at daemon start, the containers of sessions
// that ended while no daemon watched them (a kill -9): every container
// labelled kandev.session whose session is not live in this home. A
// container of another home's live session is left alone. It runs after
// Recover, which has ended every session the dead daemon left live.
func (rs *Runs) SweepContainers(ctx context.Context) {
	for _, eng := range []string{core.SandboxDocker, core.SandboxPodman} {
		if _, err := exec.LookPath(eng); err != nil {
			continue
		}
		var stale []string
		for id, sid := range rs.containerSessions(ctx, eng) {
			if s, err := rs.k.db.GetSession(ctx, sid); err == nil && !core.SessionState(s.State).Live() {
				stale = append(stale, id)
			}
		}
		if len(stale) > 0 {
			rs.k.log.Info("remove containers of ended sessions", "engine", eng, "containers", stale)
			agent.RemoveContainers(eng, stale...)
		}
	}
}

// containerSessions maps kandev's containers, running or not, to their
// sessions; nothing when the engine does not answer in a few seconds.
func (rs *Runs) containerSessions(ctx context.Context, eng string) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, eng, "ps", "--all", "--filter", "label="+sandbox.LabelSession,
		"--format", labelFormat(eng)).Output()
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if id, sid, ok := strings.Cut(strings.TrimSpace(line), " "); ok && sid != "" {
			m[id] = sid
		}
	}
	return m
}

// labelFormat is the ps template of a container's id and session: docker
// has a Label method, podman (4.3) only the Labels map, and rejects the
// other's template outright.
func labelFormat(eng string) string {
	if eng == core.SandboxPodman {
		return `{{.ID}} {{index .Labels "` + sandbox.LabelSession + `"}}`
	}
	return `{{.ID}} {{.Label "` + sandbox.LabelSession + `"}}`
}
