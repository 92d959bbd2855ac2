package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/api"
	"github.com/kandev/kandev/core/capability"
	"github.com/kandev/kandev/core/textsafe"
	"github.com/kandev/kandev/store"
)

// createPlan is what a create will make, decided before anything is
// written: the input checked, the parent, profile, assignee, host, sandbox
// and workspace resolved. commitCreate writes it.
type createPlan struct {
	actor core.Actor
	// key is the idempotency key, recorded with the row.
	key string
	// row is the task's row but for its id, drawn at commit.
	row store.Task
	// cwd is the resolved working directory: the row's again when a
	// worktree attempt is undone.
	cwd      string
	ws       wsPlan
	assignee core.Ref
	budget   *core.Amount
	budgetBy string
	blockers []string
	prompt   string
	start    bool
	// source is the tracker issue it is created from, nil for none.
	source *store.TaskSource
}

// planCreate checks a create and resolves what it will make. It reads the
// store and the file system and writes nothing.
func (ts *Tasks) planCreate(ctx context.Context, actor core.Actor, in api.CreateTaskInput) (createPlan, error) {
	title, titlePending, err := createTitle(in)
	if err != nil {
		return createPlan{}, err
	}
	source, err := ts.k.planSource(ctx, in)
	if err != nil {
		return createPlan{}, err
	}
	budget, budgetBy, err := ts.spend.createBudget(actor, in)
	if err != nil {
		return createPlan{}, err
	}
	parent, err := ts.createParent(ctx, in.ParentID)
	if err != nil {
		return createPlan{}, err
	}
	prof, err := ts.createProfile(ctx, in, parent)
	if err != nil {
		return createPlan{}, err
	}
	cwd, err := createCWD(in, parent)
	if err != nil {
		return createPlan{}, err
	}
	ws, err := ts.workspaces.planWorkspace(ctx, in, parent, cwd)
	if err != nil {
		return createPlan{}, err
	}
	assignee, prof, err := ts.createAssignee(ctx, in, prof)
	if err != nil {
		return createPlan{}, err
	}
	host, err := ts.hosts.taskHost(ctx, in.Host, parent, prof)
	if err != nil {
		return createPlan{}, err
	}
	sandboxMode, err := ts.runs.resolveSandbox(ctx, in, parent, prof, host)
	if err != nil {
		return createPlan{}, err
	}
	if err := hostSandboxErr(host, sandboxMode); err != nil {
		return createPlan{}, err
	}
	if in.Surface != "" {
		if _, err := capability.ParseSurface(in.Surface); err != nil || in.Surface == string(capability.External) {
			return createPlan{}, core.Errorf(core.CodeValidation, "surface %q: a task's sessions take kanban-task, office-task or configuration", in.Surface)
		}
	}
	var blockers []string
	for _, b := range in.BlockedBy {
		bt, err := ts.k.task(ctx, b)
		if err != nil {
			return createPlan{}, core.Errorf(core.CodeValidation, "blocker %s: %s", b, err.Error())
		}
		blockers = append(blockers, bt.ID)
	}
	// Who handed it over ("back" returns it there): the person who created
	// it, or the task whose agent created it, which then signs it off.
	handedBy := core.TaskRef(actor.TaskID).String()
	if actor.Kind != core.ActorAgent {
		handedBy = ts.k.handerOf(actor)
	}
	now := time.Now().UTC()
	row := store.Task{
		Title: title, Description: strings.TrimSpace(in.Description), ParentID: parent.ID, CWD: filepath.Clean(cwd),
		Profile: prof.Name, Status: string(core.StatusTodo), Autopilot: in.Autopilot, Sandbox: sandboxMode, CreatedBy: actor.String(),
		CreatedAt: now, UpdatedAt: now, TitlePending: titlePending,
		Assignee: assignee.String(), HandedBy: handedBy, Surface: in.Surface, Host: host,
	}
	return createPlan{
		actor: actor, key: in.IdempotencyKey, row: row, cwd: cwd, ws: ws, assignee: assignee,
		budget: budget, budgetBy: budgetBy, blockers: blockers, prompt: strings.TrimSpace(in.Prompt), start: in.Start,
		source: source,
	}, nil
}

