package engine

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/hosts"
	"github.com/kandev/kandev/store"
)

var _ core.HostClient = (*Engine)(nil)

// Host names a task can be given that are no host: "local" is this machine
// (a child of a task on a host that runs here), "auto" is placement.
const (
	hostLocal = "local"
	hostAuto  = "auto"
)

func hostFromStore(h store.Host, tasks int) core.Host {
	return core.Host{Name: h.Name, SSH: h.SSH, Identity: h.Identity, Dir: h.Dir, MaxAgents: h.MaxAgents,
		Tasks: tasks, CreatedAt: h.CreatedAt}
}

func hostTarget(h store.Host) (hosts.Target, error) {
	d, err := hosts.ParseDest(h.SSH)
	if err != nil {
		return hosts.Target{}, err
	}
	return hosts.Target{Name: h.Name, Dest: d, Identity: h.Identity}, nil
}

// ListHosts implements core.HostClient.
func (e *Engine) ListHosts(ctx context.Context) ([]core.Host, error) {
	hs, err := e.db.ListHosts(ctx)
	if err != nil {
		return nil, mapStoreErr(err, "hosts")
	}
	out := make([]core.Host, 0, len(hs))
	for _, h := range hs {
		ids, err := e.db.TasksOnHost(ctx, h.Name)
		if err != nil {
			return nil, mapStoreErr(err, "host "+h.Name)
		}
		out = append(out, hostFromStore(h, len(ids)))
	}
	return out, nil
}

// GetHost implements core.HostClient.
func (e *Engine) GetHost(ctx context.Context, name string) (core.Host, error) {
	h, err := e.db.GetHost(ctx, name)
	if err != nil {
		return core.Host{}, mapStoreErr(err, "host "+name)
	}
	ids, err := e.db.TasksOnHost(ctx, name)
	if err != nil {
		return core.Host{}, mapStoreErr(err, "host "+name)
	}
	return hostFromStore(h, len(ids)), nil
}

// AddHost implements core.HostClient. Nothing is dialled: `host check`
// does that, so a host can be added before it is up.
func (e *Engine) AddHost(ctx context.Context, in core.HostInput) (core.Host, error) {
	if err := e.may(core.ActorFrom(ctx), ActAddHost, core.Task{}); err != nil {
		return core.Host{}, err
	}
	if err := validName("host", in.Name); err != nil {
		return core.Host{}, err
	}
	if in.Name == hostLocal || in.Name == hostAuto {
		return core.Host{}, core.Errorf(core.CodeValidation, "%q is reserved: --host %s means %s", in.Name, in.Name,
			map[string]string{hostLocal: "this machine", hostAuto: "any host with a free slot"}[in.Name])
	}
	if _, err := hosts.ParseDest(in.SSH); err != nil {
		return core.Host{}, core.Errorf(core.CodeValidation, "--ssh: %v", err)
	}
	if in.Identity != "" && !filepath.IsAbs(in.Identity) {
		return core.Host{}, core.Errorf(core.CodeValidation, "identity file %q must be an absolute path", in.Identity)
	}
	if strings.ContainsFunc(in.Identity+in.Dir, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return core.Host{}, core.Errorf(core.CodeValidation, "identity and dir must not hold control characters")
	}
	if in.MaxAgents < 0 {
		return core.Host{}, core.Errorf(core.CodeValidation, "--max-agents %d: use 0 (no bound) or more", in.MaxAgents)
	}
	h := store.Host{Name: in.Name, SSH: in.SSH, Identity: in.Identity, Dir: in.Dir, MaxAgents: in.MaxAgents,
		CreatedAt: time.Now().UTC()}
	if err := e.db.InsertHost(ctx, h); err != nil {
		return core.Host{}, mapStoreErr(err, "host "+in.Name)
	}
	// Its slots are free: the runs waiting for one (--host auto) may take them.
	e.hostSlotFreed()
	return hostFromStore(h, 0), nil
}

// EditHost implements core.HostClient (the right to add hosts is the
// right to edit them). A raised bound wakes the runs waiting for a slot.
func (e *Engine) EditHost(ctx context.Context, name string, in core.HostEdit) (core.Host, error) {
	if err := e.may(core.ActorFrom(ctx), ActAddHost, core.Task{}); err != nil {
		return core.Host{}, err
	}
	if in.MaxAgents != nil {
		if *in.MaxAgents < 0 {
			return core.Host{}, core.Errorf(core.CodeValidation, "--max-agents %d: use 0 (no bound) or more", *in.MaxAgents)
		}
		if err := e.db.SetHostMaxAgents(ctx, name, *in.MaxAgents); err != nil {
			return core.Host{}, mapStoreErr(err, "host "+name)
		}
		e.hostSlotFreed()
	}
	return e.GetHost(ctx, name)
}

