package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/hosts"
	"github.com/kandev/kandev/core/workspace"
	"github.com/kandev/kandev/store"
)

// Hosts is the engine's hosts area (docs/hosts.md): the hosts themselves
// (api.HostClient's operations, which the daemon routes here: List, Get,
// Add, Edit, Remove, Check), a new task's host, placement on a host's
// slots (placement.go), a lost connection and the wait for the host
// (hostfaults.go), the remote launcher a run on a host takes (remoteFor),
// the host's side of a task's worktree (hostworktree.go) and of its
// sandbox (hostsandbox.go). Its fields are all it may touch: the kernel,
// its own state, and what other areas give it, each named.
//
// Locks: place.mu (placement.go) and faults.mu (hostfaults.go) are its
// own. A task's rt.mu may be held when either is taken (a run released
// under it frees a slot: releasedOnHost; a lost connection is handled
// under it: hostLostLocked). place.mu is held while placement reads the
// live runs and the task cache (hostOccupancy, waitersAhead), so it comes
// before their locks; faults.mu is a leaf.
type Hosts struct {
	k *kernel
	// ws is the workspaces' manager: a worktree gets on its host what it
	// gets here (hostSetup).
	ws *workspace.Manager

	// The area's part in hosts: the pool of master connections and the
	// cached hash of its own binary.
	hostPool     *hosts.Pool
	selfHashOnce sync.Once
	selfHashVal  string
	selfHashErr  error
	place        placement  // placement.go
	faults       hostFaults // hostfaults.go

	// What the other areas give it (compose.go):
	// may is the authorizer (authorize.go): who adds, edits, removes hosts.
	may func(a core.Actor, act Action, t core.Task) error
	// profiles lists the profiles (the roles area's, profiles.go): `host
	// check` looks for their commands.
	profiles func(ctx context.Context) ([]core.Profile, error)
	// held says why a task's queue may not be delivered now (turns.go): a
	// task held otherwise no longer waits for a slot.
	held func(t core.Task) string
	// worktreeOwner is the task whose worktree t works in (the workspaces
	// area, workspace.go): an auto task runs where that one does.
	worktreeOwner func(t core.Task) (core.Task, bool)
	// requeueOpenPrompt and endRunLocked are the runs' (turns.go, runs.go):
	// a turn a lost connection cut is queued again and its run ended.
	requeueOpenPrompt func(ctx context.Context, q store.Queries, taskID, sessionID string) error
	endRunLocked      func(run *liveRun, state core.SessionState, reason string)
}

// newHosts builds the hosts area over the kernel, with the pool of the
// hosts' ssh connections.
func newHosts(k *kernel, ws *workspace.Manager) *Hosts {
	ho := &Hosts{k: k, ws: ws}
	// The control sockets of the hosts' ssh connections, one per host.
	ho.hostPool = &hosts.Pool{Dir: filepath.Join(k.opts.Home.Dir, "ssh"), Config: k.opts.SSHConfig}
	if k.opts.Home.Dir != "" {
		// Masters a killed daemon of this home left behind.
		if n := ho.hostPool.Sweep(); n > 0 {
			k.log.Info("ended ssh connections an earlier daemon left", "count", n)
		}
	}
	return ho
}

// close ends the hosts' master connections (Engine.Close, last).
func (ho *Hosts) close() { ho.hostPool.Close() }

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

// List serves api.HostClient's ListHosts (wire.ListHosts).
func (ho *Hosts) List(ctx context.Context) ([]core.Host, error) {
	hs, err := ho.k.db.ListHosts(ctx)
	if err != nil {
		return nil, mapStoreErr(err, "hosts")
	}
	out := make([]core.Host, 0, len(hs))
	for _, h := range hs {
		ids, err := ho.k.db.TasksOnHost(ctx, h.Name)
		if err != nil {
			return nil, mapStoreErr(err, "host "+h.Name)
		}
		out = append(out, hostFromStore(h, len(ids)))
	}
	return out, nil
}

// Get serves api.HostClient's GetHost (wire.GetHost).
func (ho *Hosts) Get(ctx context.Context, name string) (core.Host, error) {
	h, err := ho.k.db.GetHost(ctx, name)
	if err != nil {
		return core.Host{}, mapStoreErr(err, "host "+name)
	}
	ids, err := ho.k.db.TasksOnHost(ctx, name)
	if err != nil {
		return core.Host{}, mapStoreErr(err, "host "+name)
	}
	return hostFromStore(h, len(ids)), nil
}

