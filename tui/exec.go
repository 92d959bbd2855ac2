package tui

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kandev/kandev/core"
)

// Stepping in: S opens the operator's shell, e its editor, in the selected
// task's directory (core.Task.WorkDir). The program hands the terminal
// over (tea.ExecProcess) and takes it back when the process exits.

// execKind is what runs in the task's directory.
type execKind int

const (
	execShell execKind = iota
	execEditor
)

func (k execKind) String() string {
	if k == execEditor {
		return "editor"
	}
	return "shell"
}

// execFunc hands the terminal to a process (tea.Exec outside the Update
// tests, which record the command instead).
type execFunc func(tea.ExecCommand, tea.ExecCallback) tea.Cmd

// handover is a process given the terminal, with a line written to it
// first: a shell clears nothing, so without it a person in the task's
// directory sees a bare prompt and no way back to kandev.
type handover struct {
	*exec.Cmd
	banner string
}

func (h *handover) SetStdin(r io.Reader) {
	if h.Stdin == nil {
		h.Stdin = r
	}
}

func (h *handover) SetStdout(w io.Writer) {
	if h.Stdout == nil {
		h.Stdout = w
	}
}

func (h *handover) SetStderr(w io.Writer) {
	if h.Stderr == nil {
		h.Stderr = w
	}
}

// Run writes the banner to the terminal, then runs the process there.
func (h *handover) Run() error {
	if h.banner != "" && h.Stderr != nil {
		fmt.Fprintln(h.Stderr, h.banner)
	}
	return h.Cmd.Run()
}

// shellBanner is what the terminal says as the shell starts.
func shellBanner(taskID, dir string) string {
	// Two short lines, so the way back is whole on a narrow terminal
	// whatever the directory's length.
	return fmt.Sprintf("kandev: a shell in %s for task %s ($KANDEV_TASK)\nkandev: exit or ctrl+d comes back to kandev", dir, taskID)
}

// execDoneMsg: the shell or editor exited and the UI has the terminal back.
type execDoneMsg struct {
	kind   execKind
	taskID string
	dir    string
	err    error
}

// taskCommand is the process a kind runs for task t: the shell, or the
// editor on ".", in its directory, with KANDEV_TASK set to its id.
func taskCommand(opts Options, kind execKind, t *core.Task) (*exec.Cmd, string, error) {
	dir, err := t.WorkDir()
	if err != nil {
		return nil, "", err
	}
	var argv []string
	if kind == execEditor {
		argv = strings.Fields(opts.Editor)
		if len(argv) == 0 {
			argv = []string{"vi"}
		}
		argv = append(argv, ".")
	} else {
		argv = strings.Fields(opts.Shell)
		if len(argv) == 0 {
			argv = []string{"/bin/sh"}
		}
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = dir
	c.Env = append(c.Environ(), "KANDEV_TASK="+t.ID)
	return c, dir, nil
}

// stepIn opens the shell or the editor in the selected task's directory.
func (m *Model) stepIn(kind execKind) tea.Cmd {
	t := m.needTask("open a " + kind.String() + " in")
	if t == nil {
		return nil
	}
	c, dir, err := taskCommand(m.opts, kind, t)
	if err != nil {
		m.setStatus(errorText(err), true)
		return nil
	}
	m.setStatus(fmt.Sprintf("%s in %s (exit it to come back)", kind, dir), false)
	id := t.ID
	h := &handover{Cmd: c}
	if kind == execShell {
		// An editor draws its own screen at once; the line would only flash.
		h.banner = shellBanner(id, dir)
	}
	return m.exec(h, func(err error) tea.Msg { return execDoneMsg{kind: kind, taskID: id, dir: dir, err: err} })
}

func (m *Model) onExecDone(msg execDoneMsg) {
	var ee *exec.ExitError
	switch {
	case msg.err == nil:
		m.setStatus(fmt.Sprintf("back from the %s in %s (task %s)", msg.kind, msg.dir, msg.taskID), false)
	case errors.As(msg.err, &ee):
		m.setStatus(fmt.Sprintf("back from the %s in %s (task %s; it exited with status %d)", msg.kind, msg.dir, msg.taskID, ee.ExitCode()), false)
	default:
		m.setStatus(fmt.Sprintf("%s in %s: %v", msg.kind, msg.dir, msg.err), true)
	}
}