// RemoveHost implements core.HostClient: refused while unarchived tasks
// are on the host (their branches live there). The check and the delete
// are one transaction, so a create that placed a task meanwhile wins.
func (e *Engine) RemoveHost(ctx context.Context, name string) (core.Host, error) {
	if err := e.may(core.ActorFrom(ctx), ActRemoveHost, core.Task{}); err != nil {
		return core.Host{}, err
	}
	var h store.Host
	var busy []string
	_, err := e.tx(ctx, func(tx *store.Tx, _ *changes) error {
		var err error
		if h, err = tx.GetHost(ctx, name); err != nil {
			return err
		}
		if busy, err = tx.TasksOnHost(ctx, name); err != nil || len(busy) > 0 {
			return err
		}
		return tx.DeleteHost(ctx, name)
	})
	if err != nil {
		return core.Host{}, mapStoreErr(err, "host "+name)
	}
	if len(busy) > 0 {
		return core.Host{}, core.Errorf(core.CodeConflict, "host %s has tasks on it (%s); archive them first", name, strings.Join(busy, ", "))
	}
	if t, err := hostTarget(h); err == nil {
		e.hostPool.Disconnect(t)
	}
	return hostFromStore(h, 0), nil
}

// CheckHost implements core.HostClient.
func (e *Engine) CheckHost(ctx context.Context, name string) (core.HostCheck, error) {
	h, err := e.db.GetHost(ctx, name)
	if err != nil {
		return core.HostCheck{}, mapStoreErr(err, "host "+name)
	}
	t, err := hostTarget(h)
	if err != nil {
		return core.HostCheck{}, core.Errorf(core.CodeValidation, "host %s: %v", name, err)
	}
	profs, err := e.ListProfiles(ctx)
	if err != nil {
		return core.HostCheck{}, mapStoreErr(err, "profiles")
	}
	var cmds []core.HostCommand
	for _, p := range profs {
		if p.Command != core.SelfCommand { // the mock agent is kandev itself
			cmds = append(cmds, core.HostCommand{Profile: p.Name, Command: p.Command})
		}
	}
	hash, _ := e.selfHash()
	res := hosts.Check(ctx, e.hostPool, t, h.Dir, cmds, hash)
	res.MaxAgents = h.MaxAgents
	res.Running = e.runningOnHost(name)
	res.FreeSlots = -1
	if h.MaxAgents > 0 {
		res.FreeSlots = max(0, h.MaxAgents-res.Running)
	}
	return res, nil
}

// connectHost brings up the host's shared connection; its error is
// ssh's own (hosts.UnreachableError) or the host's record missing.
func (e *Engine) connectHost(ctx context.Context, name string) error {
	h, err := e.db.GetHost(ctx, name)
	if err != nil {
		return mapStoreErr(err, "host "+name)
	}
	t, err := hostTarget(h)
	if err != nil {
		return err
	}
	return e.hostPool.Connect(ctx, t)
}

// runningOnHost counts the live runs of tasks placed on the host.
func (e *Engine) runningOnHost(name string) int {
	runs := e.live.runs()
	ids := make([]string, 0, len(runs))
	for _, r := range runs {
		ids = append(ids, r.rt.id)
	}
	n := 0
	for _, id := range ids {
		if t, ok := e.cached(id); ok && t.Host == name {
			n++
		}
	}
	return n
}

// selfHash is the SHA-256 of this daemon's binary, read once: it decides
// whether a host's copy of kandev is current.
func (e *Engine) selfHash() (string, error) {
	e.selfHashOnce.Do(func() { e.selfHashVal, e.selfHashErr = hosts.FileSHA256(e.opts.SelfExe) })
	return e.selfHashVal, e.selfHashErr
}

// taskHost resolves a new task's host: the one asked for ("local" for
// this machine, "auto" for placement), else its parent's, else for a
// top-level task its profile's host, else the configuration's. It must
// exist.
func (e *Engine) taskHost(ctx context.Context, asked string, parent core.Task, prof core.Profile) (string, error) {
	asked = strings.TrimSpace(asked)
	if asked == "" && parent.ID == "" {
		asked = strings.TrimSpace(prof.Host)
	}
	if asked == "" && parent.ID == "" {
		asked = strings.TrimSpace(e.configValue("host"))
	}
	switch asked {
	case "":
		return parent.Host, nil
	case hostLocal:
		return "", nil
	case hostAuto:
		// Placed at its first run (placement.go); a host must exist.
		hs, err := e.db.ListHosts(ctx)
		if err != nil {
			return "", mapStoreErr(err, "hosts")
		}
		if len(hs) == 0 {
			return "", core.Errorf(core.CodeValidation, "--host auto: there are no hosts (kandev host add)")
		}
		return hostAuto, nil
	}
	if _, err := e.db.GetHost(ctx, asked); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return "", core.Errorf(core.CodeValidation, "unknown host %s (see kandev host list)", asked)
		}
		return "", mapStoreErr(err, "host "+asked)
	}
	return asked, nil
}

// hostState is the engine's part in hosts: the pool of master connections
// and the cached hash of its own binary.
type hostState struct {
	hostPool     *hosts.Pool
	selfHashOnce sync.Once
	selfHashVal  string
	selfHashErr  error
	place        placement  // placement.go
	faults       hostFaults // hostfaults.go
}

// checkProfileHost refuses a profile whose default host is no host: a
// name not added (a host removed later makes its tasks' create say so).
func (e *Engine) checkProfileHost(ctx context.Context, p core.Profile) error {
	switch h := strings.TrimSpace(p.Host); h {
	case "", hostLocal, hostAuto:
		return nil
	default:
		if _, err := e.db.GetHost(ctx, h); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return core.Errorf(core.CodeValidation, "profile %s: unknown host %s (see kandev host list)", p.Name, h)
			}
			return mapStoreErr(err, "host "+h)
		}
		return nil
	}
}
