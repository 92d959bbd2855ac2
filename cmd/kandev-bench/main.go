//go:build linux

// Command kandev-bench times what a user feels, as whole processes of the
// real binary, side by side with floors measured in the same run: a Go
// hello-world built the same way, a binary that links kandev's packages
// (every package init runs) and exits at once, one that links only cobra
// and the daemon client and exits at once, and sqlite3 reading the same
// rows. Each process figure also reads as a multiple of the hello-world.
//
//	go run ./cmd/kandev-bench                       # 1k and 10k tasks
//	KANDEV_BENCH_100K=1 go run ./cmd/kandev-bench   # and 100k
//	go run ./cmd/kandev-bench -bin old=/tmp/kandev.before,new=bin/kandev
//	go run ./cmd/kandev-bench -sizes 1000 -only version,show,mcp
//	go run ./cmd/kandev-bench -sizes none -bursts none -load 0 -only host   # hosts.go
//	go run ./cmd/kandev-bench -sizes none -bursts none -load 0 -host-runs 0 -only workspace   # workspace.go
//
// Every figure is the median of -runs interleaved rounds (each round runs
// every command of every binary once, in turn, so a busy machine slows them
// alike), with the spread (min–max) and the peak RSS of the process. Sizes
// are seeded straight into the store; each binary gets its own copy of the
// home and its own daemon.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kandev/kandev/core"
	"github.com/kandev/kandev/core/daemon/daemontest"
	"github.com/kandev/kandev/core/daemonclient"
)

func main() {
	// kandev-bench -seed DB N: the seeder, run as a child so that this
	// process stays small (see seedChild).
	if len(os.Args) == 4 && os.Args[1] == "-seed" {
		n, err := strconv.Atoi(os.Args[3])
		var first string
		if err == nil {
			first, err = daemontest.SeedTasks(os.Args[2], n)
		}
		fmt.Println(first)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kandev-bench -seed:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kandev-bench:", err)
		os.Exit(1)
	}
}

type binary struct{ name, path string }

// only and seeded are the -only and -seeded flags.
var only, seeded string

// wanted reports whether the figure named name is measured: -only is a
// comma-separated list of texts, one of which the name must contain.
func wanted(name string) bool {
	if only == "" {
		return true
	}
	for _, o := range strings.Split(only, ",") {
		if o != "" && strings.Contains(name, o) {
			return true
		}
	}
	return false
}

type sample struct {
	took  time.Duration
	rss   int64     // KiB
	start time.Time // when the process was started (timeProcTo)
}

type result struct {
	name    string
	samples map[string][]sample // by binary
}

