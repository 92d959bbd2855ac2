package kube

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/kandev/kandev/core/workspace"
)

// The worktree travels by git, as to SSH hosts (core/hosts/worktree.go),
// but over the pod's exec streams: no remote the cluster must reach. In:
// a bundle of the local worktree's HEAD, fetched into a repository at
// WorkDir on branch. Back: a snapshot commit of the pod's worktree files
// (a private index; the pod's worktree and index untouched) bundled
// against the commit that went in, fetched, and the local worktree reset
// to the snapshot's parent and its files to the snapshot, as for hosts.
// The image needs git.

// gitIdentity is the committer of snapshots, so no configuration is needed
// in the pod.
const gitIdentity = `export GIT_AUTHOR_NAME=kandev GIT_AUTHOR_EMAIL=kandev@localhost GIT_COMMITTER_NAME=kandev GIT_COMMITTER_EMAIL=kandev@localhost
`

// CopyIn carries the local worktree's HEAD into the pod's WorkDir on
// branch, and returns the commit that went in (FetchBack's base).
func (s *Session) CopyIn(ctx context.Context, localWT, branch string) (string, error) {
	if strings.ContainsAny(branch, " '\"\\\n$`") || branch == "" {
		return "", fmt.Errorf("kube: branch %q cannot be carried into a pod", branch)
	}
	head, err := workspace.Git(ctx, workspace.GitCall{Dir: localWT, Args: []string{"rev-parse", "HEAD"}})
	if err != nil {
		return "", err
	}
	head = strings.TrimSpace(head)
	tmp, err := os.MkdirTemp("", "kandev-bundle-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	b := filepath.Join(tmp, "in.bundle")
	if _, err := workspace.Git(ctx, workspace.GitCall{Dir: localWT, Args: []string{"bundle", "create", "-q", b, "HEAD"}}); err != nil {
		return "", err
	}
	f, err := os.Open(b)
	if err != nil {
		return "", err
	}
	defer f.Close()
	script := `set -e
cat > ` + tmpDir + `/in.bundle
cd ` + WorkDir + `
# The volume's directory is the kubelet's, not the agent's user's.
git config --global --add safe.directory ` + WorkDir + `
git init -q
git fetch -q ` + tmpDir + `/in.bundle HEAD:refs/heads/` + branch + `
git symbolic-ref HEAD refs/heads/` + branch + `
git reset -q --hard
rm -f ` + tmpDir + `/in.bundle
`
	if out, err := s.c.Exec(ctx, s.Name, f, "/bin/sh", "-c", script); err != nil {
		return "", fmt.Errorf("kube: the worktree into pod %s: %w: %s", s.Name, err, out)
	}
	return head, nil
}

// FetchBack brings the pod's worktree (commits and uncommitted files) into
// the local worktree, whose HEAD is base (CopyIn's answer) or a commit
// the pod made on it.
func (s *Session) FetchBack(ctx context.Context, localWT, base string) error {
	if !isHex(base) {
		return fmt.Errorf("kube: base %q is not a commit", base)
	}
	tmp, err := os.MkdirTemp("", "kandev-bundle-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b := filepath.Join(tmp, "back.bundle")
	f, err := os.Create(b)
	if err != nil {
		return err
	}
	script := `set -e
cd ` + WorkDir + `
` + gitIdentity + `export GIT_INDEX_FILE="$(git rev-parse --absolute-git-dir)/kandev-snapshot.index"
rm -f "$GIT_INDEX_FILE"
git read-tree HEAD
git add -A
t=$(git write-tree)
c=$(git commit-tree "$t" -p HEAD -m 'kandev: the worktree in the pod')
git update-ref refs/kandev/snapshot "$c"
rm -f "$GIT_INDEX_FILE"
git bundle create -q - refs/kandev/snapshot ^` + base + `
`
	var errOut lockedBuffer
	err = s.c.stream(ctx, s.Name, nil, f, &errOut, "/bin/sh", "-c", script)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("kube: the worktree back from pod %s: %w: %s", s.Name, err, errOut.String())
	}
	const ref = "refs/kandev/pod-snapshot"
	if _, err := workspace.Git(ctx, workspace.GitCall{Dir: localWT, Args: []string{"fetch", "-q", "--no-tags", b, "refs/kandev/snapshot:" + ref}}); err != nil {
		return err
	}
	snap, err := workspace.Git(ctx, workspace.GitCall{Dir: localWT, Args: []string{"rev-parse", ref}})
	if err != nil {
		return err
	}
	snap = strings.TrimSpace(snap)
	for _, args := range [][]string{{"reset", "-q", "--hard", snap + "^"}, {"read-tree", "-u", "--reset", snap}, {"reset", "-q"}, {"update-ref", "-d", ref}} {
		if _, err := workspace.Git(ctx, workspace.GitCall{Dir: localWT, Args: args}); err != nil {
			return err
		}
	}
	return nil
}

func isHex(s string) bool {
	if len(s) < 7 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

// stream runs argv in the agent's container with separate stdout and
// stderr.
func (c *Client) stream(ctx context.Context, name string, in io.Reader, out, errOut io.Writer, argv ...string) error {
	exec, err := c.executor("exec", name, &corev1.PodExecOptions{
		Container: keeper, Command: argv, Stdin: in != nil, Stdout: true, Stderr: true,
	})
	if err != nil {
		return err
	}
	return exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: in, Stdout: out, Stderr: errOut})
}
