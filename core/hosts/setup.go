package hosts

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kandev/kandev/core/agent"
	"github.com/kandev/kandev/core/sandbox"
	"github.com/kandev/kandev/core/workspace"
)

// Setup is what a task's worktree gets on the host as it does locally
// (docs/hosts.md): the files .worktreeinclude copied into the local
// worktree (git ignores them, so the push does not carry them), once, when
// the worktree is made there; then .kandev/setup, run on the host in the
// host's worktree until it succeeds once (its marker in that worktree's
// git directory), as workspace.RunSetup does here.
type Setup struct {
	// Included are the worktree-relative paths .worktreeinclude copied
	// into the local worktree.
	Included []string
	// Script is the local setup script (workspace.SetupScript: the
	// worktree's own, else the main checkout's); "" for none. It is
	// copied to the host and run there.
	Script string
	// Base is the task's base commit (KANDEV_BASE).
	Base string
	// Timeout bounds the script (0: workspace.DefaultSetupTimeout).
	Timeout time.Duration
}

// copyIncluded sends the included files of the local worktree into the
// host's worktree wt as one tar stream: regular files only (never
// through a link), with their permissions.
func (r *Remote) copyIncluded(ctx context.Context, wt string) error {
	if r.Setup == nil || len(r.Setup.Included) == 0 {
		return nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	n := 0
	for _, rel := range r.Setup.Included {
		p := filepath.Join(r.Worktree.Dir, rel)
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() || !filepath.IsLocal(rel) {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf(".worktreeinclude file %s: %w", rel, err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: int64(fi.Mode().Perm()), Size: int64(len(b)),
			Typeflag: tar.TypeReg, ModTime: fi.ModTime()}); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
		n++
	}
	if err := tw.Close(); err != nil || n == 0 {
		return err
	}
	cmd := r.Pool.Command(ctx, r.Target, "cd "+Quote(wt)+" && tar -x --no-same-owner -f -")
	cmd.Stdin = &buf
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("copy .worktreeinclude files to host %s: %w", r.Target.Name, sshError(r.Target.Name, err, stderr.String()))
	}
	return nil
}

// setupScript runs on the host: %s are the worktree, the copied script,
// the repository there, the branch, the base commit, the marker and the
// sandbox's command line before the script ("" unconfined).
const setupScript = `w=%s; s=%s; r=%s; b=%s; base=%s; m=%s
cd "$w" || exit 1
gd=$(git rev-parse --absolute-git-dir) || exit 1
if [ -e "$gd/` + workspace.SetupMarker + `" ]; then echo kandev-setup-done; exit 0; fi
chmod 0700 "$s"
env KANDEV_WORKTREE="$w" KANDEV_REPO="$r" KANDEV_BRANCH="$b" KANDEV_BASE="$base" "$m"%s "$s" </dev/null 2>&1
rc=$?
if [ $rc -eq 0 ]; then : > "$gd/` + workspace.SetupMarker + `"; fi
echo "kandev-setup-exit $rc"
`

// runSetup runs the setup script on the host in its worktree wt, marked
// like a session (agent.HelperMarker), in the ssh session's own process
// group; when it ends, fails or runs out of time every process carrying
// the marker is killed, so nothing it started outlives it. Its output is
// r.SetupOutput; a failure is a *workspace.SetupError.
func (r *Remote) runSetup(ctx context.Context, dir, wt string) error {
	if r.setupPath == "" {
		return nil
	}
	script, remote := r.Setup.Script, r.setupPath
	marker := agent.HelperMarker("setup")
	// A confined task's setup runs in its sandbox on the host, as its
	// agent would (ADR 0065): never outside it over what the agent wrote.
	wrap := ""
	if r.sb != nil {
		names := []string{"KANDEV_WORKTREE", "KANDEV_REPO", "KANDEV_BRANCH", "KANDEV_BASE", agent.SessionEnv}
		args, err := r.confinedSetup(marker, wt, names)
		if err != nil {
			return &workspace.SetupError{Script: script, Err: fmt.Errorf("confine it on host %s: %w", r.Target.Name, err)}
		}
		for _, a := range args {
			wrap += " " + Quote(a)
		}
		if r.Sandbox.container() {
			defer func() {
				kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), prepareTimeout)
				defer kcancel()
				r.Pool.Script(kctx, r.Target, r.Sandbox.Mode+" rm -f "+Quote(sandbox.ContainerName(marker))+" >/dev/null 2>&1; true\n")
			}()
		}
	}
	timeout := r.Setup.Timeout
	if timeout <= 0 {
		timeout = workspace.DefaultSetupTimeout
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	out, err := r.Pool.Script(sctx, r.Target, fmt.Sprintf(setupScript, Quote(wt), Quote(remote), Quote(RepoPath(dir, r.Worktree.Repo)),
		Quote(r.Worktree.Branch), Quote(r.Setup.Base), Quote(agent.SessionEnv+"="+marker), wrap))
	timedOut := sctx.Err() != nil
	cancel()
	// Finished, failed or out of time: nothing it started outlives it.
	kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), prepareTimeout)
	kerr := r.KillSession(kctx, marker, "")
	kcancel()
	if strings.HasPrefix(out, "kandev-setup-done") {
		return nil
	}
	status := ""
	if i := strings.LastIndex(out, "kandev-setup-exit "); i >= 0 {
		out, status = out[:i], strings.TrimSpace(out[i+len("kandev-setup-exit "):])
	}
	if len(out) > maxSetupOutput {
		out = out[len(out)-maxSetupOutput:]
	}
	r.SetupOutput = out
	switch {
	case timedOut:
		return &workspace.SetupError{Script: script, Output: out, Err: fmt.Errorf("did not finish in %s on host %s", timeout, r.Target.Name)}
	case err != nil:
		return err // ssh's own: the host went away
	case status != "0":
		return &workspace.SetupError{Script: script, Output: out, Err: fmt.Errorf("exit status %s on host %s", status, r.Target.Name)}
	case kerr != nil:
		return fmt.Errorf("setup on host %s: end what it left: %w", r.Target.Name, kerr)
	}
	return nil
}

// uploadSetup copies the setup script to the host (r.setupPath), once per
// Prepare; nothing when there is none.
func (r *Remote) uploadSetup(ctx context.Context, dir string) error {
	r.setupPath = ""
	if r.Setup == nil || r.Setup.Script == "" || r.Worktree.Dir == "" {
		return nil
	}
	script := r.Setup.Script
	fi, err := os.Stat(script)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return &workspace.SetupError{Script: script, Err: errors.New("not executable (chmod +x it)")}
	}
	f, err := os.Open(script)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	remote := dir + "/state/setup-" + shortHash(r.Worktree.Dir)
	err = r.Pool.UploadExpr(ctx, r.Target, f, Quote(remote))
	f.Close()
	if err != nil {
		return fmt.Errorf("copy .kandev/setup to host %s: %w", r.Target.Name, err)
	}
	r.setupPath = remote
	return nil
}

// maxSetupOutput is how much of the setup's output is kept (its tail).
const maxSetupOutput = 64 << 10
