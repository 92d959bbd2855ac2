package core

import "testing"

// A stored wait's cause is the recorded one; a row from before causes
// existed is classified by the engine's texts of then, once, as it is read.
func TestParseStoredWait(t *testing.T) {
	for _, c := range []struct {
		cause, text string
		want        WaitCause
	}{
		{"", "", WaitNone},
		{"host_slots", "anything at all", WaitHostSlots},
		{"cannot_start", "host slots full: a (1/1 agents)", WaitCannotStart},
		{"", "host slots full: a (1/1 agents)", WaitHostSlots},
		{"", WaitNoHostsText, WaitNoHosts},
		{"", "host box unreachable since 2026-01-02T03:04:05Z", WaitHostUnreachable},
		{"", "profile claude cannot start: command claude-code-acp not found in PATH", WaitCannotStart},
		// An agent cannot make a task wait for a slot by what its text says:
		// only kandev records a cause, and a text from before causes is
		// kandev's own.
		{"cannot_start", WaitHostSlotsPrefix + "x", WaitCannotStart},
	} {
		if got := ParseStoredWait(c.cause, c.text); got != c.want {
			t.Errorf("ParseStoredWait(%q, %q) = %q, want %q", c.cause, c.text, got, c.want)
		}
	}
	if !WaitHostSlots.ForHostSlot() || !WaitNoHosts.ForHostSlot() || WaitCannotStart.ForHostSlot() ||
		WaitHostUnreachable.ForHostSlot() || WaitDelivery.ForHostSlot() || WaitNone.ForHostSlot() {
		t.Error("ForHostSlot: only a full host or no host waits for a slot")
	}
}
