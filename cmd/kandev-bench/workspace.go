//go:build linux

package main

// Workspace (issue 34): `kandev task diff` and `kandev task merge` of a
// task whose agent changed 1,000 files, as whole processes of the real
// binary from spawn to exit, for a confined task (--sandbox bwrap: the
// host reads what a confined agent wrote) and an unconfined one (none).
//
// Each binary gets its own daemon in a private home (HOME and
// KANDEV_HOME in one temp dir, KANDEV_PERMISSION=allow, the git
// identity in the environment). Each round, for each sandbox and binary,
// two fresh copies of one repository (1,000 + 200 tracked files of 40
// lines, committed on main and packed) each get a task of the bundled
// mock profile whose agent, with its own shell (`mock: sh`, inside the
// sandbox), changes a line of 1,000 files and commits them on its
// branch, then leaves uncommitted work: 10 of those files and 10 others
// edited again, 10 new files. Its diff has 1,020 files. Then:
//
//   - task A: `task diff ID` first after the turn (whatever kandev does
//     once over what the agent wrote is counted here), then again, and
//     `task diff ID --stat`, then `task merge ID` into an unmoved main
//     (a fast-forward, after the uncommitted work is committed);
//   - task B: `task diff ID --stat` first after the turn, then `task
//     merge ID` after the operator committed another file on main (a
//     merge commit).
//
// A fresh repository per task keeps every round alike (no loose objects
// pile up, no automatic gc in a timed merge). Each figure is the median
// and p90 (min–max) over the rounds, with the peak RSS, and beside the
// last binary the ratio of its median to the first's.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// wsName is the name -only matches against for this section.
const wsName = "workspace: task diff and merge"

// wsUncommitted is how many files the agent's uncommitted work adds to
// the diff beyond the ones it committed: 10 tracked, 10 new.
const wsUncommitted = 20

// wsRow is one figure of the table, its samples by binary.
type wsRow struct {
	name    string
	samples map[string][]sample
}