// Add serves api.HostClient's AddHost (wire.AddHost). Nothing is
// dialled: `host check` does that, so a host can be added before it is up.
func (ho *Hosts) Add(ctx context.Context, in api.HostInput) (core.Host, error) {
	if err := ho.may(core.ActorFrom(ctx), ActAddHost, core.Task{}); err != nil {
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
	if err := ho.k.db.InsertHost(ctx, h); err != nil {
		return core.Host{}, mapStoreErr(err, "host "+in.Name)
	}
	// Its slots are free: the runs waiting for one (--host auto) may take them.
	ho.hostSlotFreed()
	return hostFromStore(h, 0), nil
}

// Edit serves api.HostClient's EditHost (wire.EditHost; the right to add
// hosts is the right to edit them). A raised bound wakes the runs waiting
// for a slot.
func (ho *Hosts) Edit(ctx context.Context, name string, in api.HostEdit) (core.Host, error) {
	if err := ho.may(core.ActorFrom(ctx), ActAddHost, core.Task{}); err != nil {
		return core.Host{}, err
	}
	if in.MaxAgents != nil {
		if *in.MaxAgents < 0 {
			return core.Host{}, core.Errorf(core.CodeValidation, "--max-agents %d: use 0 (no bound) or more", *in.MaxAgents)
		}
		if err := ho.k.db.SetHostMaxAgents(ctx, name, *in.MaxAgents); err != nil {
			return core.Host{}, mapStoreErr(err, "host "+name)
		}
		ho.hostSlotFreed()
	}
	return ho.Get(ctx, name)
}

// Remove serves api.HostClient's RemoveHost (wire.RemoveHost): refused
// while unarchived tasks are on the host (their branches live there). The
// check and the delete are one transaction, so a create that placed a task
// meanwhile wins.
func (ho *Hosts) Remove(ctx context.Context, name string) (core.Host, error) {
	if err := ho.may(core.ActorFrom(ctx), ActRemoveHost, core.Task{}); err != nil {
		return core.Host{}, err
	}
	var h store.Host
	var busy []string
	_, err := ho.k.tx(ctx, func(tx *store.Tx, _ *changes) error {
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
		ho.hostPool.Disconnect(t)
	}
	return hostFromStore(h, 0), nil
}

// Check serves api.HostClient's CheckHost (wire.CheckHost).
func (ho *Hosts) Check(ctx context.Context, name string) (api.HostCheck, error) {
	h, err := ho.k.db.GetHost(ctx, name)
	if err != nil {
		return api.HostCheck{}, mapStoreErr(err, "host "+name)
	}
	t, err := hostTarget(h)
	if err != nil {
		return api.HostCheck{}, core.Errorf(core.CodeValidation, "host %s: %v", name, err)
	}
	profs, err := ho.profiles(ctx)
	if err != nil {
		return api.HostCheck{}, mapStoreErr(err, "profiles")
	}
	var cmds []api.HostCommand
	for _, p := range profs {
		if p.Command != core.SelfCommand { // the mock agent is kandev itself
			cmds = append(cmds, api.HostCommand{Profile: p.Name, Command: p.Command})
		}
	}
	hash, _ := ho.selfHash()
	res := hosts.Check(ctx, ho.hostPool, t, h.Dir, cmds, hash)
	res.MaxAgents = h.MaxAgents
	res.Running = ho.runningOnHost(name)
	res.FreeSlots = -1
	if h.MaxAgents > 0 {
		res.FreeSlots = max(0, h.MaxAgents-res.Running)
	}
	return res, nil
}

// connectHost brings up the host's shared connection; its error is
// ssh's own (hosts.UnreachableError) or the host's record missing.
func (ho *Hosts) connectHost(ctx context.Context, name string) error {
	h, err := ho.k.db.GetHost(ctx, name)
	if err != nil {
		return mapStoreErr(err, "host "+name)
	}
	t, err := hostTarget(h)
	if err != nil {
		return err
	}
	return ho.hostPool.Connect(ctx, t)
}

// runningOnHost counts the live runs of tasks placed on the host.
func (ho *Hosts) runningOnHost(name string) int {
	runs := ho.k.live.runs()
	ids := make([]string, 0, len(runs))
	for _, r := range runs {
		ids = append(ids, r.rt.id)
	}
	n := 0
	for _, id := range ids {
		if t, ok := ho.k.cached(id); ok && t.Host == name {
			n++
		}
	}
	return n
}

// selfHash is the SHA-256 of this daemon's binary, read once: it decides
// whether a host's copy of kandev is current.
func (ho *Hosts) selfHash() (string, error) {
	ho.selfHashOnce.Do(func() { ho.selfHashVal, ho.selfHashErr = hosts.FileSHA256(ho.k.opts.SelfExe) })
	return ho.selfHashVal, ho.selfHashErr
}

// taskHost resolves a new task's host: the one asked for ("local" for
// this machine, "auto" for placement), else its parent's, else for a
// top-level task its profile's host, else the configuration's. It must
// exist.
func (ho *Hosts) taskHost(ctx context.Context, asked string, parent core.Task, prof core.Profile) (string, error) {
	asked = strings.TrimSpace(asked)
	if asked == "" && parent.ID == "" {
		asked = strings.TrimSpace(prof.Host)
	}
	if asked == "" && parent.ID == "" {
		asked = strings.TrimSpace(ho.k.configValue("host"))
	}
	switch asked {
	case "":
		return parent.Host, nil
	case hostLocal:
		return "", nil
	case hostAuto:
		// Placed at its first run (placement.go); a host must exist.
		hs, err := ho.k.db.ListHosts(ctx)
		if err != nil {
			return "", mapStoreErr(err, "hosts")
		}
		if len(hs) == 0 {
			return "", core.Errorf(core.CodeValidation, "--host auto: there are no hosts (kandev host add)")
		}
		return hostAuto, nil
	}
	if _, err := ho.k.db.GetHost(ctx, asked); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return "", core.Errorf(core.CodeValidation, "unknown host %s (see kandev host list)", asked)
		}
		return "", mapStoreErr(err, "host "+asked)
	}
	return asked, nil
}

