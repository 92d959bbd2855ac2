package core

import "strings"

// WaitCause says why a task's agent cannot start now, beside the Waiting
// text people read: code decides on the cause (whether a freed host slot
// may start the task, whether a profile change should kick it), never on
// the text. "" is no wait.
type WaitCause string

const (
	// WaitNone: the task does not wait.
	WaitNone WaitCause = ""
	// WaitCannotStart: its role or profile cannot start (a command not on
	// PATH, a profile that does not resolve); a profile change or a
	// restart starts it.
	WaitCannotStart WaitCause = "cannot_start"
	// WaitHostSlots: every host it may run on has its --max-agents
	// slots taken; a freed slot starts it.
	WaitHostSlots WaitCause = "host_slots"
	// WaitNoHosts: it runs on --host auto and there is no host at all.
	WaitNoHosts WaitCause = "no_hosts"
	// WaitHostUnreachable: its host cannot be reached; kandev tries again
	// with backoff.
	WaitHostUnreachable WaitCause = "host_unreachable"
	// WaitDelivery: its next message could not be written (a full
	// disk, say); kandev tries again. Kept in memory only.
	WaitDelivery WaitCause = "delivery"
	// WaitLimit: a spend limit per day or week over it is reached (ADR
	// 0077); the window's roll, or a person raising or removing the
	// limit, starts it. Not stored: the engine holds it in memory from the
	// store's marks.
	WaitLimit WaitCause = "spend_limit"
)

// ForHostSlot reports whether a slot on a host is all the task waits
// for, so a freed one may start it.
func (c WaitCause) ForHostSlot() bool { return c == WaitHostSlots || c == WaitNoHosts }

// The Waiting texts of these causes begin so: the prefixes are for people,
// and for reading a reason stored before causes existed.
const (
	// WaitHostSlotsPrefix starts the text of WaitHostSlots.
	WaitHostSlotsPrefix = "host slots full: "
	// WaitNoHostsText is the text of WaitNoHosts.
	WaitNoHostsText = "--host auto: no hosts (kandev host add)"
)

// ParseStoredWait is the cause of a stored wait: the cause recorded with
// it, or, for a row written before causes existed, the one the engine's
// texts then meant. It runs once, as the row is read.
func ParseStoredWait(cause, text string) WaitCause {
	switch {
	case cause != "" || text == "":
		return WaitCause(cause)
	case strings.HasPrefix(text, WaitHostSlotsPrefix):
		return WaitHostSlots
	case text == WaitNoHostsText:
		return WaitNoHosts
	case strings.HasPrefix(text, "host ") && strings.Contains(text, " unreachable since "):
		return WaitHostUnreachable
	}
	return WaitCannotStart
}
