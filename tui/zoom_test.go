package tui

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
)

// TestZoomShowsTheConversationFullScreen: z gives the selected task's
// conversation the screen at 80×24 (the tree goes), following new output,
// scrollable, and z or esc brings the tree back.
func TestZoomShowsTheConversationFullScreen(t *testing.T) {
	f := bigConvo(300)
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid001")
	normal := d.m.logHeight()
	d.keys("z")
	d.mustShow("Extract the token store", "conversation · following", "entry 300", "z back")
	d.mustNotShow("root01 claude") // the tree's rows
	if lh := d.m.logHeight(); lh < 18 || lh <= normal {
		t.Fatalf("the zoomed log shows %d lines (the pane %d); at 80×24 it should show at least 18", lh, normal)
	}
	// It follows live output.
	m := agentEntry("kid001", 301, "fresh output", testNow)
	f.addMessages("kid001", m)
	f.push(core.Event{Type: core.EventMessageAdded, TaskID: "kid001", Message: &m})
	d.settle()
	d.mustShow("fresh output")
	// j and k scroll the log here (not the tree), and it keeps its place.
	d.keys("k", "k", "pgup")
	d.mustShow("scrolled (G follows)")
	if d.m.tree.selected != "kid001" {
		t.Fatalf("scrolling moved the tree's selection to %s", d.m.tree.selected)
	}
	m2 := agentEntry("kid001", 302, "more output", testNow)
	f.addMessages("kid001", m2)
	f.push(core.Event{Type: core.EventMessageAdded, TaskID: "kid001", Message: &m2})
	d.settle()
	d.mustShow("1 new lines below (G follows)")
	d.mustNotShow("more output")
	d.keys("G")
	d.mustShow("more output", "conversation · following")
	d.keys("esc")
	if d.m.zoom {
		t.Fatal("esc should leave the full-screen log")
	}
	d.mustShow("root01", "kid001")
	d.keys("z", "z")
	if d.m.zoom {
		t.Fatal("z should toggle the full-screen log")
	}
}

// TestZoomSearch: / searches what is loaded of the log, n and N go to the
// next and previous match, wrapping, and the match is on screen.
func TestZoomSearch(t *testing.T) {
	f := bigConvo(200)
	d := newDriver(t, f, 80, 24)
	d.selectTask("kid001")
	d.keys("z", "/")
	d.typeText("ENTRY 15")
	d.keys("enter") // entry 15, 150..159: 11 lines, from the top of the screen down (wrapping)
	d.mustShow(`"entry 15" 1/11 (n/N)`)
	d.mustShow("entry 15 ")
	if d.m.detail.follow {
		t.Fatal("a match above the tail stops following")
	}
	d.keys("n")
	d.mustShow(`"entry 15" 2/11`, "entry 150")
	d.keys("N", "N")
	d.mustShow(`"entry 15" 11/11`, "entry 159")
	d.keys("/")
	d.typeText("x")
	d.keys("enter")
	d.mustShow(`no match for "entry 15x"`)
	// esc clears the search first, then leaves.
	d.keys("esc")
	d.mustShow("scrolled (G follows)")
	d.keys("esc")
	if d.m.zoom {
		t.Fatal("the second esc leaves the full-screen log")
	}
}