func run() error {
	bins := flag.String("bin", "", "binaries to compare, name=path,... (default: build ./cmd/kandev)")
	runs := flag.Int("runs", 7, "interleaved rounds per figure")
	sizesFlag := flag.String("sizes", "", "task counts (default 1000,10000; with KANDEV_BENCH_100K=1 also 100000)")
	onlyFlag := flag.String("only", "", "measure only the figures whose name contains one of these comma-separated texts (e.g. TUI,daemon or version,show,mcp); the floors are always measured")
	seededFlag := flag.String("seeded", "", "directory of databases seeded earlier (kandev-N.db, made and kept when missing): no seeding in this run")
	burstsFlag := flag.String("bursts", "1000,4000,16000,64000", "chunk counts of the one-agent burst runs (none: skip them)")
	loadDur := flag.Duration("load", 15*time.Second, "how long each agent of the streaming load runs (0: skip it; the issue's figure is 60s, also KANDEV_BENCH_LOAD=60s)")
	loadAgents := flag.Int("load-agents", 50, "agents of the streaming load")
	loadRate := flag.Int("load-rate", 200, "chunks a second each agent of the streaming load sends")
	hostRuns := flag.Int("host-runs", 10, "sessions each of a task here and one on the loopback SSH host (0: skip them)")
	hostCalls := flag.Int("host-calls", 21, "MCP calls each of those sessions' agent times (the first apart)")
	sbRuns := flag.Int("sandbox-runs", 10, "sessions each of a task with no sandbox, under bubblewrap and in docker (0: skip them)")
	wsFiles := flag.Int("workspace-files", 1000, "files the agent of each workspace task changes and commits, for task diff and merge (0: skip them)")
	wsRuns := flag.Int("workspace-runs", 5, "rounds of the workspace figures (each: two fresh tasks per sandbox and binary)")
	wsAgain := flag.Int("workspace-again", 3, "repeats each round of task diff and task diff --stat after the first")
	wsBoxes := flag.String("workspace-sandboxes", "bwrap,none", "sandboxes of the workspace tasks, a row set each")
	flag.Parse()
	only, seeded = *onlyFlag, *seededFlag
	if v := os.Getenv("KANDEV_BENCH_LOAD"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("KANDEV_BENCH_LOAD: %w", err)
		}
		*loadDur = d
	}

	work, err := os.MkdirTemp("", "kb-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	var binaries []binary
	if *bins == "" {
		p := filepath.Join(work, "kandev")
		if err := goBuild(p, "./cmd/kandev"); err != nil {
			return err
		}
		binaries = append(binaries, binary{"kandev", p})
	} else {
		for _, kv := range strings.Split(*bins, ",") {
			name, path, ok := strings.Cut(kv, "=")
			if !ok {
				name, path = filepath.Base(kv), kv
			}
			abs, err := filepath.Abs(path)
			if err != nil {
				return err
			}
			binaries = append(binaries, binary{name, abs})
		}
	}
	floors, err := buildFloors(work)
	if err != nil {
		return err
	}
	sqlite, _ := exec.LookPath("sqlite3")

	sizes := []int{1000, 10000}
	if os.Getenv("KANDEV_BENCH_100K") != "" {
		sizes = append(sizes, 100000)
	}
	if *sizesFlag != "" {
		sizes = nil
		for _, s := range strings.Split(*sizesFlag, ",") {
			if s == "none" {
				break
			}
			n, err := strconv.Atoi(s)
			if err != nil {
				return fmt.Errorf("-sizes: %w", err)
			}
			sizes = append(sizes, n)
		}
	}

	cgo := os.Getenv("CGO_ENABLED")
	if cgo == "" {
		cgo = "default"
	}
	fmt.Printf("kandev-bench: %d interleaved rounds; median (min–max) ms, peak RSS MB, (N×) the hello-world's median; floors built with CGO_ENABLED=%s; %s\n",
		*runs, cgo, time.Now().UTC().Format(time.RFC3339))
	for _, n := range sizes {
		if err := benchSize(work, n, *runs, binaries, floors, sqlite); err != nil {
			return err
		}
	}
	var bursts []int
	for _, s := range strings.Split(*burstsFlag, ",") {
		if s == "none" || s == "" {
			break
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("-bursts: %w", err)
		}
		bursts = append(bursts, n)
	}
	if len(bursts) > 0 && wanted("burst") {
		if err := benchBursts(work, bursts, binaries); err != nil {
			return err
		}
	}
	if *hostRuns > 0 && wanted("host") {
		if err := benchHosts(work, binaries, *hostRuns, *hostCalls); err != nil {
			return err
		}
	}
	if *sbRuns > 0 && wanted(sbName) {
		if err := benchSandboxes(work, binaries, *sbRuns, *hostCalls); err != nil {
			return err
		}
	}
	if *wsFiles > 0 && *wsRuns > 0 && wanted(wsName) {
		if err := benchWorkspace(work, binaries, *wsFiles, *wsRuns, *wsAgain, strings.Split(*wsBoxes, ",")); err != nil {
			return err
		}
	}
	if *loadDur > 0 && wanted("load") {
		// The load's agents run this tree's mock (it knows `mock:
		// stream`) whichever binary's daemon runs them.
		mockBin := filepath.Join(work, "kandev-mock")
		if err := goBuild(mockBin, "./cmd/kandev"); err != nil {
			return err
		}
		if err := benchLoad(work, binaries, mockBin, *loadAgents, *loadRate, *loadDur); err != nil {
			return err
		}
	}
	return nil
}

