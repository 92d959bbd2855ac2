// Command kandev coordinates teams of AI coding agents from the terminal.
package main

import (
	"os"

	"github.com/kandev/kandev/cmd"
	"github.com/kandev/kandev/cmd/kandev/internal/quietinit"
)

func main() {
	quietinit.Restore()
	os.Exit(cmd.Main())
}
