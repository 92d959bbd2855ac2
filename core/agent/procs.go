package agent

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// SessionEnv is the environment variable that marks every process of a
// session: the agent gets it from kandev, and its children, helpers and
// setsid grandchildren inherit it. A process group does not hold them all;
// this does, short of a process that rewrites its environment at exec.
const SessionEnv = "KANDEV_SESSION_ID"

// SessionProcs lists the live processes whose environment carries
// KANDEV_SESSION_ID=id, the calling process excluded. Zombies have no
// environment left and are not listed.
func SessionProcs(id string) []int {
	if id == "" {
		return nil
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if HasSessionEnv(pid, id) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// HasSessionEnv reports whether process pid carries KANDEV_SESSION_ID=id,
// so a recycled pid is never mistaken for a session's process.
func HasSessionEnv(pid int, id string) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	needle := []byte(SessionEnv + "=" + id + "\x00")
	return bytes.HasPrefix(env, needle) || bytes.Contains(env, append([]byte{0}, needle...))
}

// signalSession sends sig to every process of the session.
func signalSession(id string, sig syscall.Signal) int {
	pids := SessionProcs(id)
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
	return len(pids)
}

// KillSession SIGKILLs every process of the session and waits, at most
// wait, until none is left. It returns how many it found first.
func KillSession(id string, wait time.Duration) int {
	n := signalSession(id, syscall.SIGKILL)
	if n == 0 {
		return 0
	}
	waitSessionGone(id, wait)
	return n
}

// waitSessionGone polls /proc until no process of the session is left or
// the time is up; it reports whether they are gone. It signals nothing:
// a process that ignores signals must be killed before this waits on it.
func waitSessionGone(id string, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		if len(SessionProcs(id)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