func goBuild(out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", pkg, err)
	}
	return nil
}

// floorBin is a floor program: built at bench time, run with no
// arguments, timed like a kandev command.
type floorBin struct {
	name string
	path string
}

// floorSources are the floors' main packages. They are built inside the
// module (from a directory under cmd/kandev whose name starts with "_",
// which ./... patterns skip), with the same Go version, go.mod and
// environment as kandev, so that the only difference is what they link
// and run. The hello-world is the yardstick; the other two show
// what one binary holding daemon, TUI and CLI cannot go below: the init
// of every package kandev links, and the least a CLI command links.
var floorSources = []struct{ name, dir, src string }{
	{"floor: Go hello-world", "hello",
		"package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n"},
	{"floor: links kandev's packages, exits at once", "pkgs",
		"package main\n\nimport (\n\t_ \"github.com/kandev/kandev/cmd\"\n\t_ \"github.com/kandev/kandev/cmd/kandev/internal/quietinit\"\n)\n\nfunc main() {}\n"},
	{"floor: links cobra + daemon client, exits at once", "cli",
		"package main\n\nimport (\n\t_ \"github.com/kandev/kandev/core/daemonclient\"\n\t_ \"github.com/spf13/cobra\"\n)\n\nfunc main() {}\n"},
}

// buildFloors builds the floor programs; the hello-world comes first.
func buildFloors(work string) ([]floorBin, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return nil, errors.New("kandev-bench runs inside the kandev module (go run ./cmd/kandev-bench)")
	}
	root := filepath.Dir(gomod)
	tmp, err := os.MkdirTemp(filepath.Join(root, "cmd", "kandev"), "_floor-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var floors []floorBin
	for _, f := range floorSources {
		dir := filepath.Join(tmp, f.dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(f.src), 0o644); err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			return nil, err
		}
		bin := filepath.Join(work, "floor-"+f.dir)
		cmd := exec.Command("go", "build", "-o", bin, "./"+filepath.ToSlash(rel))
		cmd.Dir = root
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("build %s: %w", f.name, err)
		}
		floors = append(floors, floorBin{f.name, bin})
	}
	return floors, nil
}

// home is one binary's copy of a seeded home, with its daemon.
type home struct {
	bin    binary
	dir    string
	env    []string
	daemon *exec.Cmd
	// started is when the daemon was spawned.
	started time.Time
	taskID  string
	title   string // the first task's title: the TUI's first row
}