// createTitle is a create's title: the one given, else a placeholder from
// the prompt's (or description's) first line, which titlePending marks.
func createTitle(in api.CreateTaskInput) (title string, titlePending bool, err error) {
	title = strings.TrimSpace(in.Title)
	if title == "" {
		first := firstLine(in.Prompt)
		if first == "" {
			first = firstLine(in.Description)
		}
		if first == "" {
			return "", false, core.Errorf(core.CodeValidation, "a task needs a title (or a prompt to derive a placeholder title from)")
		}
		// A placeholder is derived, not given: clean it rather than refuse.
		title, titlePending = truncateRunes(strings.TrimSpace(textsafe.Line(first)), 60), true
		if title == "" {
			return "", false, core.Errorf(core.CodeValidation, "a task needs a title (or a prompt to derive a placeholder title from)")
		}
	}
	if err := checkTitle(title); err != nil {
		return "", false, err
	}
	if utf8.RuneCountInString(title) > maxTitle {
		return "", false, core.Errorf(core.CodeValidation, "title is %d characters; keep it to %d at most", utf8.RuneCountInString(title), maxTitle)
	}
	return title, titlePending, nil
}

// createParent is a create's parent task (the zero task when top-level),
// which must exist and not be archived.
func (ts *Tasks) createParent(ctx context.Context, id string) (core.Task, error) {
	if id == "" {
		return core.Task{}, nil
	}
	parent, err := ts.k.task(ctx, id)
	if err != nil {
		if core.CodeOf(err) == core.CodeNotFound {
			return core.Task{}, core.Errorf(core.CodeValidation, "parent task %s does not exist", id)
		}
		return core.Task{}, err
	}
	if parent.Archived {
		return core.Task{}, core.Errorf(core.CodeValidation, "parent task %s is archived; only a task that is not archived can take children", parent.ID)
	}
	return parent, nil
}

// createProfile is the profile a create names, else its parent's, else the
// default one (ADR 0038).
func (ts *Tasks) createProfile(ctx context.Context, in api.CreateTaskInput, parent core.Task) (core.Profile, error) {
	profileName := strings.TrimSpace(in.Profile)
	if profileName == "" {
		profileName = parent.Profile
	}
	if profileName == "" {
		var err error
		if profileName, err = ts.roles.defaultProfile(ctx); err != nil {
			return core.Profile{}, err
		}
	}
	prof, err := ts.roles.profile(ctx, profileName)
	if err != nil {
		if core.CodeOf(err) == core.CodeNotFound {
			return core.Profile{}, core.Errorf(core.CodeValidation, "unknown profile %s (see kandev profile list)", profileName)
		}
		return core.Profile{}, err
	}
	if in.Autopilot {
		if err := core.CheckAutopilotProfile(prof); err != nil {
			return core.Profile{}, err
		}
	}
	return prof, nil
}

// createCWD is a create's working directory: the one given, else the
// parent's, else the caller's; absolute, existing, and resolved.
func createCWD(in api.CreateTaskInput, parent core.Task) (string, error) {
	cwd := in.CWD
	if cwd == "" {
		cwd = parent.CWD
	}
	if cwd == "" {
		var err error
		if cwd, err = os.Getwd(); err != nil {
			return "", core.Errorf(core.CodeInternal, "working directory: %v", err)
		}
	}
	if !filepath.IsAbs(cwd) {
		return "", core.Errorf(core.CodeValidation, "working directory %q must be an absolute path", cwd)
	}
	if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
		return "", core.Errorf(core.CodeValidation, "working directory %s does not exist or is not a directory", cwd)
	}
	// Stored resolved, as every path kandev compares (ADR 0042).
	if real, err := core.RealPath(cwd); err == nil {
		cwd = real
	}
	return cwd, nil
}

// createAssignee is a create's assignee: a named role or person, else the
// profile's own role. A role runs its own profile, which it returns.
func (ts *Tasks) createAssignee(ctx context.Context, in api.CreateTaskInput, prof core.Profile) (core.Ref, core.Profile, error) {
	assignee := core.RoleRef(prof.Name)
	if strings.TrimSpace(in.Assignee) == "" {
		return assignee, prof, nil
	}
	assignee, err := ts.roles.lookupAssignee(ctx, in.Assignee)
	if err != nil {
		return core.Ref{}, core.Profile{}, err
	}
	if assignee.IsRole() {
		r, err := ts.roles.roleOf(ctx, assignee.Name)
		if err != nil {
			return core.Ref{}, core.Profile{}, core.Errorf(core.CodeNotFound, "%v", err)
		}
		if in.Profile != "" && r.Profile != prof.Name {
			return core.Ref{}, core.Profile{}, core.Errorf(core.CodeValidation, "role %s runs profile %s, not %s; drop --profile or pick another assignee", r.Name, r.Profile, prof.Name)
		}
		if prof, err = ts.roles.profile(ctx, r.Profile); err != nil {
			return core.Ref{}, core.Profile{}, core.Errorf(core.CodeValidation, "role %s runs profile %s, which does not exist", r.Name, r.Profile)
		}
		if in.Autopilot {
			if err := core.CheckAutopilotProfile(prof); err != nil {
				return core.Ref{}, core.Profile{}, err
			}
		}
	}
	return assignee, prof, nil
}

