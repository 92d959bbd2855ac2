package sandbox

import (
	"fmt"
	"strings"
)

// Seatbelt is the macOS sandbox-exec profile of the view: Seatbelt cannot
// remount, so the private home is the one place it differs (the agent's
// HOME points at the private home itself). Reads are allowed of the
// system and of every mount, writes only of the read-write mounts, the
// network unless the profile turned it off (then only mcp.sock), and
// signals only within the sandbox.
func (v View) Seatbelt() string {
	var b strings.Builder
	b.WriteString("(version 1)\n(deny default)\n")
	b.WriteString("(allow process-fork)\n(allow process-exec)\n(allow signal (target same-sandbox))\n")
	b.WriteString("(allow sysctl-read)\n(allow mach-lookup)\n(allow ipc-posix-shm)\n")
	b.WriteString("(allow file-read-metadata)\n")
	b.WriteString("(allow file-read* (literal \"/\") (subpath \"/System\") (subpath \"/Library\") (subpath \"/private/etc\") (subpath \"/private/var/db\") (subpath \"/dev\"))\n")
	b.WriteString("(allow file-write* (literal \"/dev/null\") (literal \"/dev/tty\") (regex #\"^/dev/fd/\"))\n")
	for _, m := range v.Mounts {
		path := m.Src
		if path == "" || m.Tmpfs {
			path = m.Path
		}
		if m.Tmpfs {
			// A private /tmp is the per-task one under TMPDIR.
			path = "/private/tmp"
		}
		kind := "subpath"
		if m.Why == "mcp.sock" || m.Why == "the kandev binary" || m.Why == "the worktree's .git file, read-only" {
			kind = "literal"
		}
		fmt.Fprintf(&b, "(allow file-read* (%s %s))\n", kind, quote(path))
		// Mounts come parents first and a later rule wins, so a
		// read-only child of a read-write parent (the .git file) stays
		// read-only and a read-write child of a read-only one (objects)
		// writable.
		if m.RW {
			fmt.Fprintf(&b, "(allow file-write* (%s %s))\n", kind, quote(path))
		} else if m.Why != "system" {
			fmt.Fprintf(&b, "(deny file-write* (%s %s))\n", kind, quote(path))
		}
	}
	if v.Network {
		b.WriteString("(allow network*)\n")
	} else {
		for _, m := range v.Mounts {
			if m.Why == "mcp.sock" {
				fmt.Fprintf(&b, "(allow network-outbound (remote unix-socket (path-literal %s)))\n", quote(m.Path))
			}
		}
	}
	return b.String()
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