func benchSize(work string, n, runs int, binaries []binary, floors []floorBin, sqlite string) error {
	seedDB := filepath.Join(work, fmt.Sprintf("seed-%d.db", n))
	if seeded != "" {
		seedDB = filepath.Join(seeded, fmt.Sprintf("kandev-%d.db", n))
	}
	start := time.Now()
	firstID, title, err := seedChild(seedDB, n)
	if err != nil {
		return err
	}
	fmt.Printf("\n## %d tasks (seeded in %.1fs)\n", n, time.Since(start).Seconds())

	var homes []*home
	defer func() {
		for _, h := range homes {
			h.stop()
		}
	}()
	for i, b := range binaries {
		dir := filepath.Join(work, fmt.Sprintf("h%d-%d", n, i))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if err := copyFile(seedDB, filepath.Join(dir, "kandev.db")); err != nil {
			return err
		}
		h := &home{bin: b, dir: dir, taskID: firstID, title: title,
			env: append(cleanEnv(), "KANDEV_HOME="+dir, "TERM=xterm-256color")}
		homes = append(homes, h)
	}

	var results []*result
	add := func(name string) *result {
		r := &result{name: name, samples: map[string][]sample{}}
		results = append(results, r)
		return r
	}
	floorRes := make([]*result, len(floors))
	for i, f := range floors {
		floorRes[i] = add(f.name)
	}
	var floorSQL *result
	if sqlite != "" {
		floorSQL = add("floor: sqlite3 -json SELECT * FROM tasks")
	}
	dStart := add("daemon start to ready")
	dSettled := add("daemon start to settled (its CPU quiet)")
	version := add("kandev version")
	show := add("kandev task show ID --json")
	create := add("kandev task create")
	listJSON := add("kandev task list --json")
	listText := add("kandev task list --all (text)")
	listFirst := add("kandev task list --all (text): first row on stdout")
	listOpen := add("kandev task list (text; open tasks since ADR 0035)")
	mcp := add("kandev mcp start to tools/list")
	tuiQuiet := add("TUI spawn to first row (pty answers nothing)")
	tuiAnswer := add("TUI spawn to first row (pty answers queries)")
	tuiWhole := add("TUI spawn to whole tree loaded (answers)")

	cwd := filepath.Join(work, "cwd")
	_ = os.MkdirAll(cwd, 0o755)
	for round := range runs {
		// The floors, once per round.
		for i, f := range floors {
			s, err := timeProc(homes[0].env, f.path)
			if err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
			floorRes[i].samples["floor"] = append(floorRes[i].samples["floor"], s)
		}
		if floorSQL != nil && (wanted(floorSQL.name) || wanted(listJSON.name)) {
			s, err := timeProc(nil, sqlite, "-json", filepath.Join(homes[0].dir, "kandev.db"), "SELECT * FROM tasks")
			if err != nil {
				return err
			}
			floorSQL.samples["floor"] = append(floorSQL.samples["floor"], s)
		}
		for _, h := range homes {
			// Daemon start: a fresh daemon each round, timed until it
			// answers. The last round's daemon is the one the commands
			// of this round talk to; its peak RSS is noted at its stop.
			if rss := h.stop(); rss > 0 && len(dStart.samples[h.bin.name]) > 0 {
				ss := dStart.samples[h.bin.name]
				ss[len(ss)-1].rss = rss
			}
			s, err := h.start()
			if err != nil {
				return fmt.Errorf("%s: %w", h.bin.name, err)
			}
			if wanted(dStart.name) {
				dStart.samples[h.bin.name] = append(dStart.samples[h.bin.name], s)
			}
			// The commands below talk to a daemon done with its start:
			// work it does after it answers (its first collection, at
			// 100,000 tasks tens of ms on both cores) would otherwise be
			// counted against the first commands. That time shows here.
			settled, err := h.settle()
			if err != nil {
				return fmt.Errorf("%s: %w", h.bin.name, err)
			}
			if wanted(dSettled.name) {
				dSettled.samples[h.bin.name] = append(dSettled.samples[h.bin.name], sample{took: settled})
			}
		}
		steps := []struct {
			r    *result
			args []string
		}{
			{version, []string{"version"}},
			{show, []string{"task", "show", firstID, "--json"}},
			{create, []string{"task", "create", fmt.Sprintf("bench %d", round), "--cwd", cwd}},
			{listJSON, []string{"task", "list", "--json"}},
			{listText, []string{"task", "list", "--all"}},
			{listOpen, []string{"task", "list"}},
		}
		for _, st := range steps {
			first := st.r == listText && wanted(listFirst.name)
			if !wanted(st.r.name) && !first {
				continue
			}
			for _, h := range homes {
				var stdout firstWrite
				s, err := timeProcTo(&stdout, h.env, h.bin.path, st.args...)
				if err != nil {
					return fmt.Errorf("%s %v: %w", h.bin.name, st.args, err)
				}
				if wanted(st.r.name) {
					st.r.samples[h.bin.name] = append(st.r.samples[h.bin.name], s)
				}
				if first {
					if stdout.at.IsZero() { // nothing on stdout: its end
						stdout.at = s.start.Add(s.took)
					}
					listFirst.samples[h.bin.name] = append(listFirst.samples[h.bin.name], sample{took: stdout.at.Sub(s.start), rss: s.rss})
				}
			}
		}
		for _, h := range homes {
			if !wanted(mcp.name) {
				break
			}
			s, err := timeMCP(h)
			if err != nil {
				return fmt.Errorf("%s mcp: %w", h.bin.name, err)
			}
			mcp.samples[h.bin.name] = append(mcp.samples[h.bin.name], s)
		}
		for _, tr := range []struct {
			r      *result
			answer bool
		}{{tuiQuiet, false}, {tuiAnswer, true}} {
			if !wanted(tr.r.name) && !(tr.answer && wanted(tuiWhole.name)) {
				continue
			}
			for _, h := range homes {
				whole := 0
				if tr.answer && wanted(tuiWhole.name) {
					whole = n
				}
				s, all, err := timeTUI(h, tr.answer, whole)
				if err != nil {
					return fmt.Errorf("%s TUI: %w", h.bin.name, err)
				}
				tr.r.samples[h.bin.name] = append(tr.r.samples[h.bin.name], s)
				if whole > 0 {
					tuiWhole.samples[h.bin.name] = append(tuiWhole.samples[h.bin.name], all)
				}
			}
		}
	}
	printTable(results, binaries, floorRes[0])
	return nil
}