// checkProfileHost refuses a profile whose default host is no host: a
// name not added (a host removed later makes its tasks' create say so).
func (ho *Hosts) checkProfileHost(ctx context.Context, p core.Profile) error {
	switch h := strings.TrimSpace(p.Host); h {
	case "", hostLocal, hostAuto:
		return nil
	default:
		if _, err := ho.k.db.GetHost(ctx, h); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return core.Errorf(core.CodeValidation, "profile %s: unknown host %s (see kandev host list)", p.Name, h)
			}
			return mapStoreErr(err, "host "+h)
		}
		return nil
	}
}

// remoteFor connects to the task's host and returns the launcher that runs
// its agent there; its error is ssh's own (hosts.UnreachableError) or the
// host's record missing.
func (ho *Hosts) remoteFor(ctx context.Context, t core.Task) (*hosts.Remote, error) {
	if err := ho.connectHost(ctx, t.Host); err != nil {
		return nil, err
	}
	h, err := ho.k.db.GetHost(ctx, t.Host)
	if err != nil {
		return nil, mapStoreErr(err, "host "+t.Host)
	}
	target, err := hostTarget(h)
	if err != nil {
		return nil, err
	}
	sum, err := ho.selfHash()
	if err != nil {
		return nil, fmt.Errorf("hash of kandev's binary: %w", err)
	}
	r := &hosts.Remote{Pool: ho.hostPool, Target: target, Dir: h.Dir, SelfExe: ho.k.opts.SelfExe, SelfHash: sum,
		Socket: ho.k.opts.Socket, Key: t.ID}
	if w := t.Workspace; w != nil && w.Dir != "" && (w.Mode == core.WorkspaceWorktree || w.Mode == core.WorkspaceInherit) {
		r.Worktree = hosts.Worktree{Repo: w.Repo, Dir: w.Dir, Branch: w.Branch}
		if rel, err := filepath.Rel(w.Dir, t.CWD); err == nil && !strings.HasPrefix(rel, "..") {
			r.RelDir = rel
		}
		r.Setup = ho.hostSetup(ctx, *w)
	}
	return r, nil
}