// commitCreate makes what planCreate decided: the worktree, then the row
// with its key, budget, blockers and first queue item in one transaction,
// and announces it. It returns the new task's id; errKeyUsed when a
// concurrent create with the same key won.
func (ts *Tasks) commitCreate(ctx context.Context, p createPlan) (string, error) {
	row := p.row
	var created changes
	var err error
	ts.workspaces.createBegin()
	for attempt := 0; ; attempt++ {
		row.ID = core.NewID()
		// The worktree is made before the row so that a task that cannot
		// have one is refused with git's reason, and undone if the row fails.
		if err := ts.workspaces.makeWorktree(ctx, p.ws, &row); err != nil {
			ts.workspaces.createEnd()
			return "", err
		}
		created, err = ts.k.tx(ctx, func(tx *store.Tx, c *changes) error {
			c.touch(row.ID)
			if err := insertCreateTx(ctx, tx, p, row); err != nil {
				return err
			}
			return ts.k.claimSourceTx(ctx, tx, p.source, row.ID, row.CreatedAt)
		})
		if err != nil {
			ts.workspaces.dropWorktree(ctx, row)
			row.CWD = filepath.Clean(p.cwd)
		}
		if errors.Is(err, store.ErrConflict) && attempt < 5 {
			continue // id collision: draw again
		}
		break
	}
	ts.workspaces.createEnd()
	if errors.Is(err, errKeyUsed) {
		return "", err
	}
	if err != nil {
		return "", mapStoreErr(err, "task")
	}
	ts.k.announce(created)
	return row.ID, nil
}

// insertCreateTx writes a planned create's row and what goes with it.
func insertCreateTx(ctx context.Context, tx *store.Tx, p createPlan, row store.Task) error {
	now, actor, key := row.CreatedAt, p.actor, p.key
	if p.assignee.IsRoleNamed(row.Profile) {
		if err := tx.EnsureImplicitRole(ctx, row.Profile, now); err != nil {
			return err
		}
	}
	if row.Host != "" && row.Host != hostAuto {
		// In the transaction: a host removed since taskHost looked
		// cannot get a task (RemoveHost checks in one too).
		if _, err := tx.GetHost(ctx, row.Host); err != nil {
			return err
		}
	}
	if err := tx.InsertTask(ctx, row); err != nil {
		return err
	}
	if key != "" {
		if err := tx.InsertCreateKey(ctx, actor.String(), key, row.ID, now); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return errKeyUsed // a concurrent create with the key won
			}
			return err
		}
	}
	if err := setCreateBudgetTx(ctx, tx, row.ID, p.budget, p.budgetBy); err != nil {
		return err
	}
	for _, b := range p.blockers {
		if err := tx.AddBlocker(ctx, row.ID, b); err != nil {
			return err
		}
	}
	// A start is recorded with the create (startMeta on what it
	// queues), so a crash before the start itself still starts
	// the task at the next daemon start.
	meta := ""
	if p.start {
		meta = startMeta
	}
	if p.prompt != "" {
		_, err := tx.Enqueue(ctx, store.QueueItem{TaskID: row.ID, Priority: priorityNormal, Kind: itemMessage,
			Sender: actor.String(), Text: p.prompt, Meta: meta, CreatedAt: now})
		return err
	}
	if p.start && p.assignee.IsRole() {
		_, err := tx.Enqueue(ctx, store.QueueItem{TaskID: row.ID, Priority: priorityNormal, Kind: itemKickoff,
			Sender: actor.String(), Text: "Start work on the task.", Meta: meta, CreatedAt: now})
		return err
	}
	return nil
}