// printTable prints every measured figure; a whole process's also as a
// multiple of the hello-world's median (hello).
func printTable(results []*result, binaries []binary, hello *result) {
	helloMed := median(hello.samples["floor"])
	cols := []string{"floor"}
	for _, b := range binaries {
		cols = append(cols, b.name)
	}
	fmt.Printf("| %-50s |", "what")
	for _, c := range cols {
		fmt.Printf(" %-36s |", c)
	}
	fmt.Println()
	fmt.Printf("|%s|", strings.Repeat("-", 52))
	for range cols {
		fmt.Printf("%s|", strings.Repeat("-", 38))
	}
	fmt.Println()
	for _, r := range results {
		measured := false
		for _, ss := range r.samples {
			measured = measured || len(ss) > 0
		}
		if !measured {
			continue
		}
		fmt.Printf("| %-50s |", r.name)
		// Daemon start and the TUI are not one short process: no ratio.
		ratio := r != hello && !strings.HasPrefix(r.name, "daemon") && !strings.HasPrefix(r.name, "TUI")
		for _, c := range cols {
			ss := r.samples[c]
			if len(ss) == 0 {
				fmt.Printf(" %-36s |", "")
				continue
			}
			cell := summarize(ss)
			if ratio && helloMed > 0 {
				cell = fmt.Sprintf("%s (%.1f×) %s", msStr(median(ss)), float64(median(ss))/float64(helloMed), strings.TrimPrefix(cell, msStr(median(ss))+" "))
			}
			fmt.Printf(" %-36s |", cell)
		}
		fmt.Println()
	}
}

func median(ss []sample) time.Duration {
	if len(ss) == 0 {
		return 0
	}
	ts := make([]time.Duration, len(ss))
	for i, s := range ss {
		ts[i] = s.took
	}
	slices.Sort(ts)
	if len(ts)%2 == 0 {
		return (ts[len(ts)/2-1] + ts[len(ts)/2]) / 2
	}
	return ts[len(ts)/2]
}

func summarize(ss []sample) string {
	ts := make([]time.Duration, len(ss))
	var rss int64
	for i, s := range ss {
		ts[i] = s.took
		rss = max(rss, s.rss)
	}
	slices.Sort(ts)
	med := median(ss)
	out := fmt.Sprintf("%s (%s–%s)", msStr(med), msStr(ts[0]), msStr(ts[len(ts)-1]))
	if rss > 0 {
		out += fmt.Sprintf(" %dMB", (rss+512)/1024)
	}
	return out
}

func msStr(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	if ms >= 100 {
		return strconv.FormatFloat(ms, 'f', 0, 64)
	}
	return strconv.FormatFloat(ms, 'f', 1, 64)
}

// cleanEnv is the environment without variables that change what a
// terminal program does (CI makes termenv skip its queries).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "CI", "TERM", "COLORFGBG", "KANDEV_HOME", "KANDEV_SOCKET", "KANDEV_TOKEN", "NO_COLOR":
			continue
		}
		env = append(env, kv)
	}
	return env
}

func rssOf(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss
	}
	return 0
}

// timeProc runs a process to its end, stdout drained as a pipe consumer
// would, and times it from fork to exit.
func timeProc(env []string, path string, args ...string) (sample, error) {
	return timeProcTo(io.Discard, env, path, args...)
}

