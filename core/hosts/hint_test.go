package hosts

import (
	"strings"
	"testing"
)

// A login ssh refused for the host's key gets the next step: accept or
// add an unknown key, remove a changed one first; other failures none.
func TestLoginHint(t *testing.T) {
	lb := Target{Name: "lb", Dest: Dest{User: "me", Host: "lb.example", Port: 2222}}
	near := Target{Name: "near", Dest: Dest{Host: "near.example"}}
	for _, c := range []struct {
		t         Target
		msg, want string
	}{
		{lb, "Host key verification failed.", "connecting once with ssh -p 2222 me@lb.example, or add it with ssh-keyscan -p 2222 lb.example >> ~/.ssh/known_hosts; then run kandev host check lb again"},
		{near, "Host key verification failed.", "connecting once with ssh near.example, or add it with ssh-keyscan near.example >> ~/.ssh/known_hosts; then run kandev host check near again"},
		{lb, "@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@\nOffending ED25519 key in /root/.ssh/known_hosts:3\nHost key verification failed.",
			"remove the old key with ssh-keygen -R [lb.example]:2222, then connect once with ssh -p 2222 me@lb.example"},
		{near, "ssh: connect to host near.example port 22: Connection refused", ""},
	} {
		got := loginHint(c.t, c.msg)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("loginHint(%s, %q) = %q, want it to hold %q", c.t.Name, c.msg, got, c.want)
		}
	}
}
