package engine

import (
	"reflect"
	"testing"

	"github.com/kandev/kandev/core/capability"
)

// Every tool of the registry has exactly one handler, taking the argument
// struct its registry entry names, and every handler is a registry tool's.
// (A map literal with a name twice does not compile.)
func TestToolTableCoversTheRegistry(t *testing.T) {
	seen := map[string]int{}
	for _, tool := range capability.All() {
		seen[tool.Name]++
		h, ok := toolTable[tool.Name]
		if !ok {
			t.Errorf("%s has no handler in toolTable", tool.Name)
			continue
		}
		if want := reflect.TypeOf(tool.NewArgs()); h.args != want {
			t.Errorf("%s: handler takes %s, the registry's arguments are %s", tool.Name, h.args, want)
		}
	}
	for name := range toolTable {
		if seen[name] != 1 {
			t.Errorf("toolTable handles %s, which the registry lists %d times", name, seen[name])
		}
	}
}