// timeProcTo is timeProc with stdout drained into w.
func timeProcTo(w io.Writer, env []string, path string, args ...string) (sample, error) {
	cmd := exec.Command(path, args...)
	if env != nil {
		cmd.Env = env
	}
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = w, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		return sample{}, fmt.Errorf("%v: %s", err, stderr.String())
	}
	return sample{took: took, rss: rssOf(cmd.ProcessState), start: start}, nil
}

// firstWrite drains a process's stdout and notes when its first bytes
// came through the pipe.
type firstWrite struct{ at time.Time }

func (w *firstWrite) Write(p []byte) (int, error) {
	if w.at.IsZero() && len(p) > 0 {
		w.at = time.Now()
	}
	return len(p), nil
}

// start starts the home's daemon in the foreground of a child process and
// times it until it answers a request.
func (h *home) start() (sample, error) {
	cmd := exec.Command(h.bin.path, "serve")
	cmd.Env = h.env
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sample{}, err
	}
	h.daemon, h.started = cmd, start
	c := daemonclient.Dial(core.Home{Dir: h.dir}.Socket())
	defer c.Close()
	deadline := start.Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Version(ctx)
		cancel()
		if err == nil {
			return sample{took: time.Since(start)}, nil
		}
		if time.Now().After(deadline) {
			return sample{}, fmt.Errorf("daemon did not answer: %w", err)
		}
		time.Sleep(time.Millisecond)
	}
}

// settle waits until the daemon started last uses (nearly) no CPU, and
// returns how long after its spawn that quiet began: the first 10 ms in
// which all its threads together ran for under 1 ms.
func (h *home) settle() (time.Duration, error) {
	pid := h.daemon.Process.Pid
	deadline := time.Now().Add(2 * time.Minute)
	prevAt, prev := time.Now(), cpuTime(pid)
	for time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		at, cur := time.Now(), cpuTime(pid)
		if d := cur - prev; d >= 0 && d < time.Millisecond {
			return prevAt.Sub(h.started), nil
		}
		prevAt, prev = at, cur
	}
	return 0, errors.New("the daemon did not go quiet within 2 minutes")
}

// cpuTime is the CPU time every thread of pid has run for so far
// (/proc/PID/task/*/schedstat, in ns).
func cpuTime(pid int) time.Duration {
	dirs, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var sum time.Duration
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue // a thread that ended
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}

// stop stops the home's daemon, if running, and returns its peak RSS.
func (h *home) stop() int64 {
	if h.daemon == nil {
		return 0
	}
	_ = h.daemon.Process.Signal(syscall.SIGTERM)
	_ = h.daemon.Wait()
	rss := rssOf(h.daemon.ProcessState)
	h.daemon = nil
	return rss
}

