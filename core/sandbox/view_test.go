package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fixture lays out a main repository's .git with one worktree, an
// operator's home holding a declared path and a secret, and an agent
// installed under the home as a script run by an interpreter there too.
func fixture(t *testing.T) (Input, string) {
	t.Helper()
	root := t.TempDir()
	mk := func(p, body string, mode os.FileMode) string {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	wt := filepath.Join(root, "kh", "worktrees", "repo", "t1")
	mk("kh/worktrees/repo/t1/.git", "gitdir: "+filepath.Join(root, "repo/.git/worktrees/t1")+"\n", 0o644)
	mk("repo/.git/worktrees/t1/gitdir", filepath.Join(wt, ".git")+"\n", 0o644)
	mk("repo/.git/worktrees/t1/commondir", "../..\n", 0o644)
	mk("repo/.git/worktrees/other/gitdir", filepath.Join(root, "kh/worktrees/repo/t2/.git")+"\n", 0o644)
	mk("repo/.git/config", "", 0o644)
	mk("repo/.git/objects/.keep", "", 0o644)
	mk("repo/.git/refs/heads/kandev/t2-other", "0000000000000000000000000000000000000000\n", 0o644)
	mk("home/.claude/settings.json", "{}", 0o600)
	mk("home/.ssh/id_ed25519", "secret", 0o600)
	interp := mk("home/.rt/bin/node", "", 0o755)
	agent := mk("home/.rt/lib/agent/cli.js", "#!"+interp+"\n", 0o755)
	bin := filepath.Join(root, "home/.local/bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(agent, filepath.Join(bin, "agent")); err != nil {
		t.Fatal(err)
	}
	g, err := FindGitDirs(filepath.Join(root, "repo/.git"), wt, "kandev/t1-x")
	if err != nil {
		t.Fatal(err)
	}
	return Input{Mode: "bwrap", Worktree: wt, Git: g, PrivateHome: filepath.Join(root, "kh/sandboxes/t1/home"),
		OperatorHome: filepath.Join(root, "home"), Paths: []string{"~/.claude", "ro:~/.claude.json", "~/.missing"},
		Executables: []string{filepath.Join(bin, "agent")}, SelfExe: mk("kbin/kandev", "", 0o755),
		MCPSocket: mk("kh/mcp.sock", "", 0o600), SessionID: "s1"}, root
}

func mountAt(v View, p string) (Mount, bool) {
	for _, m := range v.Mounts {
		if m.Path == p {
			return m, true
		}
	}
	return Mount{}, false
}

func TestDescribe(t *testing.T) {
	in, root := fixture(t)
	v, err := Describe(in)
	if err != nil {
		t.Fatal(err)
	}
	j := func(p string) string { return filepath.Join(root, p) }
	want := []struct {
		path string
		src  string
		rw   bool
	}{
		{"/usr", "", false},
		{"/tmp", "", true},
		{j("home"), j("kh/sandboxes/t1/home"), true},
		{j("home/.claude"), "", true},
		{j("home/.rt"), "", false},           // the interpreter's prefix
		{j("home/.rt/lib/agent"), "", false}, // where the link leads
		{j("home/.local/bin"), "", false},    // where it was found (~/.local is shared: bin, not all)
		{j("kbin/kandev"), "", false},
		{in.Worktree, "", true},
		{j("repo/.git"), "", false},
		{j("repo/.git/objects"), "", true},
		{j("repo/.git/worktrees/t1"), "", true},
		{filepath.Join(in.Worktree, ".git"), "", false},
		{j("repo/.git/refs/heads/kandev"), "", true},
		{j("repo/.git/logs/refs/heads/kandev"), "", true},
		{j("kh/mcp.sock"), "", true},
		// Where git finds the common directory stays kandev's.
		{j("repo/.git/worktrees/t1/commondir"), "", false},
		{j("repo/.git/worktrees/t1/gitdir"), "", false},
		// Another task's branch beside its own stays read-only.
		{j("repo/.git/refs/heads/kandev/t2-other"), "", false},
	}
	for _, w := range want {
		m, ok := mountAt(v, w.path)
		if !ok {
			t.Errorf("no mount at %s; mounts: %+v", w.path, v.Mounts)
			continue
		}
		if m.Src != w.src || m.RW != w.rw {
			t.Errorf("%s: src %q rw %v, want src %q rw %v", w.path, m.Src, m.RW, w.src, w.rw)
		}
	}
	for _, hidden := range []string{j("home/.ssh"), j("home/.claude.json"), j("home/.missing"), j("kh"),
		j("kh/kandev.sock"), j("repo"), j("repo/.git/worktrees/other"), j("repo/.git/refs"), j("repo/.git/config")} {
		if _, ok := mountAt(v, hidden); ok {
			t.Errorf("%s is mounted", hidden)
		}
	}
	// Parents come before children, or a child's mount would be hidden.
	for i, m := range v.Mounts {
		for _, later := range v.Mounts[i+1:] {
			if strings.HasPrefix(m.Path, later.Path+"/") {
				t.Errorf("%s is mounted before its parent %s", m.Path, later.Path)
			}
		}
	}
	if st, err := os.Stat(in.PrivateHome); err != nil || !st.IsDir() {
		t.Errorf("private home not created: %v", err)
	}
}

// The main repository's own branches stay out of reach: a branch right in
// refs/heads (beside main) gets no writable ref directory.
func TestDescribeBranchBesideMain(t *testing.T) {
	in, root := fixture(t)
	in.Git.Branch = "feature"
	v, err := Describe(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range v.Mounts {
		if m.RW && strings.Contains(m.Path, "refs") {
			t.Errorf("writable ref mount %s for a branch beside main", m.Path)
		}
	}
	if _, ok := mountAt(v, filepath.Join(root, "repo/.git/refs/heads")); ok {
		t.Error("refs/heads is mounted")
	}
}

// The administrative directory is found from the main repository's
// records, never from the worktree's .git file, which its agent can write.
func TestFindGitDirsIgnoresTheGitFile(t *testing.T) {
	in, root := fixture(t)
	if err := os.WriteFile(filepath.Join(in.Worktree, ".git"), []byte("gitdir: /etc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := FindGitDirs(filepath.Join(root, "repo/.git"), in.Worktree, "kandev/t1-x")
	if err != nil {
		t.Fatal(err)
	}
	if g.Admin != filepath.Join(root, "repo/.git/worktrees/t1") {
		t.Errorf("admin %s", g.Admin)
	}
	if _, err := FindGitDirs(filepath.Join(root, "repo/.git"), filepath.Join(root, "elsewhere"), "b"); err == nil {
		t.Error("a worktree the repository does not know was accepted")
	}
}

func TestBwrapArgs(t *testing.T) {
	in, root := fixture(t)
	in.NoNetwork = true
	v, err := Describe(in)
	if err != nil {
		t.Fatal(err)
	}
	args := v.BwrapArgs()
	s := " " + strings.Join(args, " ") + " "
	for _, want := range []string{
		" --unshare-pid ", " --proc /proc ", " --dev /dev ", " --unshare-net ", " --tmpfs /tmp ",
		" --ro-bind /usr /usr ",
		" --bind " + filepath.Join(root, "kh/sandboxes/t1/home") + " " + filepath.Join(root, "home") + " ",
		" --bind " + in.Worktree + " " + in.Worktree + " ",
		" --ro-bind " + filepath.Join(in.Worktree, ".git") + " " + filepath.Join(in.Worktree, ".git") + " ",
		" --bind " + in.MCPSocket + " " + in.MCPSocket + " ",
		" --setenv HOME " + filepath.Join(root, "home") + " ",
		" --chdir " + in.Worktree + " -- ",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("bwrap args lack %q:\n%s", want, s)
		}
	}
	if args[len(args)-1] != "--" {
		t.Errorf("args end with %q, not --", args[len(args)-1])
	}
	// Without the profile's no-network the agent keeps the network.
	in.NoNetwork = false
	v, _ = Describe(in)
	if slices.Contains(v.BwrapArgs(), "--unshare-net") {
		t.Error("network cut by default")
	}
	// A stop's signals reach the agent through kandev's process group.
	if slices.Contains(args, "--new-session") {
		t.Error("--new-session takes the agent out of its process group")
	}
}

func TestContainerArgs(t *testing.T) {
	in, root := fixture(t)
	in.Mode, in.Image, in.NoNetwork = "docker", "kandev-agent:1", true
	v, err := Describe(in)
	if err != nil {
		t.Fatal(err)
	}
	args := v.ContainerArgs([]string{"KANDEV_SESSION_ID", "ANTHROPIC_API_KEY"})
	s := " " + strings.Join(args, " ") + " "
	for _, want := range []string{
		" run -i --rm ", " --label kandev.session=s1 ", " --name kandev-s1 ", " --cap-drop=ALL ",
		" --security-opt no-new-privileges ", " --pids-limit ", " --read-only ", " --tmpfs /tmp:rw,nosuid,nodev ",
		" --network none ", " --env KANDEV_SESSION_ID ", " --env ANTHROPIC_API_KEY ",
		" --volume " + in.Worktree + ":" + in.Worktree + " ",
		" --volume " + filepath.Join(in.Worktree, ".git") + ":" + filepath.Join(in.Worktree, ".git") + ":ro ",
		" --volume " + filepath.Join(root, "kh/sandboxes/t1/home") + ":" + filepath.Join(root, "home") + " ",
		" --workdir " + in.Worktree + " ",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("container args lack %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "/usr:/usr") {
		t.Error("the image's system directories are replaced by the host's")
	}
	if args[len(args)-1] != "kandev-agent:1" {
		t.Errorf("last arg %q, want the image", args[len(args)-1])
	}
	if !strings.Contains(s, " --user "+strconv.Itoa(os.Getuid())+":"+strconv.Itoa(os.Getgid())+" ") {
		t.Errorf("--user is not this process's:\n%s", s)
	}
	// On a host, the container runs as the remote account.
	in.User = "1234:1235"
	if v, err = Describe(in); err != nil {
		t.Fatal(err)
	}
	if s := " " + strings.Join(v.ContainerArgs(nil), " ") + " "; !strings.Contains(s, " --user 1234:1235 ") {
		t.Errorf("--user is not the input's:\n%s", s)
	}
}

func TestSeatbelt(t *testing.T) {
	in, root := fixture(t)
	in.NoNetwork = true
	v, err := Describe(in)
	if err != nil {
		t.Fatal(err)
	}
	p := v.Seatbelt()
	for _, want := range []string{
		"(deny default)",
		`(allow file-write* (subpath "` + in.Worktree + `"))`,
		`(deny file-write* (literal "` + filepath.Join(in.Worktree, ".git") + `"))`,
		`(allow file-read* (subpath "` + filepath.Join(root, "kh/sandboxes/t1/home") + `"))`,
		`(allow file-write* (subpath "` + filepath.Join(root, "repo/.git/objects") + `"))`,
		`(deny file-write* (subpath "` + filepath.Join(root, "repo/.git") + `"))`,
		`(allow network-outbound (remote unix-socket (path-literal "` + in.MCPSocket + `")))`,
		"(allow signal (target same-sandbox))",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("profile lacks %s:\n%s", want, p)
		}
	}
	if strings.Contains(p, "(allow network*)") {
		t.Error("network allowed with no-network")
	}
	if strings.Contains(p, filepath.Join(root, "home/.ssh")) {
		t.Error("the operator's ~/.ssh is in the profile")
	}
	// The .git file's deny comes after the worktree's allow: the later rule wins.
	if strings.Index(p, `(deny file-write* (literal "`+filepath.Join(in.Worktree, ".git")) <
		strings.Index(p, `(allow file-write* (subpath "`+in.Worktree+`"))`) {
		t.Error("the .git file's deny comes before the worktree's allow")
	}
	// objects' allow comes after .git's deny.
	if strings.Index(p, `(allow file-write* (subpath "`+filepath.Join(root, "repo/.git/objects")) <
		strings.Index(p, `(deny file-write* (subpath "`+filepath.Join(root, "repo/.git")+`"))`) {
		t.Error("objects' allow comes before .git's deny")
	}
}

// A shared task in a repository's own checkout: the repository's config,
// hooks and info stay read-only inside its writable directory.
func TestDescribeReadOnlyInsideWorktree(t *testing.T) {
	in, root := fixture(t)
	repo := filepath.Join(root, "repo")
	in.Git, in.Worktree = nil, repo
	in.ReadOnly = []string{filepath.Join(repo, ".git/config"), filepath.Join(repo, ".git/hooks"), filepath.Join(repo, ".git/missing")}
	if err := os.MkdirAll(filepath.Join(repo, ".git/hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	v, err := Describe(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range in.ReadOnly[:2] {
		if m, ok := mountAt(v, p); !ok || m.RW {
			t.Errorf("%s: %+v %v", p, m, ok)
		}
	}
	if _, ok := mountAt(v, in.ReadOnly[2]); ok {
		t.Error("a path that does not exist is mounted")
	}
	if m, ok := mountAt(v, repo); !ok || !m.RW {
		t.Errorf("the directory itself: %+v %v", m, ok)
	}
}

// A node agent installed into a project (node_modules/.bin), with pnpm or
// under a version manager runs with the whole module tree it resolves
// from: the packages beside its own (claude-agent-acp requires
// @anthropic-ai/claude-agent-sdk; codex-acp a platform package), not
// only the .bin directory and the link's target.
func TestRuntimeDirsNodeInstalls(t *testing.T) {
	root := t.TempDir()
	write := func(p, body string) string {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := func(target, at string) string {
		at = filepath.Join(root, at)
		if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	write("proj/node_modules/@zed/codex-acp/bin/codex-acp.js", "#!/usr/bin/env node\n")
	write("proj/node_modules/@zed/codex-acp-linux-x64/bin/codex-acp", "")
	local := link("../@zed/codex-acp/bin/codex-acp.js", "proj/node_modules/.bin/codex-acp")
	write("pn/node_modules/.pnpm/agent@1.0.0/node_modules/agent/dist/index.js", "#!/usr/bin/env node\n")
	write("pn/node_modules/.pnpm/sdk@2.0.0/node_modules/sdk/index.js", "")
	// pnpm's .bin entries are shell shims, not links.
	shim := write("pn/node_modules/.bin/agent", "#!/bin/sh\nexec node \"$basedir/../.pnpm/agent@1.0.0/node_modules/agent/dist/index.js\" \"$@\"\n")
	write("home/.nvm/versions/node/v20.1.0/lib/node_modules/agent/cli.js", "#!/usr/bin/env node\n")
	nvm := link("../lib/node_modules/agent/cli.js", "home/.nvm/versions/node/v20.1.0/bin/agent")
	for _, c := range []struct {
		exe  string
		want string // a directory the view must hold
	}{
		{local, filepath.Join(root, "proj/node_modules")},
		{shim, filepath.Join(root, "pn/node_modules")},
		{nvm, filepath.Join(root, "home/.nvm/versions/node/v20.1.0")},
	} {
		dirs := runtimeDirs(OS{}, c.exe, "")
		if !slices.Contains(dirs, c.want) {
			t.Errorf("%s: runtime %v lacks %s", c.exe, dirs, c.want)
		}
		for _, d := range dirs {
			if d == root || d == filepath.Join(root, "proj") || d == filepath.Join(root, "home") {
				t.Errorf("%s: runtime %v holds %s, more than the install", c.exe, dirs, d)
			}
		}
	}
}

// A runtime never opens the operator's home (issue 36, found writing the
// image builder): an agent found in ~/bin once made the home its install
// prefix, and that read-only mount replaced the private home, ~/.ssh and
// all; one in ~/.local/bin made all of ~/.local readable. Now a shared
// prefix gives its bin and library directories only.
func TestRuntimeNeverTheHome(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	for _, p := range []string{"bin/agent", ".local/bin/other", ".local/lib/python3/site.py", ".local/share/keyrings/login", ".ssh/id_ed25519", "tools/bin/third", "tools/lib/x.js"} {
		full := filepath.Join(home, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	v, err := Describe(Input{Mode: "bwrap", Worktree: filepath.Join(root, "work"), PrivateHome: filepath.Join(root, "private"), OperatorHome: home,
		Executables: []string{filepath.Join(home, "bin/agent"), filepath.Join(home, ".local/bin/other"), filepath.Join(home, "tools/bin/third")}})
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := mountAt(v, home); !ok || m.Src != filepath.Join(root, "private") || !m.RW {
		t.Fatalf("the home is not the private one: %+v (mounts %+v)", m, v.Mounts)
	}
	for _, want := range []string{"bin", ".local/bin", ".local/lib", "tools"} {
		if _, ok := mountAt(v, filepath.Join(home, want)); !ok {
			t.Errorf("%s is not mounted: %+v", want, v.Mounts)
		}
	}
	for _, hidden := range []string{".local", ".local/share", ".ssh"} {
		for _, m := range v.Mounts {
			if p := filepath.Join(home, hidden); (m.Path == p || strings.HasPrefix(p, m.Path+"/")) && m.Src == "" && !m.Tmpfs {
				t.Errorf("%s reachable through %+v", hidden, m)
			}
		}
	}
	files, dirs := Runtime(OS{}, filepath.Join(home, "bin/agent"), home)
	if slices.Contains(dirs, home) || !slices.Contains(files, filepath.Join(home, "bin/agent")) {
		t.Fatalf("image runtime: files %v dirs %v", files, dirs)
	}
}

// A script's interpreters are found as its #! lines find them: env's NAME
// on PATH (a version manager's node, not the system's), then that
// interpreter's own #!.
func TestInterpreters(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "nvm", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(bin, "node")
	script := filepath.Join(dir, "agent.js")
	for p, body := range map[string]string{node: "#!/bin/sh\nexit 0\n", script: "#!/usr/bin/env -S node --no-warnings\n"} {
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	got := Interpreters(OS{}, script)
	if want := []string{node, "/bin/sh"}; !slices.Equal(got, want) {
		t.Fatalf("Interpreters = %q, want %q", got, want)
	}
	if got := Interpreters(OS{}, "/bin/sh"); len(got) != 0 {
		t.Fatalf("a native program has no interpreter: %q", got)
	}
}

// A shell shim's program is what it execs (pnpm's cmd-shim: node beside
// it, else node on PATH), so an image holds node and finds it.
func TestInterpretersOfAShim(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(bin, "node")
	shim := filepath.Join(dir, "pnpm", "agent")
	if err := os.MkdirAll(filepath.Dir(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	body := "#!/bin/sh\nbasedir=$(dirname \"$0\")\nif [ -x \"$basedir/node\" ]; then\n  exec \"$basedir/node\"  \"$basedir/global/5/node_modules/agent/cli.js\" \"$@\"\nelse\n  exec node  \"$basedir/global/5/node_modules/agent/cli.js\" \"$@\"\nfi\n"
	for p, b := range map[string]string{node: "", shim: body} {
		if err := os.WriteFile(p, []byte(b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	if got, want := Interpreters(OS{}, shim), []string{"/bin/sh", node}; !slices.Equal(got, want) {
		t.Fatalf("Interpreters = %q, want %q", got, want)
	}
	// node beside the shim wins, as the shim's own test says.
	beside := filepath.Join(filepath.Dir(shim), "node")
	if err := os.WriteFile(beside, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := Interpreters(OS{}, shim), []string{"/bin/sh", beside}; !slices.Equal(got, want) {
		t.Fatalf("Interpreters = %q, want %q", got, want)
	}
}

// An executable found directly in a shared directory brings only itself
// (issue 36, found building an image of an agent beside kandev in /tmp: the
// image took all of /tmp, the docker engine's data root in it, and grew
// with every build). Nor does one directly in the home open the home.
func TestSharedDirectoryBringsOnlyTheFile(t *testing.T) {
	home := t.TempDir()
	inHome := filepath.Join(home, "agent")
	f, err := os.CreateTemp("", "kandev-agent-*")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	inTmp := f.Name()
	t.Cleanup(func() { os.Remove(inTmp) })
	if filepath.Dir(inTmp) != "/tmp" {
		t.Skipf("the temporary directory is %s, not /tmp", filepath.Dir(inTmp))
	}
	if err := os.WriteFile(inHome, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, exe := range []string{inHome, inTmp} {
		if got := runtimeDirs(OS{}, exe, home); !slices.Equal(got, []string{exe}) {
			t.Errorf("runtimeDirs(%s) = %q, want the file alone", exe, got)
		}
		files, dirs := Runtime(OS{}, exe, home)
		if len(dirs) != 0 || !slices.Contains(files, exe) {
			t.Errorf("Runtime(%s) = files %q dirs %q, want the file and no directory", exe, files, dirs)
		}
	}
}