func benchWorkspace(work string, binaries []binary, files, rounds, again int, sandboxes []string) error {
	if files < 10 {
		return errors.New("-workspace-files: at least 10 (the agent's uncommitted work edits 10 of them again)")
	}
	fmt.Printf("\n## %s: a task whose agent committed %d changed files and left %d more uncommitted (%d in its diff), whole processes: median / p90 (min–max) ms, peak RSS; %d rounds\n",
		wsName, files, wsUncommitted, files+wsUncommitted, rounds)
	fmt.Printf("load average at the start: %s (%d CPUs)\n", loadAvg(), runtime.NumCPU())
	dir, err := os.MkdirTemp(work, "ws-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	template := filepath.Join(dir, "template")
	if err := wsTemplate(template, files); err != nil {
		return fmt.Errorf("the repository: %w", err)
	}

	var boxes []string
	for _, sb := range sandboxes {
		if sb == "bwrap" {
			if err := bwrapUsable(); err != nil {
				fmt.Printf("the bwrap rows are skipped: %v\n", err)
				continue
			}
		}
		boxes = append(boxes, sb)
	}
	if len(boxes) == 0 {
		return nil
	}

	var homes []*home
	defer func() {
		for _, h := range homes {
			h.stop()
		}
	}()
	for i, b := range binaries {
		hd := filepath.Join(dir, fmt.Sprintf("h%d", i))
		for _, d := range []string{hd, filepath.Join(hd, "home"), filepath.Join(hd, "kandev")} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return err
			}
		}
		env := append(cleanEnv(), "HOME="+filepath.Join(hd, "home"), "XDG_CONFIG_HOME="+filepath.Join(hd, "home", ".config"),
			"KANDEV_HOME="+filepath.Join(hd, "kandev"), "KANDEV_CONFIG="+filepath.Join(hd, "config.toml"),
			"KANDEV_PROFILE=mock", "KANDEV_PERMISSION=allow", "KANDEV_MOCK_STATE_DIR="+filepath.Join(hd, "mock-state"),
			"KANDEV_QUESTION_TURN_GRACE=300ms")
		env = append(env, gitIdentity...)
		h := &home{bin: b, dir: filepath.Join(hd, "kandev"), env: env}
		homes = append(homes, h)
		if _, err := h.start(); err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
		if _, err := h.settle(); err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
	}

	var rows []*wsRow
	type boxRows struct{ turn, diffFirst, diffAgain, statFirst, statAgain, mergeFF, mergeMoved *wsRow }
	byBox := map[string]*boxRows{}
	add := func(name string) *wsRow {
		r := &wsRow{name: name, samples: map[string][]sample{}}
		rows = append(rows, r)
		return r
	}
	for _, sb := range boxes {
		byBox[sb] = &boxRows{
			turn:       add(sb + ": task create --start to turn over (kandev wait)"),
			diffFirst:  add(sb + ": task diff ID, first after the turn"),
			diffAgain:  add(sb + ": task diff ID, again"),
			statFirst:  add(sb + ": task diff ID --stat, first after the turn"),
			statAgain:  add(sb + ": task diff ID --stat, again"),
			mergeFF:    add(sb + ": task merge ID (fast-forward)"),
			mergeMoved: add(sb + ": task merge ID (main moved: merge commit)"),
		}
	}
	patchSize := map[string]int64{}

	n := 0
	for round := range rounds {
		for _, sb := range boxes {
			br := byBox[sb]
			for _, h := range homes {
				name := h.bin.name
				n++
				// Task A: the patch first, then again, the stat, a
				// fast-forward merge.
				repoA := filepath.Join(dir, fmt.Sprintf("repo-%d-a", n))
				idA, turn, err := wsTask(h, template, repoA, sb, files, fmt.Sprintf("bench %d %s a", round, sb))
				if err != nil {
					return fmt.Errorf("%s, sandbox %s: %w", name, sb, err)
				}
				br.turn.samples[name] = append(br.turn.samples[name], turn)
				var patch bytes.Buffer
				s, err := timeProcTo(&patch, h.env, h.bin.path, "task", "diff", idA)
				if err != nil {
					return fmt.Errorf("%s task diff: %w", name, err)
				}
				if got := patchFiles(patch.Bytes()); got != files+wsUncommitted {
					return fmt.Errorf("%s task diff %s (sandbox %s): %d files in %d bytes, want %d: the agent's work is not all there", name, idA, sb, got, patch.Len(), files+wsUncommitted)
				}
				patchSize[name] = int64(patch.Len())
				br.diffFirst.samples[name] = append(br.diffFirst.samples[name], s)
				for range again {
					s, err := timeProc(h.env, h.bin.path, "task", "diff", idA)
					if err != nil {
						return fmt.Errorf("%s task diff: %w", name, err)
					}
					br.diffAgain.samples[name] = append(br.diffAgain.samples[name], s)
				}
				for range again {
					s, err := timeStat(h, idA, files+wsUncommitted)
					if err != nil {
						return err
					}
					br.statAgain.samples[name] = append(br.statAgain.samples[name], s)
				}
				base, err := gitOut(repoA, "rev-parse", "main")
				if err != nil {
					return err
				}
				s, err = timeProc(h.env, h.bin.path, "task", "merge", idA)
				if err != nil {
					return fmt.Errorf("%s task merge: %w", name, err)
				}
				if head, _ := gitOut(repoA, "rev-parse", "main"); head == base {
					return fmt.Errorf("%s task merge %s: main did not move", name, idA)
				}
				br.mergeFF.samples[name] = append(br.mergeFF.samples[name], s)
				wsDone(h, idA, repoA)

				// Task B: the stat first, then a merge into a main
				// that moved since the task began.
				repoB := filepath.Join(dir, fmt.Sprintf("repo-%d-b", n))
				idB, turn, err := wsTask(h, template, repoB, sb, files, fmt.Sprintf("bench %d %s b", round, sb))
				if err != nil {
					return fmt.Errorf("%s, sandbox %s: %w", name, sb, err)
				}
				br.turn.samples[name] = append(br.turn.samples[name], turn)
				s, err = timeStat(h, idB, files+wsUncommitted)
				if err != nil {
					return err
				}
				br.statFirst.samples[name] = append(br.statFirst.samples[name], s)
				if err := os.WriteFile(filepath.Join(repoB, "other", "f199.txt"), []byte("the operator's own change\n"), 0o644); err != nil {
					return err
				}
				if _, err := gitOut(repoB, "commit", "-qam", "the operator's commit"); err != nil {
					return err
				}
				s, err = timeProc(h.env, h.bin.path, "task", "merge", idB)
				if err != nil {
					return fmt.Errorf("%s task merge: %w", name, err)
				}
				if parents, _ := gitOut(repoB, "rev-list", "--parents", "-n1", "main"); len(strings.Fields(parents)) != 3 {
					return fmt.Errorf("%s task merge %s: main's head is not a merge commit: %s", name, idB, parents)
				}
				br.mergeMoved.samples[name] = append(br.mergeMoved.samples[name], s)
				wsDone(h, idB, repoB)
			}
		}
	}

	fmt.Printf("| %-60s |", "what")
	for _, b := range binaries {
		fmt.Printf(" %-34s |", b.name)
	}
	ratio := len(binaries) > 1
	first, last := binaries[0].name, binaries[len(binaries)-1].name
	if ratio {
		fmt.Printf(" %-12s |", last+"/"+first)
	}
	fmt.Println()
	fmt.Printf("|%s|", strings.Repeat("-", 62))
	for range binaries {
		fmt.Printf("%s|", strings.Repeat("-", 36))
	}
	if ratio {
		fmt.Printf("%s|", strings.Repeat("-", 14))
	}
	fmt.Println()
	for _, r := range rows {
		fmt.Printf("| %-60s |", r.name)
		for _, b := range binaries {
			fmt.Printf(" %-34s |", wsCell(r.samples[b.name]))
		}
		if ratio {
			a, z := median(r.samples[first]), median(r.samples[last])
			cell := ""
			if a > 0 {
				cell = fmt.Sprintf("%.2f", float64(z)/float64(a))
			}
			fmt.Printf(" %-12s |", cell)
		}
		fmt.Println()
	}
	fmt.Print("(the patch: ")
	for i, b := range binaries {
		if i > 0 {
			fmt.Print(", ")
		}
		fmt.Printf("%s %s", b.name, mbStr(patchSize[b.name]))
	}
	fmt.Printf("; load average at the end: %s)\n", loadAvg())
	return nil
}

