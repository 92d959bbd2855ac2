package cmd_test

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"

	"github.com/kandev/kandev/core/daemon/daemontest"
)

// Every kandev command links the JSON Schema validator that `kandev mcp`
// uses, and Go runs every linked package's init whatever the command.
// Upstream compiles all its draft meta-schemas in init (~21,000
// allocations, ~10 ms); kandev's copy (third_party/jsonschema) defers
// that to the first validation, so `kandev version` must not pay it.
// Allocation counts, unlike times, do not depend on the machine's load.
func TestStartDoesNotCompileMetaSchemas(t *testing.T) {
	bin := daemontest.Binary(t)
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "KANDEV_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kandev version: %v\n%s", err, out)
	}
	re := regexp.MustCompile(`init github\.com/santhosh-tekuri/jsonschema/v6 @\S+ ms, \S+ ms clock, \d+ bytes, (\d+) allocs`)
	m := re.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no init trace of the jsonschema package in:\n%s", out)
	}
	allocs, _ := strconv.Atoi(string(m[1]))
	// The package's remaining init (format and decoder tables) is a few
	// hundred allocations.
	if allocs > 2000 {
		t.Errorf("jsonschema's init made %d allocations at start: its meta-schemas are compiled eagerly again", allocs)
	}
}