// TestStepIntoTheTaskDirectory: S runs the shell and e the editor in the
// task's worktree, handing them the terminal; the UI says so when they
// exit. A task without a directory says why and runs nothing.
func TestStepIntoTheTaskDirectory(t *testing.T) {
	tasks := demoTasks()
	tasks[4].Workspace = &core.Workspace{Mode: core.WorkspaceWorktree, Dir: "/wt/ask001", Branch: "kandev/ask001", Repo: "/repo"}
	tasks[5].Workspace = &core.Workspace{Mode: core.WorkspaceDiscarded, Repo: "/repo"}
	f := newFake(tasks...)
	d := newDriver(t, f, 80, 24, func(o *Options) { o.Shell, o.Editor = "/bin/zsh", "code -w" })
	var ran []*exec.Cmd
	var banners []string
	d.m.exec = func(c tea.ExecCommand, fn tea.ExecCallback) tea.Cmd {
		h := c.(*handover)
		ran, banners = append(ran, h.Cmd), append(banners, h.banner)
		return func() tea.Msg { return fn(nil) }
	}
	d.selectTask("ask001")
	d.keys("S")
	if len(ran) != 1 || !slices.Equal(ran[0].Args, []string{"/bin/zsh"}) || ran[0].Dir != "/wt/ask001" ||
		!slices.Contains(ran[0].Env, "KANDEV_TASK=ask001") {
		t.Fatalf("S ran %+v", ran)
	}
	if !strings.Contains(banners[0], "exit or ctrl+d comes back to kandev") || !strings.Contains(banners[0], "/wt/ask001") {
		t.Fatalf("the shell's banner %q does not say how to come back", banners[0])
	}
	d.mustShow("back from the shell in /wt/ask001")
	d.keys("z", "e") // from the full-screen log too
	if len(ran) != 2 || !slices.Equal(ran[1].Args, []string{"code", "-w", "."}) || ran[1].Dir != "/wt/ask001" {
		t.Fatalf("e ran %+v", ran[1:])
	}
	if banners[1] != "" {
		t.Fatalf("the editor got a banner %q", banners[1])
	}
	d.mustShow("back from the editor in /wt/ask001")
	d.keys("z")
	d.selectTask("stop01")
	d.keys("S")
	if len(ran) != 2 {
		t.Fatalf("a discarded worktree ran %+v", ran[2:])
	}
	d.mustShow("task stop01 has no directory: its worktree was discarded")
}

func TestExecDoneSaysHowItEnded(t *testing.T) {
	d := newDriver(t, newFake(demoTasks()...), 80, 24)
	err := exec.Command("sh", "-c", "exit 3").Run()
	d.send(execDoneMsg{kind: execShell, taskID: "t1", dir: "/d", err: err})
	d.settle()
	d.mustShow("back from the shell in /d (task t1; it exited with status 3)")
	if d.m.statusErr {
		t.Fatal("a shell's exit status is not an error of kandev's")
	}
	d.send(execDoneMsg{kind: execEditor, taskID: "t1", dir: "/gone", err: &exec.Error{Name: "nvim", Err: exec.ErrNotFound}})
	d.settle()
	if !d.m.statusErr || !strings.Contains(d.m.status, "editor in /gone") {
		t.Fatalf("status %q (error %v)", d.m.status, d.m.statusErr)
	}
}

// TestHelpListsTheNewKeysAndFits: ? names z, S, e and R, and at 80×24
// nothing is cut off, down to the legend's last line.
func TestHelpListsTheNewKeysAndFits(t *testing.T) {
	d := newDriver(t, newFake(demoTasks()...), 80, 24)
	d.keys("?")
	d.mustShow("z      full-screen log", "S      shell there", "e      editor there", "R      start daemon", "@you assigned to you", "spinner: an agent")
	d.mustNotShow("a taller terminal")
}

// A handover writes its banner to the terminal before the process runs.
func TestHandoverWritesTheBannerFirst(t *testing.T) {
	var out strings.Builder
	h := &handover{Cmd: exec.Command("sh", "-c", "echo ran >&2"), banner: shellBanner("t1", "/d")}
	h.SetStdin(strings.NewReader(""))
	h.SetStdout(&out)
	h.SetStderr(&out)
	if err := h.Run(); err != nil {
		t.Fatal(err)
	}
	want := "kandev: a shell in /d for task t1 ($KANDEV_TASK)\nkandev: exit or ctrl+d comes back to kandev\nran\n"
	if out.String() != want {
		t.Fatalf("the terminal got %q, want %q", out.String(), want)
	}
}