const (
	mcpInit   = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`
	mcpInited = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	mcpList   = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
)

// timeMCP times `kandev mcp` (the external surface) from spawn until its
// tools/list is answered.
func timeMCP(h *home) (sample, error) {
	cmd := exec.Command(h.bin.path, "mcp")
	cmd.Env = h.env
	in, err := cmd.StdinPipe()
	if err != nil {
		return sample{}, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return sample{}, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sample{}, err
	}
	r := bufio.NewReader(out)
	fmt.Fprintln(in, mcpInit)
	if _, err := r.ReadString('\n'); err != nil {
		return sample{}, fmt.Errorf("initialize: %w", err)
	}
	fmt.Fprintln(in, mcpInited)
	fmt.Fprintln(in, mcpList)
	line, err := r.ReadString('\n')
	took := time.Since(start)
	if err != nil || !strings.Contains(line, `"tools"`) {
		return sample{}, fmt.Errorf("tools/list: %v %q", err, line)
	}
	in.Close()
	_, _ = io.Copy(io.Discard, r)
	if err := cmd.Wait(); err != nil {
		return sample{}, err
	}
	return sample{took: took, rss: rssOf(cmd.ProcessState)}, nil
}

// timeTUI times the TUI on a pty from spawn until the first task's title
// is on the screen. With answer, the pty answers colour (OSC 10/11) and
// cursor-position queries as a terminal would. With whole > 0 it goes on
// until the status line counts at least that many tasks (the whole
// listing is in) and returns that time too; the peak RSS of both samples
// is then the process's after the whole listing.
func timeTUI(h *home, answer bool, whole int) (sample, sample, error) {
	cmd := exec.Command(h.bin.path)
	cmd.Env = h.env
	start := time.Now()
	pty, err := daemontest.StartPTY(cmd, 120, 40)
	if err != nil {
		return sample{}, sample{}, err
	}
	defer pty.Close()
	want := []byte(h.title)
	found := make(chan time.Duration, 2)
	go func() {
		defer close(found)
		var seen []byte
		buf := make([]byte, 64<<10)
		first := false
		for {
			n, err := pty.Read(buf)
			seen = append(seen, buf[:n]...)
			if answer {
				answerQueries(pty, buf[:n])
			}
			if !first && bytes.Contains(seen, want) {
				found <- time.Since(start)
				first = true
				if whole == 0 {
					return
				}
			}
			if first && countsAtLeast(seen, whole) {
				found <- time.Since(start)
				return
			}
			if err != nil {
				return
			}
		}
	}()
	timeout := time.After(time.Minute)
	var took [2]time.Duration
	got := 0
	for got < 2 && (got < 1 || whole > 0) {
		var ok bool
		select {
		case took[got], ok = <-found:
		case <-timeout:
		}
		if !ok {
			break
		}
		got++
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	rss := rssOf(cmd.ProcessState)
	switch {
	case got == 0:
		return sample{}, sample{}, errors.New("the first row never appeared")
	case whole > 0 && got < 2:
		return sample{}, sample{}, fmt.Errorf("the status line never counted %d tasks", whole)
	}
	return sample{took: took[0], rss: rss}, sample{took: took[1], rss: rss}, nil
}

var tasksCount = regexp.MustCompile(`(\d+) tasks`)

// countsAtLeast reports whether the screen output counts n tasks or more.
func countsAtLeast(b []byte, n int) bool {
	for _, m := range tasksCount.FindAllSubmatch(b, -1) {
		if v, err := strconv.Atoi(string(m[1])); err == nil && v >= n {
			return true
		}
	}
	return false
}

func answerQueries(w io.Writer, b []byte) {
	s := string(b)
	if strings.Contains(s, "\x1b]11;?") {
		_, _ = io.WriteString(w, "\x1b]11;rgb:0000/0000/0000\x1b\\")
	}
	if strings.Contains(s, "\x1b]10;?") {
		_, _ = io.WriteString(w, "\x1b]10;rgb:ffff/ffff/ffff\x1b\\")
	}
	if strings.Contains(s, "\x1b[6n") {
		_, _ = io.WriteString(w, "\x1b[1;1R")
	}
}

// copyFile copies by streaming: reading a 100,000-task database whole
// would raise this process's RSS, and with it every child's (seedChild).
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// seedChild seeds in a child process. Linux starts a child's peak RSS
// (ru_maxrss) from its parent's, since Go spawns with vfork: a parent that
// had held 100,000 tasks would make every measured process look that big.
func seedChild(dbPath string, n int) (string, string, error) {
	firstFile := dbPath + ".first"
	if seeded != "" {
		if b, err := os.ReadFile(firstFile); err == nil {
			return strings.TrimSpace(string(b)), seedTitle, nil
		}
		if err := os.MkdirAll(seeded, 0o700); err != nil {
			return "", "", err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return "", "", err
	}
	cmd := exec.Command(self, "-seed", dbPath, strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("seed %d tasks: %w", n, err)
	}
	first := strings.TrimSpace(string(out))
	if seeded != "" {
		if err := os.WriteFile(firstFile, []byte(first+"\n"), 0o600); err != nil {
			return "", "", err
		}
	}
	return first, seedTitle, nil
}

// seedTitle begins the first seeded task's title: the TUI's first row.
const seedTitle = "Task 0: split the auth module"