// wsCell is a figure's median / p90 (min–max) and peak RSS.
func wsCell(ss []sample) string {
	if len(ss) == 0 {
		return ""
	}
	ts := make([]time.Duration, len(ss))
	var rss int64
	for i, s := range ss {
		ts[i] = s.took
		rss = max(rss, s.rss)
	}
	slices.Sort(ts)
	// p90 by nearest rank: the smallest sample at or above 90% of them.
	p90 := ts[(len(ts)*9+9)/10-1]
	out := fmt.Sprintf("%s / %s (%s–%s)", msStr(median(ss)), msStr(p90), msStr(ts[0]), msStr(ts[len(ts)-1]))
	if rss > 0 {
		out += fmt.Sprintf(" %dMB", (rss+512)/1024)
	}
	return out
}

// gitIdentity is the author and committer of every commit in the bench:
// the operator's (the repository, main's moves) and the agent's.
var gitIdentity = []string{"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com",
	"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com"}

// gitOut runs the operator's git in dir, with no configuration of the
// user's, and returns its trimmed output.
func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitIdentity...)
	cmd.Env = append(cmd.Env, "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s in %s: %v: %s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// wsTemplate makes the repository every task starts from: files files of
// 40 lines under src/ (the ones the agent changes) and 200 under other/,
// committed on main and packed, as a clone's objects are.
func wsTemplate(dir string, files int) error {
	write := func(path string, i int) error {
		var b strings.Builder
		for l := 1; l <= 40; l++ {
			fmt.Fprintf(&b, "line %d of file %d: some text to give the line an ordinary length\n", l, i)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		return os.WriteFile(path, []byte(b.String()), 0o644)
	}
	for i := range files {
		if err := write(filepath.Join(dir, "src", fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d.txt", i)), i); err != nil {
			return err
		}
	}
	for i := range 200 {
		if err := write(filepath.Join(dir, "other", fmt.Sprintf("f%03d.txt", i)), files+i); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"commit", "-qm", "initial"},
		{"gc", "-q"},
	} {
		if _, err := gitOut(dir, args...); err != nil {
			return err
		}
	}
	return nil
}

// wsPrompt is the agent's work: one line changed in every file under
// src/, committed on its branch; then uncommitted, 10 of those files and
// 10 under other/ edited again and 10 new files.
const wsPrompt = `mock: sh sed -i 's/^line 20 .*/line 20: changed by the agent/' src/*/*.txt && git add -A && git commit -qm 'the agent: change every file under src' && for f in other/f00?.txt src/d000/f0000?.txt; do echo uncommitted >> "$f"; done && mkdir -p new && for i in 0 1 2 3 4 5 6 7 8 9; do echo "new $i" > new/n$i.txt; done && echo agent-done
mock: say finished`

// wsTask copies the template to repo and runs a task there in sandbox
// sb to the end of its agent's turn: `task create --start`, then `kandev
// wait`, timed together, then until its session is settled.
func wsTask(h *home, template, repo, sb string, files int, title string) (string, sample, error) {
	if out, err := exec.Command("cp", "-a", template, repo).CombinedOutput(); err != nil {
		return "", sample{}, fmt.Errorf("copy the repository: %v: %s", err, out)
	}
	var out bytes.Buffer
	start := time.Now()
	if _, err := timeProcTo(&out, h.env, h.bin.path, "task", "create", title, "--json", "--cwd", repo,
		"--profile", "mock", "--sandbox", sb, "--start", "--prompt", wsPrompt); err != nil {
		return "", sample{}, fmt.Errorf("task create: %w", err)
	}
	var t struct{ ID string }
	if err := json.Unmarshal(out.Bytes(), &t); err != nil || t.ID == "" {
		return "", sample{}, fmt.Errorf("task create printed %q: %v", out.String(), err)
	}
	wait := exec.Command(h.bin.path, "wait", t.ID, "--timeout", "5m")
	wait.Env = h.env
	var stderr strings.Builder
	wait.Stdout, wait.Stderr = &stderr, &stderr
	err := wait.Run()
	took := time.Since(start)
	// 0 done; 10 handed back to the operator: a turn that ends without
	// a handoff.
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 10) {
		return "", sample{}, fmt.Errorf("kandev wait %s: %v: %s", t.ID, err, stderr.String())
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var js bytes.Buffer
		if _, err := timeProcTo(&js, h.env, h.bin.path, "task", "show", t.ID, "--json"); err != nil {
			return "", sample{}, err
		}
		var st struct {
			Queued  int
			Session *struct{ State, Error string }
		}
		if err := json.Unmarshal(js.Bytes(), &st); err != nil {
			return "", sample{}, fmt.Errorf("task show %s: %w", t.ID, err)
		}
		if st.Session != nil && st.Queued == 0 {
			switch st.Session.State {
			case "created", "starting", "running":
			case "failed":
				return "", sample{}, fmt.Errorf("task %s: the agent's run failed: %s", t.ID, st.Session.Error)
			default:
				return t.ID, sample{took: took}, nil
			}
		}
		if time.Now().After(deadline) {
			return "", sample{}, fmt.Errorf("task %s: the turn did not settle: %s", t.ID, js.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var filesChanged = regexp.MustCompile(`(\d+) files? changed`)

// timeStat times `task diff ID --stat` and checks that it counts want
// files.
func timeStat(h *home, id string, want int) (sample, error) {
	var out tailWriter
	s, err := timeProcTo(&out, h.env, h.bin.path, "task", "diff", id, "--stat")
	if err != nil {
		return s, fmt.Errorf("%s task diff --stat: %w", h.bin.name, err)
	}
	got := -1
	if m := filesChanged.FindSubmatch(out.tail); m != nil {
		got, _ = strconv.Atoi(string(m[1]))
	}
	if got != want {
		return s, fmt.Errorf("%s task diff %s --stat: want %d files changed, got ...%s", h.bin.name, id, want, out.tail)
	}
	return s, nil
}

// patchFiles counts the files of a patch: its "diff --git" lines.
func patchFiles(p []byte) int {
	n := bytes.Count(p, []byte("\ndiff --git "))
	if bytes.HasPrefix(p, []byte("diff --git ")) {
		n++
	}
	return n
}

// wsDone marks a merged task done and archives it (its worktree goes),
// then removes its repository. A failure is said, not fatal: the home
// goes at the end anyway.
func wsDone(h *home, id, repo string) {
	for _, args := range [][]string{{"task", "status", id, "done"}, {"task", "archive", id}} {
		if _, err := timeProc(h.env, h.bin.path, args...); err != nil {
			fmt.Fprintf(os.Stderr, "kandev-bench: %s %s: %v\n", h.bin.name, strings.Join(args, " "), err)
		}
	}
	os.RemoveAll(repo)
}

// tailWriter keeps (at least) the last 4 KiB a process writes.
type tailWriter struct{ tail []byte }

func (w *tailWriter) Write(p []byte) (int, error) {
	w.tail = append(w.tail, p...)
	if len(w.tail) > 8<<10 {
		w.tail = append(w.tail[:0], w.tail[len(w.tail)-4<<10:]...)
	}
	return len(p), nil
}

// bwrapUsable says why bubblewrap cannot confine a task here, or nil.
func bwrapUsable() error {
	if _, err := exec.LookPath("bwrap"); err != nil {
		return errors.New("bubblewrap is not installed")
	}
	if out, err := exec.Command("bwrap", "--ro-bind", "/", "/", "--unshare-pid", "--proc", "/proc", "true").CombinedOutput(); err != nil {
		return fmt.Errorf("bubblewrap cannot run here: %v %s", err, out)
	}
	return nil
}

// loadAvg is /proc/loadavg's 1, 5 and 15 minute figures.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
